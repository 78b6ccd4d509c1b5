package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The live page answers only to this machine's names: a request for
// another (DNS rebinding: attacker.example made to point at the rig) is
// refused, saying how to allow a name; one for the bound address, for
// localhost or for a name --http-host gives is answered.
func TestLivePageRefusesOtherHosts(t *testing.T) {
	parallelOffWine(t)
	// The page is asked while the run goes on; then it is stopped, as
	// Ctrl-C stops it.
	p := startInProcess(t, "run", pedals, "--emulate", "--http", "127.0.0.1:0", "--http-host", "Rig-PC.lab")
	p.stderr.WaitFor(t, "http://127.0.0.1:")
	page := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(p.stderr.String())
	if page == "" {
		t.Fatalf("run --http never said where its page is:\n%s", &p.stderr)
	}
	port := strings.TrimSuffix(page[strings.LastIndexByte(strings.TrimSuffix(page, "/"), ':')+1:], "/")
	for _, tt := range []struct {
		host string
		code int
		says string
	}{
		{"attacker.example", http.StatusForbidden, "the name attacker.example is none of them (run with --http-host attacker.example to allow it)"},
		{"attacker.example:" + port, http.StatusForbidden, "attacker.example"},
		{"127.0.0.1:" + port, http.StatusOK, `"text"`},
		{"localhost:" + port, http.StatusOK, `"text"`},
		{"[::1]:" + port, http.StatusOK, `"text"`},
		{"rig-pc.lab:" + port, http.StatusOK, `"text"`},
	} {
		t.Run(tt.host, func(t *testing.T) {
			req, _ := http.NewRequest("GET", page+"api/config", nil)
			req.Host = tt.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.code || !strings.Contains(string(b), tt.says) {
				t.Errorf("Host %q: %s, want %d and %q:\n%.300s", tt.host, resp.Status, tt.code, tt.says, b)
			}
		})
	}
	p.stderr.WaitFor(t, "is=connected") // stopped before it connected, a run has failed
	p.stop()
	if code := p.wait(t); code != exitOK {
		t.Errorf("the run: exit %d\n%s", code, &p.stderr)
	}
}
