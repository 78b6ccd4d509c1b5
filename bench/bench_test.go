package bench

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A busy-polling responder on too few cores is warned about, naming what
// needs the cores; enough cores, or a responder that blocks, are not.
func TestBenchCoreShortage(t *testing.T) {
	emulated, cDriver, spin := Driver{}, Driver{Program: "/tmp/driver"}, Driver{Spin: true, Program: "/tmp/driver"}
	for _, tt := range []struct {
		name           string
		responder, cmd string
		drv            Driver
		cpus           int
		want           string
	}{
		{"busy-poll emulated 2 cores", "beamconnect --busy-poll", "bc run {config} --busy-poll", emulated, 2, "needs 3 cores (one for it, one for the emulator, one for the Go runtime and the kernel's work); this process may use 2"},
		{"busy-poll emulated 4 cores", "beamconnect --busy-poll", "bc run {config} --busy-poll", emulated, 4, ""},
		{"busy-poll driver 2 cores", "beamconnect --busy-poll", "bc run {config} --busy-poll", cDriver, 2, ""},
		{"busy-poll driver 1 core", "beamconnect --busy-poll", "bc run {config} --busy-poll", cDriver, 1, "needs 2 cores (one for it, one for BeamNG's side); this process may use 1"},
		{"busy-poll spinning driver 2 cores", "beamconnect --busy-poll", "bc run {config} --busy-poll", spin, 2, "needs 3 cores (one for it, one for the spinning driver, one for everything else)"},
		{"blocking 1 core", "beamconnect", "bc run {config}", emulated, 1, ""},
		{"other program busy-polls", "other", "/tmp/other {listen} {beamng} --busy-poll", emulated, 2, `"other" busy-polls`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := CoreShortage(tt.responder, tt.cmd, tt.drv, tt.cpus)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("%s %+v on %d cores: %q, want %q", tt.responder, tt.drv, tt.cpus, got, tt.want)
			}
		})
	}
}

// beamconnect's own responders: in process always; its binary, busy-polling
// too, only when it is the binary and not a test binary (which, given
// "run", would run its tests); the FMU ones only with an FMU.
func TestResponders(t *testing.T) {
	names := func(rs []Responder) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return strings.Join(out, ", ")
	}
	for _, tt := range []struct {
		name string
		exe  string
		drv  Driver
		want string
	}{
		{"no executable", "", Driver{}, "beamconnect in process"},
		{"test binary with an FMU", "/x/beamconnect.test", Driver{FMU: "c.fmu"}, "beamconnect in process"},
		{"windows test binary", `C:\x\beamconnect.test.exe`, Driver{}, "beamconnect in process"},
		{"binary", "/x/beamconnect", Driver{}, "beamconnect in process, beamconnect, beamconnect --busy-poll"},
		{"binary with an FMU", "/x/beamconnect", Driver{FMU: "c.fmu"}, "beamconnect in process, beamconnect, beamconnect --busy-poll, beamconnect FMU in its child, beamconnect FMU in process"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(Responders(tt.exe, tt.drv)); got != tt.want {
				t.Errorf("%s %+v: %s, want %s", tt.exe, tt.drv, got, tt.want)
			}
		})
	}
	if rs := Responders("/x/beamconnect", Driver{FMU: "c.fmu"}); !strings.Contains(rs[4].Command, "{fmu-config-in-process}") || !strings.Contains(rs[3].Command, "{fmu-config}") {
		t.Errorf("%+v", rs)
	}
}

// Run measures beamconnect in process against the emulator in lockstep,
// once per round, and reports the median round: round trips, turnaround
// quantiles in order, no allocations per round trip, no stalls.
func TestRunInProcess(t *testing.T) {
	rs, warnings := Run(Options{Responders: []Responder{{"beamconnect in process", ""}}, Duration: 200 * time.Millisecond, Rounds: 3,
		Log: slog.New(slog.DiscardHandler)})
	if len(rs) != 1 || len(warnings) != 0 {
		t.Fatalf("%+v %q", rs, warnings)
	}
	r := rs[0]
	if r.Error != "" || r.RoundTrips < 100 || r.Stalls != 0 || r.P50us <= 0 || r.P99us < r.P50us || r.P999us < r.P99us || r.AllocsPerRT < 0 || r.PeakRSSKiB <= 0 {
		t.Errorf("%+v", r)
	}
}
