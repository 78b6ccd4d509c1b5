package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A page's command, as the page shows it.
type command struct {
	page, text string
	line       int
	args       []string // the words, "beamconnect" first
	background bool     // ends in &: runs until the page's other commands are done
	output     []string // the output the page shows after a "$ " line, if any
	exit       int      // the exit status the page expects
	interrupt  bool     // runs until interrupted: Ctrl-C after a second
	skip       string   // why the page says not to run it
}

// markerRE is a test marker before a fenced block.
var markerRE = regexp.MustCompile(`^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$`)

// pages are the Markdown files the tests read: README.md and docs/*.md.
func pages(t *testing.T) []string {
	t.Helper()
	list, err := filepath.Glob("*.md")
	if err != nil || len(list) < 5 {
		t.Fatalf("docs pages: %v (%d)", err, len(list))
	}
	return append([]string{"../README.md"}, list...)
}

// commands reads the beamconnect commands of a page's fenced blocks.
func commands(t *testing.T, page string) []command {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out     []command
		marker  string
		inBlock bool
		cont    string // a line continued with a backslash
		last    *command
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if m := markerRE.FindStringSubmatch(line); m != nil && !inBlock {
			marker = m[1]
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			if inBlock {
				marker, last = "", nil
			}
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			cont += strings.TrimSuffix(trimmed, `\`) + " "
			continue
		}
		trimmed, cont = cont+trimmed, ""
		shown := strings.HasPrefix(trimmed, "$ ")
		text := strings.TrimPrefix(trimmed, "$ ")
		if !strings.HasPrefix(text, "beamconnect ") && !strings.HasPrefix(text, "go run ./cmd/beamconnect ") {
			if last != nil && trimmed != "" {
				last.output = append(last.output, line)
			}
			continue
		}
		c := command{page: page, line: n, text: text}
		if err := c.parse(marker); err != nil {
			t.Errorf("%s:%d: %v", page, n, err)
			continue
		}
		out = append(out, c)
		last = nil
		if shown {
			last = &out[len(out)-1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// parse splits the command's words as a shell would (quotes, a trailing
// comment, a trailing &) and applies the block's marker.
func (c *command) parse(marker string) error {
	words, background, err := shellWords(c.text)
	if err != nil {
		return err
	}
	if words[0] == "go" {
		words = append([]string{"beamconnect"}, words[3:]...) // go run ./cmd/beamconnect
	}
	c.args, c.background = words, background
	switch {
	case marker == "":
	case strings.HasPrefix(marker, "skip:"):
		c.skip = strings.TrimSpace(strings.TrimPrefix(marker, "skip:"))
	case strings.HasPrefix(marker, "exit "):
		n, err := strconv.Atoi(strings.TrimPrefix(marker, "exit "))
		if err != nil {
			return fmt.Errorf("marker %q: expected exit N", marker)
		}
		c.exit = n
	case marker == "interrupt":
		c.interrupt = true
	default:
		return fmt.Errorf("marker %q: expected skip: why, exit N or interrupt", marker)
	}
	return nil
}

// shellWords splits a command line into words: single and double quotes
// group, an unquoted # starts a comment, a last word & runs it in the
// background.
func shellWords(s string) (words []string, background bool, err error) {
	var w strings.Builder
	in, quote := false, rune(0)
	flush := func() {
		if in {
			words = append(words, w.String())
			w.Reset()
			in = false
		}
	}
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '#' && !in:
			flush()
			return finish(words)
		case r == ' ' || r == '\t':
			flush()
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, false, fmt.Errorf("unclosed quote in %q", s)
	}
	flush()
	return finish(words)
}

func finish(words []string) ([]string, bool, error) {
	if n := len(words); n > 0 && words[n-1] == "&" {
		return words[:n-1], true, nil
	}
	return words, false, nil
}

// Shell words as the pages write them.
func TestShellWords(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want []string
		bg   bool
	}{
		{"comment", `beamconnect run examples/x.json --emulate   # the main job`, []string{"beamconnect", "run", "examples/x.json", "--emulate"}, false},
		{"background", `beamconnect run x.json --duration 10s &      # first`, []string{"beamconnect", "run", "x.json", "--duration", "10s"}, true},
		{"quotes", `beamconnect bench --responder "c=/tmp/r {listen} {beamng}" --responder 'c spin=x'`, []string{"beamconnect", "bench", "--responder", "c=/tmp/r {listen} {beamng}", "--responder", "c spin=x"}, false},
		{"comma", `beamconnect plot run.csv --fields a,b`, []string{"beamconnect", "plot", "run.csv", "--fields", "a,b"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, bg, err := shellWords(tt.in)
			if err != nil || bg != tt.bg || strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("%s: %q %v %v", tt.in, got, bg, err)
			}
		})
	}
	if _, _, err := shellWords(`beamconnect run 'x`); err == nil {
		t.Error("an unclosed quote is not an error")
	}
}

// A page's command as it runs here: a run on the emulator for a second of
// BeamNG's time, whatever the machine; emulate's (simulated) and bench's
// durations cut to a second; a background run left to be stopped.
func TestArgs(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    command
		want string
	}{
		{"a run on the emulator", command{args: []string{"beamconnect", "run", "x.json", "--emulate", "--duration", "20s"}}, "run x.json --emulate --sim-duration 1s"},
		{"a short run", command{args: []string{"beamconnect", "run", "x.json", "--emulate", "--duration", "500ms"}}, "run x.json --emulate --sim-duration 500ms"},
		{"emulate", command{args: []string{"beamconnect", "emulate", "--config", "x.json", "--duration", "5s"}}, "emulate --config x.json --duration 1s"},
		{"bench", command{args: []string{"beamconnect", "bench", "--duration", "3s"}}, "bench --duration 1s"},
		{"in the background", command{args: []string{"beamconnect", "run", "x.json", "--duration", "10s"}, background: true}, "run x.json --duration 10s"},
		{"a page", command{args: []string{"beamconnect", "run", "x.json", "--emulate", "--http", "127.0.0.1:8080"}}, "run x.json --emulate --http 127.0.0.1:0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(args(tt.c, t.TempDir()), " "); got != tt.want {
				t.Errorf("%q runs as %q, want %q", tt.c.args, got, tt.want)
			}
		})
	}
}
