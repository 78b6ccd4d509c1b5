package docs

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"beamconnect/internal/logtest"
	"beamconnect/internal/testprog"
	"beamconnect/internal/wine"
)

// maxDuration is how long a page's run, emulate or bench may take here:
// longer --duration values are cut to it. A run on the emulator runs for
// BeamNG's time instead (--sim-duration), so that what the page says of
// its end (its exit status) is the same on a quiet or a loaded machine.
const maxDuration = "1s"

// beamconnect is built once for the test run.
var beamconnect = testprog.Program{Package: "../cmd/beamconnect"}

func binary(t *testing.T) string { return beamconnect.Path(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	beamconnect.Remove()
	os.Exit(code)
}

// workdir is a scratch folder that sees the repository's folders (as
// links, or copies), so a page's relative paths work and what its commands write
// stays out of the repository.
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			from, to := filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())
			if os.Symlink(from, to) == nil {
				if _, err := os.Lstat(to); err == nil {
					continue
				}
			}
			// Where no link can be made (Windows without the privilege;
			// Wine, which says it made one and did not), a copy: the
			// repository's folders are a few MB.
			if err := os.CopyFS(to, os.DirFS(from)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// Every beamconnect command the README and the docs pages show runs and
// exits as the page says: 0 unless the page marks it otherwise, with the
// output the page shows where it shows one. Runs are cut to a second and
// --http serves on a free port; blocks marked as needing BeamNG or as long
// benchmarks are skipped, and counted.
func TestPageCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pages' commands")
	}
	bin := binary(t)
	ran, skipped := 0, 0
	for _, page := range pages(t) {
		cmds := commands(t, page)
		if len(cmds) == 0 {
			continue
		}
		t.Run(filepath.Base(page), func(t *testing.T) {
			dir := workdir(t)
			var bg []*proc
			defer func() {
				for _, p := range bg {
					p.stop(10 * time.Second)
				}
			}()
			for _, c := range cmds {
				if c.skip != "" {
					skipped++
					t.Logf("%s:%d: skipped (%s): %s", c.page, c.line, c.skip, c.text)
					continue
				}
				ran++
				if p := run(t, bin, dir, c); p != nil {
					bg = append(bg, p)
				}
			}
		})
	}
	t.Logf("%d commands run, %d skipped as their pages mark them", ran, skipped)
	if ran < 20 {
		t.Errorf("only %d commands run: are the pages' blocks still read?", ran)
	}
}

// args are the command's words as they run here: the binary built, long
// durations cut (a run on the emulator's for BeamNG's time), --http on a
// free port, globs expanded.
func args(c command, dir string) []string {
	emulated := len(c.args) > 1 && c.args[1] == "run" && slices.Contains(c.args, "--emulate")
	out := []string{}
	for i := 1; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case a == "--duration" && i+1 < len(c.args) && !c.background:
			// (a background command runs until the page's others are
			// done, and is stopped then)
			if emulated {
				a = "--sim-duration"
			}
			out = append(out, a, shorter(c.args[i+1]))
			i++
			continue
		case a == "--http" && i+1 < len(c.args):
			out = append(out, a, "127.0.0.1:0")
			i++
			continue
		case strings.ContainsAny(a, "*?["):
			if m, _ := filepath.Glob(filepath.Join(dir, a)); len(m) > 0 {
				for _, f := range m {
					rel, _ := filepath.Rel(dir, f)
					out = append(out, rel)
				}
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// shorter is d, or maxDuration when d is longer.
func shorter(d string) string {
	v, err := time.ParseDuration(d)
	limit, _ := time.ParseDuration(maxDuration)
	if err != nil || v <= limit {
		return d
	}
	return maxDuration
}

// proc is a started command and its end.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func start(cmd *exec.Cmd) (*proc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd, make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// ended says whether the command has ended.
func (p *proc) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to d for the command to end; false when it did not.
func (p *proc) wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// stop interrupts the command (Ctrl-C), and kills it when that does not
// end it within d.
func (p *proc) stop(d time.Duration) bool {
	testprog.Interrupt(p.cmd.Process)
	if p.wait(d) {
		return true
	}
	p.cmd.Process.Kill()
	<-p.done
	return false
}

// run runs one command as its page says, and returns it when it goes on
// in the background.
func run(t *testing.T, bin, dir string, c command) *proc {
	t.Helper()
	where := c.page + ":" + strconv.Itoa(c.line) + ": " + c.text
	cmd := exec.Command(bin, args(c, dir)...)
	cmd.Dir = dir
	var out logtest.Buffer
	if c.background {
		stderr, _ := cmd.StderrPipe()
		p, err := start(cmd)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		waitReady(stderr)
		return p
	}
	cmd.Stdout, cmd.Stderr = &out, &out
	p, err := start(cmd)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if c.interrupt {
		// It runs until interrupted: still running once it says it is
		// (then it listens for Ctrl-C: one before ends a program on
		// Windows with 0xC000013A), and ending as the page says on Ctrl-C.
		out.Until(time.Minute, func(s string) bool { return running(s) || p.ended() })
		if p.ended() {
			t.Errorf("%s: ended by itself (exit %d); the page says it runs until Ctrl-C\n%s", where, cmd.ProcessState.ExitCode(), out.String())
			return nil
		}
		if !p.stop(10*time.Second) || cmd.ProcessState.ExitCode() != c.exit {
			t.Errorf("%s: after Ctrl-C: exit %d, want %d\n%s", where, cmd.ProcessState.ExitCode(), c.exit, out.String())
		}
		return nil
	}
	if !p.wait(time.Minute) {
		p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s: still running after a minute", where)
		return nil
	}
	code := cmd.ProcessState.ExitCode()
	if wine.Running() && len(c.args) > 1 && c.args[1] == "timing" && code == exitUnhealthy {
		// timing's verdict on the emulator's logs judges Wine's loopback
		// and wake-ups (wine.Loopback), which keep BeamNG's pace less well
		// than Windows: unhealthy at times, which is its exit status 1.
		t.Logf("%s: exit 1 under Wine: %s", where, firstLine(out.String()))
		code = c.exit
	}
	if code != c.exit {
		t.Errorf("%s: exit %d, want %d\n%s", where, code, c.exit, out.String())
	}
	if c.output != nil {
		want := strings.TrimSpace(strings.Join(trimAll(c.output), "\n"))
		got := strings.TrimSpace(strings.Join(trimAll(strings.Split(out.String(), "\n")), "\n"))
		if got != want {
			t.Errorf("%s: the output is not the page's:\n got:\n%s\nwant:\n%s", where, got, want)
		}
	}
	return nil
}

// exitUnhealthy is timing's exit status for a coupling it finds unhealthy.
const exitUnhealthy = 1

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func trimAll(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

// running says whether a command's output says it runs: it has bound
// its address, waits for BeamNG, or emulates it.
func running(out string) bool {
	for _, s := range []string{"bound=", "waiting for BeamNG", "emulating BeamNG"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// waitReady waits until a background command says it is up (running),
// for at most a minute (a bound only a hang reaches) or until its output
// ends; the rest of its output is drained.
func waitReady(stderr io.Reader) {
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.OnceFunc(func() { close(ready) })
		defer once()
		for sc.Scan() {
			if running(sc.Text()) {
				once()
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(time.Minute):
	}
}
