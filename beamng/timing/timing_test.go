package timing

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/beamngtest"
	"beamconnect/beamng/emulator"
)

var docs = flag.Bool("docs", false, "write the timing figures into ../../docs (timing-*.svg)")

// timingCase runs the emulator, writing BeamNG's debug logs, against a
// client that takes compute to answer each message, on the fake clock. The
// echo client is BeamNG's Simulink S-function (it starts after BeamNG,
// hence a 2 s wait at start-up); id+1 is a lockstep client.
func timingCase(t *testing.T, simulinkTime float64, compute time.Duration, policy func(float64) float64, steps int64) string {
	return timingRun(t, simulinkTime, steps, func(link beamngtest.Link, stop <-chan struct{}) {
		beamngtest.ServeLink(link, stop, compute, policy)
	})
}

// timingRun runs the emulator writing its debug logs against serve.
func timingRun(t *testing.T, simulinkTime float64, steps int64, serve func(beamngtest.Link, <-chan struct{})) string {
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
			serve(cside, stop)
		}()
		if _, err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		close(stop)
		<-done
	})
	return dir
}

// The five cases of BeamNG's own timing study of its Simulink coupling,
// analysed from the debug logs alone: skips between sends, where the
// replies land, the real-time factor, and the verdict.
func TestTimingCases(t *testing.T) {
	for _, tt := range []struct {
		name         string
		simulinkTime float64
		compute      time.Duration
		skips        int
		check        func(r Report) bool
		realtime     bool
		verdict      string
	}{
		{"case1", 0.0005, 100 * time.Microsecond, 0, func(r Report) bool { return r.RepliesBlocking >= r.Receives-1 }, true,
			"healthy: lockstep, no stalls, every reply in time"},
		{"case2", 0.005, 100 * time.Microsecond, 9, func(r Report) bool { return r.RepliesSameStep >= r.Receives-1 }, true,
			"healthy: lockstep, no stalls, every reply in time"},
		{"case3", 0.005, time.Millisecond, 9, func(r Report) bool { return r.RepliesLaterStep >= r.Receives-1 }, true,
			"healthy: lockstep, no stalls, every reply in time"},
		{"case4", 0.005, 4500 * time.Microsecond, 9, func(r Report) bool { return r.RepliesBlocking > r.Receives*85/100 }, true,
			"healthy (lockstep, no stalls), but: "},
		{"case5", 0.0005, time.Millisecond, 0, func(r Report) bool { return r.RepliesBlocking >= r.Receives-1 }, false,
			"healthy (lockstep, no stalls), but: slower than real time (0.50"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := timingCase(t, tt.simulinkTime, tt.compute, beamngtest.Next, 6000)
			logs, err := ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			r := Analyze(logs, beamng.PhysicsDt)
			t.Logf("%s:\n%v", tt.name, r)
			if r.SkipsBetweenSends != tt.skips || !tt.check(r) || r.Stalls != 0 || r.SendsAhead != 0 {
				t.Errorf("%s: %+v", tt.name, r)
			}
			if tt.realtime && (r.RealtimeFactor < 0.97 || r.RealtimeFactor > 1.03) || !tt.realtime && r.RealtimeFactor > 0.6 {
				t.Errorf("%s: %.3f× real time", tt.name, r.RealtimeFactor)
			}
			if !r.Healthy || !strings.HasPrefix(r.Verdict(), tt.verdict) || !strings.HasPrefix(r.String(), r.Verdict()+"\n") {
				t.Errorf("%s: the verdict is %q, want %q first", tt.name, r.Verdict(), tt.verdict)
			}
			if *docs {
				writeFigure(t, logs, r, tt.name, tt.simulinkTime, tt.compute)
			}
		})
	}
}

// BeamNG's Simulink S-function echoes ids and starts after BeamNG, so
// BeamNG waits 2 s before it sends again: not healthy, the stall named.
func TestStartupStall(t *testing.T) {
	dir := timingCase(t, 0.005, 100*time.Microsecond, func(id float64) float64 { return id }, 6000)
	logs, _ := ReadDir(dir)
	r := Analyze(logs, beamng.PhysicsDt)
	if r.Stalls != 1 || r.FirstStall < 0 || r.Healthy || !strings.HasPrefix(r.Verdict(), "NOT healthy: 1 stall: BeamNG waited 2 s for a reply once (a reply lost or late, an echoed id at start-up, a client paused)") {
		t.Errorf("%+v\n%s", r, r.Verdict())
	}
	var svg bytes.Buffer
	if err := SVG(&svg, logs, r, beamng.PhysicsDt, "echo client"); err != nil {
		t.Fatal(err)
	}
	d := parseFigure(t, svg.Bytes())
	if !strings.Contains(d.titles(), "Zoom on start-up: after the first 2 s blocking receive") || !strings.HasPrefix(d.verdict(), "NOT healthy") {
		t.Errorf("figure: %s / %s", d.titles(), d.verdict())
	}
	if n := bytes.Count(svg.Bytes(), []byte(`class="stall"`)); len(logs.Sends)+len(logs.Receives) > markLimit && n != 1 {
		t.Errorf("the overview marks %d stalls, want 1", n)
	}
	if *docs {
		writeFigure(t, logs, r, "startup-echo", 0.005, 100*time.Microsecond)
	}
}

