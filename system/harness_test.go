package system

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/coupling"
	"beamconnect/fmu/host"
	"beamconnect/fmu/testfmu"
	"beamconnect/internal/logtest"
	"beamconnect/internal/memnet"
	"beamconnect/ports"
	"beamconnect/recording/recordingtest"
	"beamconnect/timesync"
)

func TestMain(m *testing.M) {
	// The test binary is an FMU host too, as beamconnect is.
	if len(os.Args) > 1 && os.Args[1] == "fmu-host" {
		os.Exit(host.Main(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// example copies the example system (examples/system-cruise) into a
// folder of the test's, with its two FMUs built, and returns its .ssd.
func example(t testing.TB) string {
	t.Helper()
	ctl, act := testfmu.SystemForTest(t)
	dir := t.TempDir()
	src := "../examples/system-cruise"
	os.MkdirAll(filepath.Join(dir, "resources"), 0o755)
	for _, f := range []struct{ from, to string }{
		{filepath.Join(src, "SystemStructure.ssd"), "SystemStructure.ssd"},
		{filepath.Join(src, "resources", "vehicle.json"), "resources/vehicle.json"},
		{filepath.Join(src, "resources", "tuning.ssv"), "resources/tuning.ssv"},
		{ctl, "resources/controller.fmu"},
		{act, "resources/actuator.fmu"},
	} {
		data, err := os.ReadFile(f.from)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, filepath.FromSlash(f.to)), data, 0o644)
	}
	return filepath.Join(dir, "SystemStructure.ssd")
}

// load loads a system the test expects to be valid.
func load(t testing.TB, path string) *System {
	t.Helper()
	s, ds, err := Load(path)
	if err != nil || s == nil {
		t.Fatalf("%v\n%v", err, ds)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// run is a system coupled to emulated BeamNG vehicles.
type run struct {
	sys   *System
	model *Model
	s     *coupling.Session
	log   *logtest.Buffer
	ems   []*emulator.Emulator
	sums  []emulator.Summary
	net   *memnet.Network // nil over real UDP
	rec   string          // the recording, when asked for
}

// couple builds a session of the system's model against emulated BeamNG
// vehicles: in memory on the fake clock (inside synctest.Test) when net
// is set, over loopback UDP otherwise.
func couple(t testing.TB, sys *System, m *Model, em emulator.Config, net *memnet.Network, opts func(*coupling.Options)) *run {
	t.Helper()
	r := &run{sys: sys, model: m, log: &logtest.Buffer{}, net: net}
	o := coupling.Options{Plan: sys.Plan, Model: m, ModelName: Kind, Log: r.log.Logger(), Local: netip.MustParseAddrPort("127.0.0.1:0")}
	if net != nil {
		o.Listen = func(local netip.AddrPort) (coupling.Transport, error) {
			s, err := net.Timed(local, 50*time.Millisecond) // the coupling's idle step
			if err != nil {
				return nil, err // not a nil *memnet.Socket in an interface
			}
			return s, nil
		}
		o.Clock = timesync.SleepClock{}
	}
	if opts != nil {
		opts(&o)
	}
	var err error
	if r.s, err = coupling.New(o); err != nil {
		t.Fatal(err)
	}
	if err := r.s.Bind(); err != nil {
		t.Fatal(err)
	}
	for v, l := range r.s.Links() {
		var tr emulator.Transport
		if net != nil {
			mt, err := emulator.ListenMem(net, netip.MustParseAddrPort("127.0.0.1:0"), l.LocalAddr(), 0)
			if err != nil {
				t.Fatal(err)
			}
			l.SetRemote(mt.LocalAddr())
			tr = mt
		} else {
			u, err := emulator.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), l.LocalAddr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { u.Close() })
			l.SetRemote(u.LocalAddr())
			tr = u
		}
		cfg := em
		cfg.SimulinkTime, cfg.PingTime = sys.Plan.Period, sys.Plan.PingTime
		if v > 0 {
			cfg.Faults = emulator.Faults{}
		}
		e, err := emulator.New(cfg, tr)
		if err != nil {
			t.Fatal(err)
		}
		r.ems = append(r.ems, e)
	}
	r.ems[0].Attach(r.ems[1:]...)
	return r
}

// go runs both sides until BeamNG's side has done its steps, during
// alongside.
func (r *run) run(t testing.TB, during ...func(ctx context.Context)) {
	t.Helper()
	limit := 2 * time.Minute
	if r.net != nil {
		limit = time.Hour // fake time
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { r.s.Run(ctx) })
	for _, d := range during {
		wg.Go(func() { d(ctx) })
	}
	sum, _ := r.ems[0].Run(ctx)
	r.sums = []emulator.Summary{sum}
	for _, e := range r.ems[1:] {
		r.sums = append(r.sums, e.Summary())
	}
	timedOut := ctx.Err() == context.DeadlineExceeded
	cancel()
	wg.Wait()
	if timedOut {
		t.Fatalf("timed out\n%s", r.log)
	}
}

// recorded is a run's recording into a CSV file of the test's.
type recorded struct {
	file string
	f    *os.File
	rec  *coupling.Recorder
}

// record makes a recording of plan's run (inside the synctest bubble of a
// run in one: its writer is a goroutine of the recorder's).
func record(t testing.TB, plan *ports.Plan) *recorded {
	t.Helper()
	r := &recorded{file: filepath.Join(t.TempDir(), "run.csv")}
	var err error
	if r.f, err = os.Create(r.file); err != nil {
		t.Fatal(err)
	}
	r.rec = coupling.NewRecorder(r.f, plan, nil)
	return r
}

// rows ends the recording and reads its rows.
func (r *recorded) rows(t testing.TB) []map[string]float64 {
	t.Helper()
	if err := r.rec.Close(); err != nil {
		t.Fatal(err)
	}
	r.f.Close()
	return recordingtest.Rows(t, r.file)
}
