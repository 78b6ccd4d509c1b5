package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lmittmann/tint"
)

// A terminal's log lines fit its width, and nothing is lost: a record
// that would be longer puts its longest values on lines of their own under
// it, wrapped; a record that fits is one line, as it was.
func TestLogLinesFitTheTerminal(t *testing.T) {
	hint := "another program has 127.0.0.1:64890: a second beamconnect on this config, BeamNG's Simulink S-function or FMU, or a second vehicle on the same port? (on Linux: ss -ulpn 'sport = :64890'; on Windows: netstat -ano -p udp)"
	bind := func(l *slog.Logger) {
		l.Error("cannot bind the local address; retrying", "addr", "127.0.0.1:64890",
			"err", errors.New("listen udp 127.0.0.1:64890: bind: address already in use"), "retry_in", "250ms", "hint", hint)
	}
	fault := func(l *slog.Logger) {
		l.Error("model fault: BeamNG gets neutral controls (pedals released, wheel torques 0) until the model recovers",
			"fault", "the FMU's step has not returned after 25ms, longer than the model timeout 25ms")
	}
	for _, tt := range []struct {
		name  string
		width int
		log   func(l *slog.Logger)
		words []string // every value's words: none lost
		below []string // the values on lines of their own
	}{
		{"a bind error, 80 columns", 80, bind, []string{"127.0.0.1:64890", "address already in use", "250ms", "netstat -ano -p udp)"}, []string{"    err: ", "    hint: "}},
		{"a bind error, 160 columns", 160, bind, []string{"address already in use", "netstat -ano -p udp)"}, []string{"    hint: "}},
		{"a long message, 100 columns", 100, fault, []string{"longer than the model timeout 25ms"}, []string{"    fault: "}},
		{"a short line", 80, func(l *slog.Logger) { l.Info("connection status", "status", 3, "is", "connected") }, []string{"is=connected"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			tt.log(slog.New(newWrapHandler(&b, tt.width, &tint.Options{NoColor: true})))
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			for i, line := range lines {
				// A message longer than the terminal has its line alone.
				if n := utf8.RuneCountInString(line); n > tt.width && !(i == 0 && strings.HasSuffix(line, "recovers")) {
					t.Errorf("%d characters on a terminal of %d: %q", n, tt.width, line)
				}
			}
			all := strings.Join(strings.Fields(b.String()), " ")
			for _, w := range tt.words {
				if !strings.Contains(all, w) {
					t.Errorf("%q is lost:\n%s", w, b.String())
				}
			}
			for _, w := range tt.below {
				if !strings.Contains(b.String(), "\n"+w) {
					t.Errorf("no line %q…:\n%s", w, b.String())
				}
			}
			if len(tt.below) == 0 && len(lines) != 1 {
				t.Errorf("a record that fits is one line:\n%s", b.String())
			}
		})
	}
}
