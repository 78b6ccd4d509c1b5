package logqueue

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The status line stays below the log: it is cleared before every record
// and raw write and drawn again after, so a log line never starts where
// the status line ends ("0 msg/sNov 25 …"), and "" takes it away.
func TestStatusLineBelowTheLog(t *testing.T) {
	g := newGate()
	close(g.open)
	q := New(slog.NewTextHandler(g, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}), g, Options{})
	log := slog.New(q.Handler())
	w := q.Writer()
	q.SetStatus("3 connected | 0 msg/s")
	q.Flush(time.Second)
	log.Info("reload applied")
	w.Write([]byte("a plain line\n"))
	q.Flush(time.Second)
	q.SetStatus("3 connected | 200 msg/s")
	q.Flush(time.Second)
	q.SetStatus("")
	q.Close(time.Second)
	const clear = "\r\033[K"
	want := clear + "3 connected | 0 msg/s" + clear + "level=INFO msg=\"reload applied\"\n" + "a plain line\n" +
		clear + "3 connected | 0 msg/s" + clear + "3 connected | 200 msg/s" + clear
	if got := g.String(); got != want {
		t.Errorf("the terminal got\n%q\nwant\n%q", got, want)
	}
	// Read as a terminal shows it: no line holds a status and a log line.
	for _, line := range strings.Split(g.String(), "\n") {
		shown := line[strings.LastIndex(line, clear)+len(clear)-1:]
		if strings.Contains(shown, "msg/s") && strings.Contains(shown, "msg=") {
			t.Errorf("a line shows the status and a log record: %q", shown)
		}
	}
}
