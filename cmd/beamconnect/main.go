// Command beamconnect couples a controller or model to BeamNG.tech's
// tight-coupling UDP interface, configured with VS Connect S-function JSON.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"beamconnect/internal/sighup"
	"beamconnect/internal/stdout"
	"beamconnect/recording"
	"beamconnect/recording/mdf"
)

// hangups is SIGHUP, caught from the program's first moment (package
// sighup's initialisation, among the first of the program): its default
// action would end a run before its summary, leaving BeamNG with the last
// controls. run reloads the config on it; other commands ignore it.
var hangups = sighup.Caught

// commands are beamconnect's commands, all of them, in the order its usage
// lists them: the main job and what prepares a config for it, then BeamNG's
// side and its layout, models, recordings, measurements.
var commands = []*command{
	cmdRun, cmdValidate, cmdCompile, cmdInit, cmdCsv,
	cmdEmulate, cmdBanks, cmdTiming,
	cmdFmu,
	cmdConvert, cmdPlot,
	cmdBench, cmdVersion,
	cmdFmuHost,        // internal: an FMU's child process
	cmdFmuExportChild, // internal: an exported FMU's coupling
	cmdBenchBusy,      // internal: a busy loop of bench --load
}

// registerFormats registers the recording formats beyond CSV, which every
// command that records, converts or plots reads and writes: the one place
// they are named.
func registerFormats() { recording.Register(mdf.Format) }

func main() {
	// The program's own standard output, kept before anything takes
	// os.Stdout: an FMU loaded later prints to stderr instead (package
	// stdout).
	stdout.Keep()
	// A write to a broken pipe on stdout or stderr (the log's reader has
	// exited) would otherwise kill the process with SIGPIPE, in the middle
	// of a coupling, with BeamNG's last controls applied. With SIGPIPE
	// notified, such a write fails with EPIPE instead (os/signal: "If the
	// program calls Notify to receive SIGPIPE signals, the file descriptor
	// number does not matter"); the log counts it and the run goes on.
	// Notify rather than Ignore: an ignored signal would be inherited by
	// exec models, a handled one is reset for them.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	registerFormats()
	os.Exit(run(os.Args[1:], env{
		stdout:      os.Stdout,
		stderr:      os.Stderr,
		lookupEnv:   os.LookupEnv,
		stderrIsTTY: isTerminal(os.Stderr),
	}))
}
