package docs

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// Every relative link of every page points at a file of the repository,
// and at a heading of it where it names one.
func TestLinks(t *testing.T) {
	for _, page := range pages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %q: no such file", page, target)
				continue
			}
			if anchor != "" && !hasHeading(t, path, anchor) {
				t.Errorf("%s: link %q: %s has no heading %q", page, target, path, anchor)
			}
		}
	}
}

func here(t *testing.T) string {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// hasHeading reports whether a Markdown file has a heading whose anchor
// (as GitHub makes them) is anchor.
func hasHeading(t *testing.T, path, anchor string) bool {
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "#") && slug(strings.TrimLeft(line, "# ")) == anchor {
			return true
		}
	}
	return false
}

// slug is GitHub's anchor for a heading: lower case, spaces to hyphens,
// punctuation dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Gen 2's traps": "gen-2s-traps",
		"4b. Gen 2: start BeamNG's side from the Co-Simulation Signal Editor": "4b-gen-2-start-beamngs-side-from-the-co-simulation-signal-editor",
		"Low latency: busy polling":    "low-latency-busy-polling",
		"The 2 s timeout and lockstep": "the-2-s-timeout-and-lockstep",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// unfollowable are references a reader of the repository cannot follow:
// documents that live outside it.
var unfollowable = regexp.MustCompile(`(?i)seed ?0\d\d|seed0\d\d|§|spec §|\bthe memo\b|\bmemo's\b|shared/|design\.md|go-notes`)

func TestUnfollowablePattern(t *testing.T) {
	for _, s := range []string{"seed 001's figures", "Seed001", "§3.4", "spec §4a", "as in the memo", "the memo's example", "`shared/`", "design.md", "go-notes §3"} {
		if !unfollowable.MatchString(s) {
			t.Errorf("%q is not caught", s)
		}
	}
	for _, s := range []string{"memory growth", "seed=N seed of the random choices", "specify", "the S-function's memory block"} {
		if unfollowable.MatchString(s) {
			t.Errorf("%q is caught", s)
		}
	}
}

// No page, help text or schema description cites what the repository does
// not hold: what users need of BeamNG's protocol is in docs/protocol.md.
func TestNoUnfollowableReferences(t *testing.T) {
	var texts = map[string]string{}
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		texts[page] = string(b)
	}
	schema, err := os.ReadFile("../schemas/config.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	texts["schemas/config.schema.json"] = string(schema)
	if !testing.Short() {
		bin := binary(t)
		usage, _ := exec.Command(bin, "help").Output()
		texts["beamconnect help"] = string(usage)
		for _, line := range strings.Split(string(usage), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || !strings.HasPrefix(line, "  ") {
				continue
			}
			help, _ := exec.Command(bin, f[0], "--help").Output()
			texts["beamconnect "+f[0]+" --help"] = string(help)
		}
	}
	for where, text := range texts {
		for i, line := range strings.Split(text, "\n") {
			if m := unfollowable.FindString(line); m != "" {
				t.Errorf("%s:%d: %q cites something outside the repository: %s", where, i+1, m, strings.TrimSpace(line))
			}
		}
	}
	if len(texts) < 10 {
		t.Errorf("only %d texts checked", len(texts))
	}
}

// The BeamNGpy script's dry run prints, per vehicle of the config, the
// start and stop lines compile gives, without BeamNG or BeamNGpy.
func TestBeamNGpyScriptDryRun(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := binary(t)
	plan, err := exec.Command(bin, "compile", "--json", "../examples/follow.json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Vehicles []struct {
			Name         string
			StartCommand string `json:"start_command"`
			StopCommand  string `json:"stop_command"`
		}
	}
	if err := json.Unmarshal(plan, &p); err != nil || len(p.Vehicles) != 2 {
		t.Fatalf("compile --json: %v, %d vehicles", err, len(p.Vehicles))
	}
	out, err := exec.Command(python, "../examples/beamngpy/start_coupling.py", "../examples/follow.json", "--dry-run", "--beamconnect", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, v := range p.Vehicles {
		for _, want := range []string{"vehicle " + v.Name + " (etk800)", "start: " + v.StartCommand, "stop:  " + v.StopCommand} {
			if !strings.Contains(string(out), want) {
				t.Errorf("the dry run does not say %q:\n%s", want, out)
			}
		}
	}
	// A config beamconnect refuses stops the script with beamconnect's error.
	out, err = exec.Command(python, "../examples/beamngpy/start_coupling.py", "../config/testdata/unknown-signal.bad.json", "--dry-run", "--beamconnect", bin).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `"grondspeed" is not a BeamNG signal`) {
		t.Errorf("a bad config: %v\n%s", err, out)
	}
}
