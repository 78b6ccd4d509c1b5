// Package exectest is an exec model's program for tests, the same on every
// OS (no shell): the test binary itself, started with the argument
// "exectest" and a script of steps. A test's TestMain calls Main first.
//
// Each step is VERB, VERB=ARG or VERB:COUNT=ARG (COUNT a number, or * for
// as long as requests come):
//
//	header             read the header line
//	header=A*B         read it, and exit 1 unless it starts with A and ends with B
//	read               read a request and leave it unanswered
//	answer=LINE        read a request and answer LINE ($t: the request's time as written; $N: its N-th
//	                   field, $1 its time; $n: the requests answered before it since the start or "# reset")
//	say=LINE           write LINE without reading
//	blob=N             write a line of N digits
//	delay=D            wait D (a Go duration) before each answer from now on
//	jitter=D           wait a pseudo-random 0 to D before each answer from now on (the same every run)
//	twice=N:D          from now on write every N-th answer twice, the copy D (a Go duration) later
//	sleep=D            wait D
//	first=FILE         if FILE exists, go on at the step "second"; else make it
//	second             where a program started again goes on (see first)
//	spawn=FILE         start a child that runs until killed; append its pid to FILE
//	exit=N             exit with status N
//
// Lines beamconnect writes that start with '#' are not requests: a step
// that reads a request skips them ("# reset" sets $n back to 0; only
// header reads the header). The program exits 0 after the last step, or
// when its input ends.
package exectest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Command is the exec model's command running the script: for the
// modelParams' "command".
func Command(steps ...string) []string {
	return append([]string{os.Args[0], "exectest"}, steps...)
}

// Main runs the script when the test binary was started as Command's
// program, and exits; otherwise it returns at once.
func Main() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case "exectest":
		if err := run(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "exectest:", err)
			exit(1)
		}
		exit(0)
	case "exectest-child":
		time.Sleep(time.Hour) // until killed
		exit(0)
	}
}

// exit ends the program at once, as a small program does: os.Exit in a
// test binary built with -race first runs the race detector's checks,
// which take long enough for the model to see a silent program rather
// than one that ended.
func exit(code int) { syscall.Exit(code) }

func run(steps []string) error {
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	out := bufio.NewWriter(os.Stdout)
	var delay, jitter, copyAfter time.Duration
	answers, since, twice := uint64(0), 0, uint64(0)
	readLine := func() (string, bool) {
		line, err := in.ReadString('\n')
		return strings.TrimSpace(line), err == nil
	}
	read := func() (string, bool) { // a request
		for {
			line, ok := readLine()
			if !ok || !strings.HasPrefix(line, "#") {
				return line, ok
			}
			if line == "# reset" {
				since = 0
			}
		}
	}
	for i := 0; i < len(steps); i++ {
		verb, arg, _ := strings.Cut(steps[i], "=")
		verb, count, counted := strings.Cut(verb, ":")
		n := 1
		if counted && count != "*" {
			var err error
			if n, err = strconv.Atoi(count); err != nil {
				return fmt.Errorf("step %q: bad count", steps[i])
			}
		}
		for k := 0; count == "*" || k < n; k++ {
			switch verb {
			case "header":
				h, ok := readLine()
				if !ok {
					return nil
				}
				if a, b, pattern := strings.Cut(arg, "*"); pattern && (!strings.HasPrefix(h, a) || !strings.HasSuffix(h, b)) {
					fmt.Fprintf(os.Stderr, "exectest: header %q, want %q\n", h, arg)
					exit(1)
				}
			case "read":
				if _, ok := read(); !ok {
					return nil
				}
			case "answer":
				req, ok := read()
				if !ok {
					return nil
				}
				time.Sleep(delay)
				if answers++; jitter > 0 {
					h := answers * 0x9e3779b97f4a7c15 // a hash of the answer's number
					h ^= h >> 29
					time.Sleep(time.Duration(h % uint64(jitter)))
				}
				line := arg
				fields := strings.Fields(req)
				for n := len(fields); n >= 1; n-- { // $12 before $1
					line = strings.ReplaceAll(line, "$"+strconv.Itoa(n), fields[n-1])
				}
				if len(fields) > 0 {
					line = strings.ReplaceAll(line, "$t", fields[0])
				}
				line = strings.ReplaceAll(line, "$n", strconv.Itoa(since))
				since++
				fmt.Fprintln(out, line)
				if twice > 0 && answers%twice == 0 {
					out.Flush()
					time.Sleep(copyAfter)
					fmt.Fprintln(out, line)
				}
			case "say":
				fmt.Fprintln(out, arg)
			case "blob":
				size, _ := strconv.Atoi(arg)
				out.WriteString(strings.Repeat("1", size) + "\n")
			case "twice":
				every, after, _ := strings.Cut(arg, ":")
				n, err := strconv.Atoi(every)
				d, err2 := time.ParseDuration(after)
				if err != nil || err2 != nil || n < 1 {
					return fmt.Errorf("step %q: want twice=N:DURATION", steps[i])
				}
				twice, copyAfter = uint64(n), d
			case "delay", "jitter", "sleep":
				d, err := time.ParseDuration(arg)
				if err != nil {
					return fmt.Errorf("step %q: %v", steps[i], err)
				}
				switch verb {
				case "delay":
					delay = d
				case "jitter":
					jitter = d
				default:
					out.Flush()
					time.Sleep(d)
				}
			case "first":
				if _, err := os.Stat(arg); err == nil {
					for i < len(steps) && steps[i] != "second" {
						i++
					}
				} else if err := os.WriteFile(arg, nil, 0o644); err != nil {
					return err
				}
			case "second":
			case "spawn":
				child := exec.Command(os.Args[0], "exectest-child")
				if err := child.Start(); err != nil {
					return err
				}
				f, err := os.OpenFile(arg, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return err
				}
				fmt.Fprintln(f, child.Process.Pid)
				f.Close()
			case "exit":
				out.Flush()
				code, _ := strconv.Atoi(arg)
				exit(code)
			default:
				return fmt.Errorf("step %q: no such verb", steps[i])
			}
			if err := out.Flush(); err != nil {
				return nil // the model closed its end
			}
		}
	}
	return nil
}
