package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"beamconnect/internal/logqueue"

	"github.com/lmittmann/tint"
	"github.com/spf13/pflag"

	"beamconnect/internal/suggest"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // the command ran and the answer is no (an invalid config)
	exitUsage  = 2 // the command line itself is wrong
	// exitControl is run's with --fail-on control (or beamng.failOn): no
	// fault, but a control verdict other than good. 3 is an FMU that
	// called exit() in process.
	exitControl = 4
	envPrefix   = "BEAMCONNECT_"
	programName = "beamconnect"
)

// logFlushWait bounds how long a command's exit waits for its log to be
// written: a stderr whose reader has stopped reading must not hold it.
const logFlushWait = time.Second

// env is the process environment, injected so tests control it.
type env struct {
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	// stderrIsTTY decides whether log output may be coloured.
	stderrIsTTY bool
	// interrupt, once closed, ends a run as Ctrl-C does. The program
	// leaves it nil; tests that run commands in process set it, where a
	// signal would reach every run of the test binary at once.
	interrupt <-chan struct{}
}

// command is one subcommand.
type command struct {
	name    string
	args    string // synopsis of the positional arguments
	summary string
	help    string // paragraphs after the synopsis
	flags   func(fs *pflag.FlagSet) func(c *call) int
	// internal commands are for beamconnect itself (fmu-host) and are not
	// listed.
	internal bool
}

// call is one invocation of a command: parsed flags, arguments, output.
type call struct {
	env  // stderr here is the log queue's writer: writes never block for long
	args []string
	log  *slog.Logger
	// logs is the queue in front of stderr; its Dropped and Failed count
	// the log output lost to a reader that did not keep up or was gone.
	logs *logqueue.Queue
	json bool
}

// fail reports an error that stops the command as one plain line on
// stderr (the log is for events, and quotes its values) and returns
// exitFailed.
func (c *call) fail(cmd string, err error) int {
	fmt.Fprintf(c.stderr, "%s %s: %v\n", programName, cmd, err)
	return exitFailed
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// run is the whole program: main only wires it to the process.
func run(args []string, e env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				return runCommand(c, []string{"--help"}, e)
			}
			fmt.Fprintf(e.stderr, "%s: no command %q%s\n", programName, args[1], didYouMean(args[1], commandNames()))
			return exitUsage
		}
		usage(e.stdout)
		return exitOK
	case "-v", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(e.stderr, "%s: unknown command %q%s\n\n", programName, args[0], didYouMean(args[0], commandNames()))
		usage(e.stderr)
		return exitUsage
	}
	return runCommand(c, args[1:], e)
}

