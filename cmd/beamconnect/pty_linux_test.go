//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"beamconnect/internal/logtest"
)

// openPTY opens a pseudo-terminal of cols columns: the master, read as a
// terminal emulator reads it, and the slave, a program's terminal.
func openPTY(t *testing.T, cols int) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	ioctl := func(f *os.File, req uintptr, arg unsafe.Pointer) error {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); errno != 0 {
			return errno
		}
		return nil
	}
	unlock := int32(0)
	var n uint32
	if err := ioctl(m, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatal(err)
	}
	if err := ioctl(m, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	ws := struct{ row, col, x, y uint16 }{40, uint16(cols), 0, 0}
	if err := ioctl(s, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// terminal is what a terminal of some columns shows of a program's output:
// it understands what beamconnect writes (carriage return, erase to the end
// of the line, newline) and wraps long lines as a terminal does. It keeps
// every line that scrolled by, and each status line drawn.
type terminal struct {
	cols     int
	mu       sync.Mutex
	lines    []string // finished lines
	cur      []rune
	col      int
	statuses []string       // each line erased and redrawn without a newline
	raw      logtest.Buffer // what was written, to wait on (await)
}

func (tm *terminal) Write(p []byte) (int, error) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.raw.Write(p)
	s := string(p)
	for len(s) > 0 {
		switch {
		case strings.HasPrefix(s, "\033[K"):
			if tm.col == 0 && len(tm.cur) > 0 {
				tm.statuses = append(tm.statuses, string(tm.cur)) // a status line taken away
			}
			tm.cur = tm.cur[:min(tm.col, len(tm.cur))]
			s = s[3:]
			continue
		case s[0] == '\r':
			tm.col = 0
		case s[0] == '\n':
			tm.lines = append(tm.lines, string(tm.cur))
			tm.cur, tm.col = tm.cur[:0:0], 0
		default:
			r, size := utf8.DecodeRuneInString(s)
			if tm.col == tm.cols { // the terminal wraps
				tm.lines = append(tm.lines, string(tm.cur))
				tm.cur, tm.col = tm.cur[:0:0], 0
			}
			if tm.col < len(tm.cur) {
				tm.cur[tm.col] = r
			} else {
				tm.cur = append(tm.cur, r)
			}
			tm.col++
			s = s[size:]
			continue
		}
		s = s[1:]
	}
	return len(p), nil
}

// screen is every line shown, the line being written last.
func (tm *terminal) screen() []string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return append(append([]string(nil), tm.lines...), string(tm.cur))
}

// await waits until ok says the terminal shows what is waited for, looking
// again at each write, up to a minute (a bound only a hang reaches), and
// reports whether it did. (ok reads the screen, which the write that woke
// it has drawn by then: it waits for the terminal's lock.)
func (tm *terminal) await(ok func() bool) bool {
	return tm.raw.Until(time.Minute, func(string) bool { return ok() })
}

func (tm *terminal) statusLines() []string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return append([]string(nil), tm.statuses...)
}

// runInPTY runs beamconnect in dir with its stdout and stderr on a
// terminal of cols columns, during running alongside (stop stops the run
// as Ctrl-C does), and returns the terminal and the exit status.
func runInPTY(t *testing.T, cols int, dir string, during func(tm *terminal, stop func()), args ...string) (*terminal, int) {
	t.Helper()
	m, s := openPTY(t, cols)
	cmd := osexec.Command(binary(t), args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr, cmd.Stdin = s, s, s
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "COLUMNS=")
	tm := &terminal{cols: cols}
	copied := make(chan struct{})
	go func() { io.Copy(tm, m); close(copied) }()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Close() // the child has it; the master reads EOF (EIO) once it exits
	stop := make(chan struct{})
	if during != nil {
		go func() { during(tm, func() { cmd.Process.Signal(os.Interrupt) }); close(stop) }()
	} else {
		close(stop)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still running after 90 s:\n%s", strings.Join(tm.screen(), "\n"))
	}
	<-stop
	select {
	case <-copied: // every line the run wrote is on the screen
	case <-time.After(time.Minute):
		t.Fatalf("the terminal still open a minute after the run ended:\n%s", strings.Join(tm.screen(), "\n"))
	}
	return tm, cmd.ProcessState.ExitCode()
}

// isLogLine says whether a terminal line is (or starts with) a log record.
func isLogLine(l string) bool {
	for _, lvl := range []string{" INF ", " WRN ", " ERR ", " DBG "} {
		if strings.Contains(l, lvl) {
			return true
		}
	}
	return false
}

