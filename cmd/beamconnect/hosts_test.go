package main

import (
	"bufio"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The live page answers only to this machine's names: a request for
// another (DNS rebinding: attacker.example made to point at the rig) is
// refused, saying how to allow a name; one for the bound address, for
// localhost or for a name --http-host gives is answered.
func TestLivePageRefusesOtherHosts(t *testing.T) {
	parallelOffWine(t)
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"run", pedals, "--emulate", "--duration", "4s", "--http", "127.0.0.1:0", "--http-host", "Rig-PC.lab"},
			env{stdout: io.Discard, stderr: pw, lookupEnv: func(string) (string, bool) { return "", false }})
		pw.Close()
	}()
	urls := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`http://127\.0\.0\.1:(\d+)/`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := re.FindString(sc.Text()); m != "" && len(urls) == 0 {
				urls <- m
			}
		}
	}()
	var page string
	select {
	case page = <-urls:
	case <-time.After(20 * time.Second):
		t.Fatal("run --http never said where its page is")
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
	if code := <-done; code != exitOK {
		t.Errorf("the run: exit %d", code)
	}
}
