package coupling

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/recording"
	"beamconnect/recording/mdf"
	"beamconnect/recording/mdf/mdftest"
)

// mdfRecorder records plan's run to a new MDF 4 file in dir.
func mdfRecorder(t testing.TB, dir string, plan *ports.Plan) (*Recorder, string) {
	t.Helper()
	path := filepath.Join(dir, "run.mf4")
	f, fm, err := OpenRecording(path, "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w, err := fm.Create(f, recording.Options{Start: time.Unix(1e9, 0), Config: plan.Config, ConfigName: "rig.json"})
	if err != nil {
		t.Fatal(err)
	}
	return NewRecorderOf(w, path, plan, nil), path
}

func readMDF(t *testing.T, path string) *mdf.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	mf, err := mdf.Read(f, st.Size(), path)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

// faultWindow is a model faulted while its time is in [from, to).
type faultWindow struct {
	t, from, to float64
}

func (m *faultWindow) Step(t float64, out, in [][]float64) bool { m.t = t; in[1][0] = 0.3; return true }

var errStopped = errors.New("the model's program stopped answering")

// Rebind takes any reloaded config: the model reads no port.
func (m *faultWindow) Rebind(*ports.Plan, models.Params, models.Params) (func(), error) {
	return func() {}, nil
}

func (m *faultWindow) Fault() error {
	if m.t >= m.from && m.t < m.to {
		return errStopped
	}
	return nil
}

// An MDF recording of a run with a reload and a model fault: a row per
// reply; the reload as an event at its first row's time, saying what
// changed and referring to the config it applied; the fault as a range
// from the first message it was seen at (BeamNG sends in frames of
// 1/60 s; the model's time is BeamNG's, the recording's the local clock's)
// to the recovery; the status changes it caused.
func TestRecordMDFEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var path string
		cfg := load(t, "../examples/cruise-pedals.json")
		h := rig{cfg: cfg, em: emulator.Config{Steps: 2400},
			model: func(*ports.Plan) models.Model { return &faultWindow{from: 0.5, to: 0.6} },
			opts: func(_ *harness, o *Options) {
				o.Record, path = mdfRecorder(t, dir, o.Plan)
			}}.sim(t)
		h.run(t, func(ctx context.Context) {
			for ctx.Err() == nil && h.c.Stats().Get(Messages) < 40 {
				time.Sleep(time.Millisecond)
			}
			src, _ := os.ReadFile("../examples/cruise-pedals.json")
			edited := strings.Replace(string(src), `{ "propertyName": "gear" }`, `{ "propertyName": "gear" }, { "propertyName": "fuel" }`, 1)
			edited = strings.Replace(edited, `"$schema": "../schemas/config.schema.json",`, "", 1)
			if _, err := reloadConfig(h.s, "rig.json", []byte(edited)); err != nil {
				t.Error(err)
			}
		})
		mf := readMDF(t, path)
		rows := 0
		for _, g := range mf.Groups {
			if strings.HasSuffix(g.Name, "from BeamNG") {
				rows += int(g.Cycles)
			}
		}
		if v := h.s.Values(); int64(rows) != v[Replies] || len(mf.Groups) != 4 {
			t.Errorf("%d rows in %d groups for %d replies", rows, len(mf.Groups), v[Replies])
		}
		var names []string
		var reload, begin, end *mdf.EventInfo
		for _, e := range mf.Events {
			names = append(names, e.Name)
			switch {
			case e.Name == "reload":
				reload = e
			case e.Name == "model fault" && e.Range == mdf.Begin:
				begin = e
			case e.Name == "model fault" && e.Range == mdf.End:
				end = e
			}
		}
		if reload == nil || !strings.Contains(reload.Comment, "out 3 re-mapped") || len(reload.Attachments) != 1 ||
			!strings.Contains(string(mf.Attachments[reload.Attachments[0]].Data), "fuel") {
			t.Errorf("reload event %+v; events %q", reload, names)
		}
		if begin == nil || end == nil || end.RangeOf < 0 || mf.Events[end.RangeOf] != begin ||
			math.Abs(begin.Time-0.5) > 0.02 || math.Abs(end.Time-0.6) > 0.02 || !strings.Contains(begin.Comment, "stopped answering") {
			t.Errorf("fault events %+v → %+v; events %q", begin, end, names)
		}
		for _, want := range []string{"status connected", "status error"} {
			if !strings.Contains(strings.Join(names, ","), want) {
				t.Errorf("no %q among the events %q", want, names)
			}
		}
		if !mf.Finalized {
			t.Error("the file was not finalized at the run's end")
		}
	})
}