// A client that pauses 2.5 s once and does not re-base its ids: BeamNG
// stalls, then runs ahead of the replies for good. The verdict names both.
func TestLockstepLost(t *testing.T) {
	dir := timingRun(t, 0.005, 12000, func(link beamngtest.Link, stop <-chan struct{}) {
		r := beamngtest.NewReplier()
		beamngtest.Each(link, stop, func(d []byte) {
			b, ok := r.Reply(d, beamngtest.Next, nil)
			if ok && binaryID(d) == 50 {
				time.Sleep(2500 * time.Millisecond) // the client's pause, what BeamNG stalls on
			}
			if ok {
				link.Send(b)
			}
		})
	})
	logs, _ := ReadDir(dir)
	r := Analyze(logs, beamng.PhysicsDt)
	if r.Stalls != 1 || r.SendsAhead < 10 || r.Healthy || !strings.Contains(r.Verdict(), "out of lockstep: BeamNG sent") {
		t.Errorf("%+v\n%s", r, r.Verdict())
	}
}

func writeFigure(t *testing.T, logs *Logs, r Report, name string, simulinkTime float64, compute time.Duration) {
	var b bytes.Buffer
	title := "Timing " + name + ": simulinkTime " + time.Duration(simulinkTime*float64(time.Second)).String() +
		", client compute " + compute.String() + " (beamconnect emulate, 60 FPS, 0.2 ms per physics step)"
	if err := SVG(&b, logs, r, beamng.PhysicsDt, title); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "timing-"+name+".svg"), b.Bytes(), 0o644); err != nil {
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

// binaryID is a message's id.
func binaryID(d []byte) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(d))
}

// figure is a timing SVG parsed back.
type figure struct {
	Texts []struct {
		Class string `xml:"class,attr"`
		Value string `xml:",chardata"`
	} `xml:"text"`
	Groups []struct {
		Class string  `xml:"class,attr"`
		From  float64 `xml:"data-from,attr"`
		To    float64 `xml:"data-to,attr"`
		Texts []struct {
			Class string  `xml:"class,attr"`
			X     float64 `xml:"x,attr"`
			Value string  `xml:",chardata"`
		} `xml:"text"`
		Circles []struct {
			Class string `xml:"class,attr"`
		} `xml:"circle"`
		Lines []struct {
			Class string `xml:"class,attr"`
		} `xml:"line"`
	} `xml:"g"`
}

func parseFigure(t *testing.T, b []byte) figure {
	t.Helper()
	var f figure
	if err := xml.Unmarshal(b, &f); err != nil {
		t.Fatalf("not valid SVG: %v", err)
	}
	return f
}

func (f figure) verdict() string {
	for _, tx := range f.Texts {
		if tx.Class == "verdict" {
			return tx.Value
		}
	}
	return ""
}

func (f figure) titles() string {
	var all []string
	for _, g := range f.Groups {
		for _, tx := range g.Texts {
			all = append(all, tx.Value)
		}
	}
	return strings.Join(all, "|")
}

// A long log of a fast client (a message every physics step, 20 s): the
// overview shows the waits and the real-time factor rather than a band of
// marks, the zooms each show a few sends, steps and replies, and no two id
// labels overlap.
func TestLongFastClientFigure(t *testing.T) {
	dir := timingCase(t, 0.0005, 20*time.Microsecond, beamngtest.Next, 40000)
	logs, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := Analyze(logs, beamng.PhysicsDt)
	if !r.Healthy {
		t.Fatalf("a fast client: %s", r.Verdict())
	}
	var b bytes.Buffer
	if err := SVG(&b, logs, r, beamng.PhysicsDt, "fast client"); err != nil {
		t.Fatal(err)
	}
	f := parseFigure(t, b.Bytes())
	var classes []string
	for _, g := range f.Groups {
		classes = append(classes, g.Class)
		if g.Class != "events" {
			continue
		}
		count := map[string]int{}
		for _, c := range g.Circles {
			count[c.Class]++
		}
		for _, l := range g.Lines {
			count[l.Class]++
		}
		if count["send"] < 3 || count["send"] > 12 || count["receive"] < 2 || count["step"] < 3 {
			t.Errorf("zoom %g–%g s shows %v: want a few sends, replies and steps", g.From, g.To, count)
		}
		// Labels: left to right, each clear of the one before (6.2 px a
		// character at 11 px).
		var prev struct {
			x float64
			w float64
		}
		prev.x = -1e9
		for _, tx := range g.Texts {
			if tx.Class != "id" {
				continue
			}
			w := float64(len(tx.Value)) * 6.2
			if tx.X-w/2 < prev.x+prev.w/2 && tx.X > prev.x {
				t.Errorf("id labels %q at %.1f and the one at %.1f overlap", tx.Value, tx.X, prev.x)
			}
			prev.x, prev.w = tx.X, w
		}
	}
	if !slices.Equal(classes, []string{"waits", "realtime", "events", "events"}) {
		t.Errorf("figure parts %v", classes)
	}
	if b.Len() > 400_000 {
		t.Errorf("the figure is %d bytes", b.Len())
	}
}