func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// didYouMean is ` (did you mean "x"?)` for the candidate closest to word,
// or "" when none is close enough to be a typo of it.
func didYouMean(word string, candidates []string) string {
	if s := suggest.Closest(word, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// flagHint names the flag closest to an unknown one in a parse error, as
// " (did you mean --fields?)", or "".
func flagHint(fs *pflag.FlagSet, err error) string {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if s := suggest.Closest(name, names); s != "" {
		return fmt.Sprintf(" (did you mean --%s?)", s)
	}
	return ""
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "%s couples a controller or model to BeamNG.tech's tight-coupling UDP interface,\n", programName)
	fmt.Fprintf(w, "configured with VS Connect S-function JSON.\n\nUsage:\n  %s COMMAND [flags] [arguments]\n\nCommands:\n", programName)
	for _, c := range commands {
		if !c.internal {
			fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintf(w, "\nRun '%s COMMAND --help' for a command's flags. Every flag can also be set with\n", programName)
	fmt.Fprintf(w, "an environment variable %s<FLAG>, e.g. %sJSON=1; the command line wins.\n", envPrefix, envPrefix)
}

func runCommand(c *command, args []string, e env) int {
	fs := pflag.NewFlagSet(programName+" "+c.name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard) // errors are printed below, once
	body := c.flags(fs)
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	noColor := fs.Bool("no-color", false, "never colour log output (also off when stderr is not a terminal or NO_COLOR is set)")
	fs.Usage = func() {} // printed below, once, for --help only
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		commandUsage(e.stdout, c, fs)
		return exitOK
	}
	if err == nil {
		err = applyEnv(fs, e.lookupEnv)
	}
	var level slog.Level
	if err == nil {
		if lerr := level.UnmarshalText([]byte(*logLevel)); lerr != nil {
			err = fmt.Errorf("--log-level %q: expected debug, info, warn or error", *logLevel)
		}
	}
	if err != nil {
		msg := fmt.Sprintf("%v%s", err, flagHint(fs, err))
		fmt.Fprintf(e.stderr, "%s %s: %s\nRun '%s %s --help' for usage.\n", programName, c.name, msg, programName, c.name)
		if wantsJSON(fs, args) {
			writeJSON(e.stdout, jsonFailure{Error: "usage: " + msg, Exit: exitUsage})
		}
		return exitUsage
	}
	// Everything the command writes to stderr from here on, log records
	// and plain lines alike, goes through one bounded queue written by its
	// own goroutine: a log call never blocks the coupling on a slow, stuck
	// or broken stderr (what does not fit is dropped and counted).
	topts := &tint.Options{Level: level, NoColor: !colour(*noColor, e)}
	var handler slog.Handler = tint.NewTextHandler(e.stderr, topts)
	if e.stderrIsTTY {
		// A terminal's log lines fit its width: long values go on lines
		// of their own under the record's.
		handler = newWrapHandler(e.stderr, max(terminalWidth(&call{env: e}), 60), topts)
	}
	logs := logqueue.New(handler, e.stderr, logqueue.Options{})
	defer logs.Close(logFlushWait)
	cl := &call{env: e, args: fs.Args(), log: slog.New(logs.Handler()), logs: logs}
	cl.json = wantsJSON(fs, nil)
	if !cl.json {
		cl.stderr = logs.Writer()
		return body(cl)
	}
	// --json: whatever goes wrong, stdout holds JSON. A command that fails
	// without writing its own gets {"error": …} with the lines it wrote to
	// stderr (its log records are not among them).
	out := &countingWriter{w: e.stdout}
	said := &lastLines{}
	cl.stdout, cl.stderr = out, io.MultiWriter(logs.Writer(), said)
	code := body(cl)
	if code != exitOK && out.n == 0 {
		f := jsonFailure{Error: said.error(), Exit: code}
		if lines := said.lines(); len(lines) > 1 {
			f.Lines = lines
		}
		writeJSON(e.stdout, f)
	}
	return code
}

// wantsJSON says whether the command was asked for JSON: by its --json
// flag, or, when the flags could not be parsed, by a --json among args.
func wantsJSON(fs *pflag.FlagSet, args []string) bool {
	if f := fs.Lookup("json"); f == nil {
		return false
	} else if f.Value.String() == "true" {
		return true
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" || a == "--json=1" {
			return true
		}
	}
	return false
}

// jsonFailure is a --json command's answer when it fails without one of
// its own.
type jsonFailure struct {
	Error string   `json:"error"`
	Lines []string `json:"lines,omitempty"` // everything it said, when more than the error
	Exit  int      `json:"exit"`
}

// countingWriter counts what goes to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// lastLines keeps what a command writes to stderr besides its log (a
// failure, a usage error, a config's diagnostics), up to 64 KiB.
type lastLines struct {
	mu  sync.Mutex
	buf []byte
}

func (l *lastLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) < 64<<10 {
		l.buf = append(l.buf, p[:min(len(p), 64<<10-len(l.buf))]...)
	}
	return len(p), nil
}

func (l *lastLines) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(l.buf)), "\n") {
		if line != "" && !strings.HasPrefix(line, "Run '") {
			out = append(out, line)
		}
	}
	return out
}

// error is the first line said, without the "beamconnect CMD: " before it.
func (l *lastLines) error() string {
	lines := l.lines()
	if len(lines) == 0 {
		return "failed (see stderr)"
	}
	return commandPrefix.ReplaceAllString(lines[0], "")
}

// commandPrefix is how a command starts its plain error lines:
// "beamconnect fmu inspect: ".
var commandPrefix = regexp.MustCompile(`^` + programName + ` [a-z][a-z -]*: `)

func commandUsage(w io.Writer, c *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s %s [flags] %s\n\n%s\n", programName, c.name, c.args, c.summary)
	if c.help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.help))
	}
	fmt.Fprintf(w, "\nFlags (each also read from %s<FLAG> when not given):\n%s", envPrefix, fs.FlagUsages())
}

// applyEnv fills every flag not given on the command line from the
// environment: --log-level from BEAMCONNECT_LOG_LEVEL, and so on. pflag has
// no such fallback itself.
func applyEnv(fs *pflag.FlagSet, lookupEnv func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		key := envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := lookupEnv(key); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %v", key, v, serr)
			}
		}
	})
	return err
}

// colour decides whether log output is coloured: only on a terminal, and
// not when --no-color is given or NO_COLOR is set to anything non-empty
// (no-color.org).
func colour(noColorFlag bool, e env) bool {
	v, _ := e.lookupEnv("NO_COLOR")
	return e.stderrIsTTY && !noColorFlag && v == ""
}

// isTerminal reports whether f is a terminal that shows colours: a
// character device, without a dependency beyond the four the project
// allows, and on Windows a console that takes escape sequences
// (takesColour).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && takesColour(f)
}