// In 80 columns: log lines never share a line with the status line (it is
// cleared before them and drawn again after), a reload of a parameter
// logs one short line, the summary comes after the last log line, and
// every line of the log, the summary and the status line fits; the status
// line says the simulated time and what the time sync does in words.
func TestTerminalOf80Columns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rig.json")
	orig, err := os.ReadFile("../../examples/cruise-pedals.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfg, orig, 0o644)
	tm, code := runInPTY(t, 80, dir, func(tm *terminal, stop func()) {
		// Once the status line shows, edit a parameter; once the reload
		// is said and the status line drawn again, stop the run. (Its
		// --duration is a bound, should the test end first.)
		tm.await(func() bool { return len(tm.statusLines()) >= 4 })
		os.WriteFile(cfg, bytes.Replace(orig, []byte(`"setSpeed": 20`), []byte(`"setSpeed": 22`), 1), 0o644)
		var drawn int
		tm.await(func() bool {
			if drawn == 0 && strings.Contains(strings.Join(tm.screen(), "\n"), "setSpeed 20 → 22") {
				drawn = len(tm.statusLines())
			}
			return drawn > 0 && len(tm.statusLines()) >= drawn+2
		})
		stop()
	}, "run", "rig.json", "--emulate", "--duration", "5m")
	screen := tm.screen()
	shown := strings.Join(screen, "\n")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, shown)
	}
	if len(tm.statusLines()) < 4 {
		t.Fatalf("no status line drawn:\n%q", tm.raw.String())
	}
	// The status line says how the loop does.
	if !slices.ContainsFunc(tm.statusLines(), func(s string) bool {
		return strings.Contains(s, "| groundspeed settling, err ") || strings.Contains(s, "| groundspeed good, err ")
	}) {
		t.Errorf("no status line says how the speed loop does: %q", tm.statusLines())
	}
	if !slices.ContainsFunc(tm.statusLines(), func(s string) bool { return strings.Contains(s, "| simulated ") }) {
		t.Errorf("no status line says the simulated time: %q", tm.statusLines())
	}
	for _, s := range tm.statusLines() {
		if strings.Contains(s, "(none)") {
			t.Errorf("a status line with a bare (none): %q", s)
		}
		if utf8.RuneCountInString(s) >= 80 {
			t.Errorf("a status line of %d columns: %q", utf8.RuneCountInString(s), s)
		}
		if isLogLine(s) {
			t.Errorf("a log record on the status line: %q", s)
		}
	}
	summary := -1
	for i, l := range screen {
		if strings.Contains(l, "msg/s") {
			t.Errorf("line %d shows a status line that was never cleared: %q", i+1, l)
		}
		if strings.HasPrefix(l, "beamconnect run: ") {
			summary = i
		}
		if summary >= 0 && isLogLine(l) {
			t.Errorf("a log line after the summary began (line %d): %q\n%s", i+1, l, shown)
		}
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("line %d is %d columns: %q", i+1, utf8.RuneCountInString(l), l)
		}
	}
	if os.Getenv("BEAMCONNECT_SHOW_TERMINAL") != "" {
		t.Logf("the terminal:\n%s", shown)
	}
	if summary < 0 || !strings.Contains(shown, "healthy: BeamNG coupled in lockstep") {
		t.Fatalf("no summary:\n%s", shown)
	}
	var reload []string
	for _, l := range screen {
		if isLogLine(l) && strings.Contains(l, "setSpeed") {
			reload = append(reload, l)
		}
	}
	if len(reload) != 1 || !strings.Contains(reload[0], "beamng.modelParams.setSpeed 20 → 22") || len(reload[0]) > 80 {
		t.Errorf("the reload's lines that name setSpeed: %q; want one short line of the change", reload)
	}
}

// A diagnosis that holds is what the status line says, instead of a status
// that flips between connected and connecting every 2 s; the summary's
// faults begin with it, its fix included.
func TestTerminalSaysTheDiagnosis(t *testing.T) {
	t.Parallel()
	// Once the status line has said the diagnosis a few times, the run is
	// stopped. (Its --duration is a bound, should the test end first.)
	tm, code := runInPTY(t, 80, "../..", func(tm *terminal, stop func()) {
		tm.await(func() bool {
			ss := tm.statusLines()
			return len(ss) >= 3 && strings.HasPrefix(ss[len(ss)-3], "REPLIES DO NOT REACH BeamNG")
		})
		stop()
	}, "run", "examples/cruise-pedals.json", "--emulate", "--duration", "5m", "--fault", "drop-replies=1")
	shown := strings.Join(tm.screen(), "\n")
	if code != exitFailed {
		t.Fatalf("exit %d:\n%s", code, shown)
	}
	said := -1
	statuses := tm.statusLines()
	for i, s := range statuses {
		if strings.HasPrefix(s, "REPLIES DO NOT REACH BeamNG") {
			if said < 0 {
				said = i
			}
			continue
		}
		if said >= 0 {
			t.Errorf("after the diagnosis the status line said %q", s)
		}
	}
	if said < 0 || said == len(statuses)-1 {
		t.Fatalf("the status line never said the diagnosis for long: %q", statuses)
	}
	i := strings.Index(shown, "FAULTS (exit status 1):")
	if flat := strings.Join(strings.Fields(shown[max(i, 0):]), " "); i < 0 || !strings.HasPrefix(flat, "FAULTS (exit status 1): - diagnosed: BeamNG waits 2 s for a reply after every message although each one is answered: the replies go where BeamNG is not listening: set remoteIP and remotePort") {
		t.Errorf("the faults do not begin with the diagnosis:\n%s", shown)
	}
}
