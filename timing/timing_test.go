package timing

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/beamngtest"
	"beamconnect/beamng/emulator"
)

var docs = flag.Bool("docs", false, "write the seed 001 figures into ../docs")

// seedCase runs the emulator, writing BeamNG's debug logs, against a client
// that takes compute to answer each message, on the fake clock. The echo
// client is the seed's Simulink model (it starts after BeamNG, hence the
// seed's 2 s wait at start-up); id+1 is a lockstep client.
func seedCase(t *testing.T, simulinkTime float64, compute time.Duration, policy func(float64) float64, steps int64) string {
	t.Helper()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		bside, cside := emulator.Pipe(1024)
		e, err := emulator.New(emulator.Config{SimulinkTime: simulinkTime, Steps: steps, StepCost: 200 * time.Microsecond,
			FPS: 60, DebugLogs: dir}, bside)
		if err != nil {
			t.Fatal(err)
		}
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			beamngtest.ServeLink(cside, stop, compute, policy)
		}()
		if _, err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		close(stop)
		<-done
	})
	return dir
}

// Seed 001's five cases, analysed from the debug logs alone, come out as
// the seed describes them.
func TestSeed001(t *testing.T) {
	for _, tt := range []struct {
		name         string
		simulinkTime float64
		compute      time.Duration
		skips        int
		check        func(r Report) bool
		realtime     bool
	}{
		{"case1", 0.0005, 100 * time.Microsecond, 0, func(r Report) bool { return r.RepliesBlocking >= r.Receives-1 }, true},
		{"case2", 0.005, 100 * time.Microsecond, 9, func(r Report) bool { return r.RepliesSameStep >= r.Receives-1 }, true},
		{"case3", 0.005, time.Millisecond, 9, func(r Report) bool { return r.RepliesLaterStep >= r.Receives-1 }, true},
		{"case4", 0.005, 4500 * time.Microsecond, 9, func(r Report) bool { return r.RepliesBlocking > r.Receives*85/100 }, true},
		{"case5", 0.0005, time.Millisecond, 0, func(r Report) bool { return r.RepliesBlocking >= r.Receives-1 }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := seedCase(t, tt.simulinkTime, tt.compute, beamngtest.Next, 6000)
			logs, err := ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			r := Analyze(logs, beamng.PhysicsDt)
			t.Logf("%s:\n%v", tt.name, r)
			if r.SkipsBetweenSends != tt.skips || !tt.check(r) || r.Stalls != 0 {
				t.Errorf("%s: %+v", tt.name, r)
			}
			if tt.realtime && (r.RealtimeFactor < 0.97 || r.RealtimeFactor > 1.03) || !tt.realtime && r.RealtimeFactor > 0.6 {
				t.Errorf("%s: %.3f× real time", tt.name, r.RealtimeFactor)
			}
			if *docs {
				writeFigure(t, logs, r, tt.name, tt.simulinkTime, tt.compute)
			}
		})
	}
}

// The seed's own start: its Simulink model echoes ids and starts after
// BeamNG, so BeamNG waits 2 s before it sends again.
func TestStartupStall(t *testing.T) {
	dir := seedCase(t, 0.005, 100*time.Microsecond, func(id float64) float64 { return id }, 6000)
	logs, _ := ReadDir(dir)
	r := Analyze(logs, beamng.PhysicsDt)
	if r.Stalls != 1 || r.FirstStall < 0 {
		t.Errorf("%+v", r)
	}
	var svg bytes.Buffer
	if err := SVG(&svg, logs, r, beamng.PhysicsDt, "echo client"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), "Zoom on start-up") || !strings.HasPrefix(svg.String(), "<svg") {
		t.Error("no figure")
	}
	if *docs {
		writeFigure(t, logs, r, "startup-echo", 0.005, 100*time.Microsecond)
	}
}

func writeFigure(t *testing.T, logs *Logs, r Report, name string, simulinkTime float64, compute time.Duration) {
	var b bytes.Buffer
	title := "Seed 001 " + name + ": simulinkTime " + time.Duration(simulinkTime*float64(time.Second)).String() +
		", client compute " + compute.String() + " (beamconnect emulate, 60 FPS, 0.2 ms per physics step)"
	if err := SVG(&b, logs, r, beamng.PhysicsDt, title); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "seed001-"+name+".svg"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), StepsLog) {
		t.Errorf("missing logs: %v", err)
	}
	os.WriteFile(filepath.Join(dir, StepsLog), []byte("time\n0.1\nbanana\n"), 0o644)
	os.WriteFile(filepath.Join(dir, SendLog), []byte("time,id\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ReceiveLog), []byte("time,id\n"), 0o644)
	if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), StepsLog+`:3: expected numbers (time, id): "banana"`) {
		t.Errorf("bad row: %v", err)
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("time,id\n0.5,1\n0.6,2\n"))
	f.Add([]byte("1,2,3\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "log.csv")
		os.WriteFile(path, data, 0o644)
		ev, err := readCSV(path, 2)
		if err == nil {
			l := &Logs{Steps: []float64{0}, Sends: ev, Receives: ev}
			Analyze(l, 0.0005)
		}
	})
}