// formatRecorder records plan's run in a new file of format.
func formatRecorder(t testing.TB, format string, plan *ports.Plan) (*Recorder, *os.File) {
	t.Helper()
	f, fm, err := OpenRecording(filepath.Join(t.TempDir(), "run"), "", format, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w, err := fm.Create(f, recording.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return NewRecorderOf(w, f.Name(), plan, nil), f
}

// Rows cost no allocation, in either format.
func TestRecorderRowAllocsEveryFormat(t *testing.T) {
	plan := recordPlan(t)
	for _, format := range []string{"csv", "mdf"} {
		t.Run(format, func(t *testing.T) {
			r, _ := formatRecorder(t, format, plan)
			defer r.Close()
			outs := [][]float64{{3}, {12.5}, {0.5, 0}, {2000, 3}, {1.25, 250}}
			ins := [][]float64{{1}, {0.25, 0}, {0}}
			i := 0
			now := time.Now()
			if a := testing.AllocsPerRun(5000, func() {
				i++
				r.Row(&recording.Entry{Time: float64(i) * 0.005, LocalTime: float64(i) * 0.005, Status: int(ports.Connected), ID: float64(i), ReplyID: float64(i + 1), Outputs: outs, Inputs: ins, Setpoints: []float64{20}})
				if i%50 == 0 { // as the loop does every 250 ms
					now = now.Add(250 * time.Millisecond)
					r.flushBy(now, flushEvery)
				}
			}); a != 0 {
				t.Errorf("%v allocations per row", a)
			}
		})
	}
}

// BenchmarkRecorderRow is the message path's cost of a row in each format
// (the cruise example's ports): encoding it, and handing the buffer over
// every 50 rows (250 ms at 200 Hz), the writer goroutine keeping up (the
// wait for it is not timed; BenchmarkRecorderWrite is its cost). It also
// says the file's bytes per row.
func BenchmarkRecorderRow(b *testing.B) {
	plan := recordPlan(b)
	for _, format := range []string{"csv", "mdf"} {
		b.Run(format, func(b *testing.B) {
			r, f := formatRecorder(b, format, plan)
			outs := [][]float64{{3}, {12.5}, {0.5, 0}, {2000, 3}, {1.25, 250}}
			ins := [][]float64{{1}, {0.25, 0}, {0}}
			now := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r.Row(&recording.Entry{Time: float64(i)*0.005 + 0.123456, LocalTime: float64(i)*0.005 + 0.123456, Status: int(ports.Connected), ID: float64(i), ReplyID: float64(i + 1), Outputs: outs, Inputs: ins, Setpoints: []float64{20}})
				if i%50 == 49 {
					now = now.Add(250 * time.Millisecond)
					r.flushBy(now, flushEvery)
					b.StopTimer()
					for len(r.full) > 0 || len(r.free) == 0 {
						runtime.Gosched() // a real run has 250 ms for this
					}
					b.StartTimer()
				}
			}
			b.StopTimer()
			r.Close()
			if r.Lost() > 0 {
				b.Fatalf("%d rows lost", r.Lost())
			}
			st, _ := f.Stat()
			b.ReportMetric(float64(st.Size())/float64(b.N), "B/row")
		})
	}
}

// BenchmarkRecorderWrite is the writer goroutine's cost of a row in each
// format: writing 50 rows' buffer to a file (an MDF flush: the DT and DL
// blocks, then the links and counts in place).
func BenchmarkRecorderWrite(b *testing.B) {
	plan := recordPlan(b)
	layout := recording.LayoutOf(plan, nil)
	outs := [][]float64{{3}, {12.5}, {0.5, 0}, {2000, 3}, {1.25, 250}}
	ins := [][]float64{{1}, {0.25, 0}, {0}}
	for _, format := range []string{"csv", "mdf"} {
		b.Run(format, func(b *testing.B) {
			f, fm, err := OpenRecording(filepath.Join(b.TempDir(), "run"), "", format, false)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			w, _ := fm.Create(f, recording.Options{})
			buf := w.Header(nil, layout)
			var vals []float64
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				vals = layout.Flatten(vals, &recording.Entry{Time: float64(i)*0.005 + 0.123456, LocalTime: float64(i)*0.005 + 0.123456, Status: 3, ID: float64(i), ReplyID: float64(i + 1), Outputs: outs, Inputs: ins, Setpoints: []float64{20}})
				buf = w.Row(buf, 0, vals)
				if i%50 == 49 || i == b.N-1 {
					if _, lost, err := w.Write(buf, nil); err != nil || lost > 0 {
						b.Fatal(err)
					}
					buf = buf[:0]
				}
			}
			b.StopTimer()
			w.Close()
		})
	}
}

