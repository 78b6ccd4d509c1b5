package bench

import (
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"beamconnect/internal/proctree"

	"beamconnect/internal/eventually"

	"fmt"
)

// The test binary is a busy loop too, with BENCH_TEST_BUSY set.
func TestMain(m *testing.M) {
	if os.Getenv("BENCH_TEST_BUSY") != "" {
		Busy()
	}
	os.Exit(m.Run())
}

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
		{"binary exported, a master", "/x/beamconnect", Driver{FMUSim: "/x/fmusim", Exported: "/t/rig.fmu"}, "beamconnect in process, beamconnect, beamconnect --busy-poll, beamconnect exported, under fmusim"},
		{"a master, nothing exported", "/x/beamconnect", Driver{FMUSim: "/x/fmusim"}, "beamconnect in process, beamconnect, beamconnect --busy-poll"},
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
	// The master sets the exported FMU's ports to the bench's.
	rs := Responders("/x/beamconnect", Driver{FMUSim: "/x/fmusim", Exported: "/t/rig.fmu"})
	if c := rs[3].Command; !strings.HasPrefix(c, "/x/fmusim ") || !strings.Contains(c, "--start-value localPort {listen-port} --start-value remotePort {beamng-port} /t/rig.fmu") {
		t.Errorf("%q", c)
	}
}

// Run measures beamconnect in process against the emulator in lockstep,
// once per round, and reports the median round: round trips, turnaround
// quantiles in order, no allocations per round trip, no stalls. It is
// judged by form, not speed: under Wine a round trip can take milliseconds.
func TestRunInProcess(t *testing.T) {
	rs, warnings := Run(Options{Responders: []Responder{{"beamconnect in process", ""}}, Duration: 200 * time.Millisecond, Rounds: 3,
		Log: slog.New(slog.DiscardHandler)})
	if len(rs) != 1 || len(warnings) != 0 {
		t.Fatalf("%+v %q", rs, warnings)
	}
	r := rs[0]
	if r.Error != "" || r.RoundTrips < 1 || r.Stalls != 0 || r.P50us <= 0 || r.P99us < r.P50us || r.P999us < r.P99us || r.AllocsPerRT < 0 || r.PeakRSSKiB <= 0 {
		t.Errorf("%+v", r)
	}
}

// Each responder is measured quiet and then beside the busy loops, one
// after the other, the loaded one with its ratio to the quiet one.
func TestRunBesideLoad(t *testing.T) {
	t.Setenv("BENCH_TEST_BUSY", "1") // for the busy loops: this binary
	rs, _ := Run(Options{Responders: []Responder{{"beamconnect in process", ""}}, Duration: 200 * time.Millisecond, Rounds: 1,
		Log: slog.New(slog.DiscardHandler), Load: 1, LoadArgv: []string{os.Args[0]}})
	if len(rs) != 2 || rs[0].Load != 0 || rs[1].Load != 1 || rs[0].Ratio != 0 {
		t.Fatalf("%+v", rs)
	}
	for _, r := range rs {
		if r.Error != "" || r.RoundTrips < 1 || r.Stalls != 0 {
			t.Errorf("%+v", r)
		}
	}
	if got := rs[1].PerSecond / rs[0].PerSecond; rs[1].Ratio != got {
		t.Errorf("ratio %v, round trips %v / %v", rs[1].Ratio, rs[1].PerSecond, rs[0].PerSecond)
	}
}

// A busy loop is a process that computes until it is stopped, and then
// is gone.
func TestLoadComputesUntilStopped(t *testing.T) {
	t.Setenv("BENCH_TEST_BUSY", "1")
	l, err := startLoad([]string{os.Args[0]}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.stop()
	pids := []int{l.trees[0].Pid(), l.trees[1].Pid()}
	if runtime.GOOS == "linux" {
		for _, pid := range pids {
			// It has computed: user CPU time (the 14th field of its stat).
			eventually.Must(t, 10*time.Second, fmt.Sprintf("busy loop %d computing", pid), func() bool {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				stat := string(b)
				f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
				return len(f) > 11 && f[11] != "0"
			})
		}
	}
	for _, pid := range pids {
		if !proctree.Alive(pid) {
			t.Errorf("busy loop %d ended before it was stopped", pid)
		}
	}
	l.stop()
	for _, pid := range pids {
		if proctree.Alive(pid) {
			t.Errorf("busy loop %d still runs after stop", pid)
		}
	}
}