// fullFile is a file that takes room bytes and then fails like a full
// disk; freeing makes room again.
type fullFile struct {
	*os.File
	room atomic.Int64
}

func (d *fullFile) WriteAt(b []byte, at int64) (int, error) {
	if room := d.room.Load(); at+int64(len(b)) > room {
		n, _ := d.File.WriteAt(b[:max(0, room-at)], at)
		return n, syscall.ENOSPC
	}
	return d.File.WriteAt(b, at)
}

// A full disk under an MDF recording: reported when it happens, the rows
// counted lost, the file readable with what it holds, and recording goes
// on when there is room again.
func TestRecorderMDFFullDisk(t *testing.T) {
	plan := recordPlan(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "run.mf4"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	disk := &fullFile{File: f}
	disk.room.Store(1 << 30)
	w, err := mdf.NewRecording(disk, recording.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := &logBuffer{}
	r := NewRecorderOf(w, f.Name(), plan, log.Logger())
	outs := [][]float64{{3}, {12.5}, {0.5, 0}, {2000, 3}, {1.25, 250}}
	ins := [][]float64{{1}, {0.25, 0}, {0}}
	now := time.Now()
	rows := func(from, to int) {
		for i := from; i < to; i++ {
			r.Row(&recording.Entry{Time: float64(i) * 0.005, LocalTime: float64(i) * 0.005, Status: int(ports.Connected), ID: float64(i), ReplyID: float64(i + 1), Outputs: outs, Inputs: ins, Setpoints: []float64{20}})
			if i%50 == 49 {
				now = now.Add(time.Second)
				r.flushBy(now, flushEvery)
				writerIdle(r) // the writer took it and is done
			}
		}
	}
	rows(0, 100)
	st, _ := f.Stat()
	disk.room.Store(st.Size() + 1000) // less than 50 rows need
	rows(100, 200)
	if !log.Has("recording: a write failed (disk full?); the coupling goes on") {
		t.Fatalf("the full disk was not reported when it happened:\n%s", log)
	}
	disk.room.Store(1 << 30)
	rows(200, 300)
	if err := r.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close: %v, want the disk-full error", err)
	}
	mf := readMDF(t, f.Name())
	if got := int64(mf.Groups[0].Cycles); got != r.Written() || r.Written()+r.Lost() != 300 || r.Lost() == 0 || !mf.Finalized {
		t.Errorf("%d rows in the file; rows %d, written %d, lost %d", got, r.Rows(), r.Written(), r.Lost())
	}
}

// A disk full to the end of the run: the rows that did not fit are lost,
// and the file says so (issue 34): an event at the last row's time with how
// many, written into the room the file keeps for it, so a conversion or a
// plot of it is not taken for the whole run. Both readers read the file.
func TestRecorderMDFFullToTheEnd(t *testing.T) {
	plan := recordPlan(t)
	path := filepath.Join(t.TempDir(), "run.mf4")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	disk := &fullFile{File: f}
	disk.room.Store(1 << 30)
	w, err := mdf.NewRecording(disk, recording.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecorderOf(w, f.Name(), plan, nil)
	outs := [][]float64{{3}, {12.5}, {0.5, 0}, {2000, 3}, {1.25, 250}}
	ins := [][]float64{{1}, {0.25, 0}, {0}}
	now := time.Now()
	for i := range 400 {
		r.Row(&recording.Entry{Time: float64(i) * 0.005, Status: int(ports.Connected), ID: float64(i), ReplyID: float64(i + 1), Outputs: outs, Inputs: ins, Setpoints: []float64{20}})
		if i%50 == 49 {
			now = now.Add(time.Second)
			r.flushBy(now, flushEvery)
			writerIdle(r)
		}
		if i == 100 {
			st, _ := f.Stat()
			disk.room.Store(st.Size()) // full: nothing more fits
		}
	}
	if err := r.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close: %v, want the disk-full error", err)
	}
	mf := readMDF(t, path)
	if got := int64(mf.Groups[0].Cycles); got != r.Written() || r.Lost() < 299 || got+r.Lost() != 400 {
		t.Errorf("%d rows in the file, %d lost", got, r.Lost())
	}
	events, err := mdf.Events(path)
	if err != nil {
		t.Fatal(err)
	}
	said := false
	for _, e := range events {
		if e.Kind == recording.Lost && e.Time == 399*0.005 && strings.HasPrefix(e.Text, strconv.FormatInt(r.Lost(), 10)+" rows could not be written") {
			said = true
		}
	}
	if !said {
		t.Errorf("no event says %d rows were lost: %+v", r.Lost(), events)
	}
	mdftest.Agree(t, path)
}

// Memory does not grow with the run: recording five times as many rows
// leaves the heap as it was, in either format.
func TestRecorderMemoryFlat(t *testing.T) {
	plan := recordPlan(t)
	outs := [][]float64{{3}, {12.5}, {0.5, 0}, {2000, 3}, {1.25, 250}}
	ins := [][]float64{{1}, {0.25, 0}, {0}}
	for _, format := range []string{"csv", "mdf"} {
		t.Run(format, func(t *testing.T) {
			r, _ := formatRecorder(t, format, plan)
			defer r.Close()
			now := time.Now()
			i := 0
			rows := func(n int) {
				for end := i + n; i < end; i++ {
					r.Row(&recording.Entry{Time: float64(i) * 0.005, LocalTime: float64(i) * 0.005, Status: int(ports.Connected), ID: float64(i), ReplyID: float64(i + 1), Outputs: outs, Inputs: ins, Setpoints: []float64{20}})
					if i%50 == 49 {
						now = now.Add(250 * time.Millisecond)
						r.flushBy(now, flushEvery)
						for len(r.full) > 0 || len(r.free) < 2 {
							runtime.Gosched()
						}
					}
				}
			}
			heap := func() uint64 {
				var m runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m)
				return m.HeapAlloc
			}
			rows(20000)
			before := heap()
			rows(80000)
			if after := heap(); after > before+256<<10 {
				t.Errorf("the heap grew from %d to %d bytes over 80000 more rows", before, after)
			}
			if r.Lost() != 0 {
				t.Errorf("%d rows lost", r.Lost())
			}
		})
	}
}
