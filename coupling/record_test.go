package coupling

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/config/configtest"
	"beamconnect/internal/wine"
	"beamconnect/ports"
	"beamconnect/recording"
)

// fullDisk is a file that takes `room` bytes and then fails like a full
// disk, writing part of what it was given first; freeing makes room again.
type fullDisk struct {
	*os.File
	mu   sync.Mutex // the test frees room while the writer writes
	room int
}

func (d *fullDisk) Write(b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(b) <= d.room {
		d.room -= len(b)
		return d.File.Write(b)
	}
	n, _ := d.File.Write(b[:d.room])
	d.room = 0
	return n, syscall.ENOSPC
}

func (d *fullDisk) free(room int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.room = room
}

func recordPlan(t testing.TB) *ports.Plan {
	return configtest.Plan(t, "../examples/cruise-pedals.json")
}

// writerIdle waits until r's writer has written what it was handed and
// handed the batch back: both spare batches are free again. The caller
// is the goroutine that records (the only one that takes free batches).
func writerIdle(r *Recorder) {
	a := <-r.free
	b := <-r.free
	r.free <- a
	r.free <- b
}

// A full disk: the file keeps whole rows only, the rows that could not be
// written are counted, the error is logged when it happens, and recording
// goes on when there is room again.
func TestRecorderFullDisk(t *testing.T) {
	plan := recordPlan(t)
	f, _ := os.Create(filepath.Join(t.TempDir(), "run.csv"))
	defer f.Close()
	disk := &fullDisk{File: f, room: 2000}
	log := &logBuffer{}
	r := NewRecorder(disk, plan, log.Logger())
	outs := [][]float64{{3}, {12.5}, {0.5, 0}, {2000, 3}, {1.25, 250}}
	ins := [][]float64{{1}, {0.25, 0}, {0}}
	row := func(i int) {
		r.Row(&recording.Entry{Time: float64(i) * 0.005, LocalTime: float64(i) * 0.005, Status: int(ports.Connected), ID: float64(i), ReplyID: float64(i + 1), Outputs: outs, Inputs: ins, Setpoints: []float64{20}})
		r.flushBy(time.Now().Add(time.Duration(i)*time.Second), 250*time.Millisecond)
	}
	for i := range 100 {
		row(i)
	}
	// The rest handed over once the writer is free, as the coupling's loop
	// does, and written.
	writerIdle(r)
	r.flushBy(time.Now().Add(time.Hour), 250*time.Millisecond)
	writerIdle(r)
	if !log.Has("recording: a write failed (disk full?); the coupling goes on") {
		t.Fatalf("the full disk was not reported when it happened:\n%s", log)
	}
	disk.free(1 << 20) // room again
	for i := 100; i < 200; i++ {
		row(i)
	}
	err := r.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close: %v, want the disk-full error", err)
	}
	if r.Rows() != 200 || r.Written()+r.Lost() != 200 || r.Lost() == 0 || r.Written() < 100 {
		t.Errorf("rows %d, written %d, lost %d", r.Rows(), r.Written(), r.Lost())
	}
	b, _ := os.ReadFile(f.Name())
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if !bytes.HasSuffix(b, []byte("\n")) || int64(len(lines)) != r.Written()+1 {
		t.Fatalf("%d lines in the file for %d rows written", len(lines), r.Written())
	}
	want := strings.Count(lines[0], ",")
	for i, l := range lines {
		if strings.Count(l, ",") != want {
			t.Fatalf("line %d is not a whole row: %q", i+1, l)
		}
	}
}

// Rows are written out on a timer, while BeamNG is
// silent too; before, they waited for the next message, and a SIGKILL
// during a silence lost them.
func TestRecordFlushedWhileBeamNGSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, _ := os.Create(filepath.Join(t.TempDir(), "run.csv"))
		defer f.Close()
		var faults emulator.Faults
		emulator.ParseFault("pause=1500ms@500ms", &faults)
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"), em: emulator.Config{Steps: 1200, Faults: faults},
			opts: func(_ *harness, o *Options) { o.Record = NewRecorder(f, o.Plan, nil) }}.sim(t)
		var inFile, answered int64
		h.run(t, func(ctx context.Context) {
			for ctx.Err() == nil && h.c.Stats().Get(Messages) < 100 {
				time.Sleep(time.Millisecond)
			}
			// Well into BeamNG's pause: what has been answered is on disk.
			time.Sleep(800 * time.Millisecond)
			answered = h.c.Stats().Get(Replies)
			b, _ := os.ReadFile(f.Name())
			inFile = int64(bytes.Count(b, []byte("\n"))) - 1
		})
		if answered < 100 || inFile != answered {
			t.Errorf("during BeamNG's silence the file held %d rows of %d answered", inFile, answered)
		}
	})
}

// --record refuses the config being run, and files that are not a
// recording (of either format) unless forced; MDF 4 only to a regular file.
func TestOpenRecording(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rig.json")
	os.WriteFile(cfg, []byte(`{"version": 2}`), 0o644)
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("lab notes\n"), 0o644)
	old := filepath.Join(dir, "old.csv")
	os.WriteFile(old, []byte(recordHeader+",directive\n0,3,1,2,0,1\n"), 0o644)
	empty := filepath.Join(dir, "empty.csv")
	os.WriteFile(empty, nil, 0o644)
	// MDF files: one beamconnect wrote, one of another tool (a real
	// vehicle's measurement, say).
	ours, err := os.ReadFile("../recording/mdf/testdata/golden/run.mf4")
	if err != nil {
		t.Fatal(err)
	}
	oldMDF, theirs := filepath.Join(dir, "old.mf4"), filepath.Join(dir, "vehicle.mf4")
	os.WriteFile(oldMDF, ours, 0o644)
	other := append([]byte{}, ours...)
	copy(other[16:24], "CANape  ")
	os.WriteFile(theirs, other, 0o644)
	for _, tt := range []struct {
		name   string
		path   string
		force  bool
		want   string // "" for success
		format string
	}{
		{"a new file", filepath.Join(dir, "new.csv"), false, "", ""},
		{"an old recording", old, false, "", ""},
		{"an empty file", empty, false, "", ""},
		{"another file", notes, false, "the file exists and is not a recording", ""},
		{"another file, forced", notes, true, "", ""},
		{"the config", cfg, false, "is the config file being run", ""},
		{"the config, forced", cfg, true, "is the config file being run", ""},
		{"a device", "/dev/null", false, "not a regular file", ""},
		{"a device, forced", "/dev/null", true, "", ""},
		{"an old MDF recording", oldMDF, false, "", ""},
		{"another tool's MDF", theirs, false, "the file exists and is not a recording", ""},
		{"another tool's MDF, forced", theirs, true, "", ""},
		{"a device, forced, as MDF", "/dev/null", true, "not a regular file: the mdf format writes in place", "mdf"},
		{"an unknown format", filepath.Join(dir, "new.csv"), false, `recording format "xls": expected one of csv, mdf`, "xls"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, _, err := OpenRecording(tt.path, cfg, tt.format, tt.force)
			if f != nil {
				f.Close()
			}
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("%s (force %v): %v, want %q", tt.path, tt.force, err, tt.want)
			}
		})
	}
	if b, _ := os.ReadFile(cfg); string(b) != `{"version": 2}` {
		t.Errorf("the config was touched: %q", b)
	}
	t.Run("spelt otherwise", func(t *testing.T) {
		// Windows' names ignore case and take either slash: each of these
		// is the config, and must be refused as it is.
		if runtime.GOOS != "windows" {
			t.Skip("names that differ only in case or slashes are one file on Windows only")
		}
		for _, p := range []string{strings.ToUpper(cfg), strings.ToLower(cfg), filepath.ToSlash(cfg), dir + `\x\..\rig.json`} {
			if f, _, err := OpenRecording(p, cfg, "", true); err == nil || !strings.Contains(err.Error(), "is the config file being run") {
				if f != nil {
					f.Close()
				}
				t.Errorf("%s (force true): %v, want \"is the config file being run\"", p, err)
			}
		}
		if b, _ := os.ReadFile(cfg); string(b) != `{"version": 2}` {
			t.Errorf("the config was touched: %q", b)
		}
	})
	t.Run("through a symbolic link", func(t *testing.T) {
		link := filepath.Join(dir, "link.json")
		wine.Symlink(t, cfg, link)
		f, _, err := OpenRecording(link, cfg, "", true)
		if f != nil {
			f.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "is the config file being run") {
			t.Errorf("%s (force true): %v, want \"is the config file being run\"", link, err)
		}
		if b, _ := os.ReadFile(cfg); string(b) != `{"version": 2}` {
			t.Errorf("the config was touched: %q", b)
		}
	})
}

// stuck is a destination that takes nothing: a hung network disk, a pipe
// nobody reads.
type stuck struct{ release chan struct{} }

func (s stuck) Write(b []byte) (int, error) {
	<-s.release
	return len(b), nil
}

// A recording destination that blocks is said while the run goes on: once
// the writer has held its rows for a second, and again when rows are lost
// (the writer 8 MB behind), each said once however many rows follow. It
// does not hold the run's end: Close gives up after its bound, the rows not
// written are counted lost, and the error says so at once.
func TestRecorderBlockedDestination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dest := stuck{make(chan struct{})}
		defer close(dest.release)
		log := &logBuffer{}
		r := NewRecorder(dest, recordPlan(t), log.Logger())
		defer r.Close() // on a failure: the writer let go
		outs := [][]float64{{3}, {12.5}, {0.5, 0}, {2000, 3}, {1.25, 250}}
		ins := [][]float64{{1}, {0.25, 0}, {0}}
		start := time.Now()
		row := func(i int) {
			r.Row(&recording.Entry{Time: float64(i) * 0.005, LocalTime: float64(i) * 0.005, Status: int(ports.Connected), ID: float64(i), ReplyID: float64(i + 1), Outputs: outs, Inputs: ins, Setpoints: []float64{20}})
			r.flushBy(start.Add(time.Duration(i)*5*time.Millisecond), 250*time.Millisecond) // BeamNG's pace
		}
		const stalls = "recording: the destination takes no rows"
		i := 0
		for ; i < 1000 && !log.Has(stalls); i++ {
			row(i)
			synctest.Wait() // the writer has taken what it was handed, and blocks in it
		}
		// The writer took the first row at once and holds it; the second
		// hand-over (250 ms) waits for it; the third (500 ms) is refused,
		// and a second later (row 300) that is said.
		if !log.Has(stalls) || i != 301 || r.Lost() != 0 {
			t.Fatalf("after %d rows (%v of BeamNG's), lost %d; log:\n%s", i, time.Duration(i)*5*time.Millisecond, r.Lost(), log)
		}
		for ; r.Lost() < 1000 && i < 1_000_000; i++ {
			row(i)
		}
		if r.Lost() < 1000 || strings.Count(log.String(), "recording: rows are lost: the destination is too far behind") != 1 || strings.Count(log.String(), stalls) != 1 {
			t.Fatalf("after %d rows, lost %d; log:\n%s", i, r.Lost(), log)
		}
		kept, lost := r.Rows(), r.Lost()
		start = time.Now()
		err := r.Close()
		if waited := time.Since(start); waited != closeWait {
			t.Errorf("Close waited %v, want its bound %v", waited, closeWait)
		}
		if err == nil || !strings.Contains(err.Error(), "took no rows") || r.Lost() != kept+lost || r.Written() != 0 {
			t.Errorf("Close: %v; rows %d, written %d, lost %d", err, r.Rows(), r.Written(), r.Lost())
		}
		if !log.Has("the destination blocks") {
			t.Errorf("log:\n%s", log)
		}
	})
}

// With several vehicles every vehicle's loop records rows into one file:
// each row whole, none torn by another vehicle's loop flushing the buffer.
func TestFleetRecordingRowsWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, _ := os.Create(filepath.Join(t.TempDir(), "run.csv"))
		defer f.Close()
		h := rig{cfg: load(t, "../examples/follow.json"), starts: []int64{0, 6}, place: [][3]float64{{0, 0, 0}, {40, 0, 0}},
			em: emulator.Config{Steps: 40000}, opts: func(_ *harness, o *Options) { o.Record = NewRecorder(f, o.Plan, nil) }}.sim(t)
		h.run(t)
		b, _ := os.ReadFile(f.Name())
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		want := strings.Count(lines[0], ",")
		for i, l := range lines {
			if strings.Count(l, ",") != want {
				t.Fatalf("line %d of %d is torn: %q", i+1, len(lines), l)
			}
		}
		if v := h.s.Values(); int64(len(lines)-1) != v[Replies] {
			t.Errorf("%d rows for %d replies", len(lines)-1, v[Replies])
		}
	})
}

// The scope's columns carry the units the live page splits its plots by:
// rpm and gear, time and a serial number, a time to collision and a gap
// each land on an axis of their own unit.
func TestScopeColumnUnits(t *testing.T) {
	for _, tc := range []struct {
		file string
		want map[string]string // column → unit
	}{
		{"../examples/cruise-pedals.json", map[string]string{
			"status": "", "out1.groundspeed": "m/s", "out3.rpm": "1/min", "out3.gear": "",
			"out4.time": "s", "out4.serial_number": "", "directive": "",
		}},
		{"../examples/follow.json", map[string]string{
			"out2.ego.timeToCollision:lead": "s", "out2.ego.timeGap:lead": "s", "out2.ego.gap:lead": "m",
			"out2.ego.closingSpeed:lead": "m/s", "out1.ego.groundspeed": "m/s",
		}},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			plan, err := config.Compile(load(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, c := range ScopeColumns(plan, nil) {
				got[c.Name] = c.Unit
			}
			for name, unit := range tc.want {
				if u, ok := got[name]; !ok {
					t.Errorf("%s: no column %s in %v", tc.file, name, got)
				} else if u != unit {
					t.Errorf("%s: %s has unit %q, want %q", tc.file, name, u, unit)
				}
			}
		})
	}
}

// The recording holds what BeamNG got: with two vehicles stepping one
// model (each vehicle's step computes both vehicles' controls), every
// recorded control of a row's vehicle equals, value for value, what
// BeamNG's side received in the reply of that row's reply id, as its
// receive log has it. A row taken after the reply went out could show
// the other vehicle's step instead.
func TestRecordingIsTheReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var rec bytes.Buffer
		h := rig{cfg: load(t, "../examples/follow.json"), starts: []int64{0, 0}, place: [][3]float64{{0, 0, 0}, {40, 0, 0}},
			em: emulator.Config{Steps: 20000}, debugLogs: dir,
			opts: func(_ *harness, o *Options) { o.Record = NewRecorder(&rec, o.Plan, nil) }}.sim(t)
		h.run(t)
		all, err := csv.NewReader(&rec).ReadAll()
		if err != nil || len(all) < 2 {
			t.Fatalf("recording: %v, %d lines", err, len(all))
		}
		col := map[string]int{}
		for i, name := range all[0] {
			col[name] = i
		}
		// Each vehicle's controls: the recording's column, the reply's slot.
		type control struct {
			column string
			slot   int
		}
		controls := map[string][]control{}
		layout := recording.LayoutOf(h.plan, nil)
		for _, c := range layout.Columns {
			if c.Role != recording.Field || c.Out {
				continue
			}
			for _, f := range h.plan.Inputs[c.Port].Fields {
				if c.Elem >= f.Offset && c.Elem < f.Offset+f.Width && f.Vehicle == c.Vehicle {
					name := h.plan.Vehicles[c.Vehicle].Name
					controls[name] = append(controls[name], control{c.Name, f.Slot + c.Elem - f.Offset})
				}
			}
		}
		// What each vehicle's BeamNG received, by reply id (the first).
		got := map[string]map[string][]string{}
		for v, veh := range h.plan.Vehicles {
			f, err := os.Open(filepath.Join(dir, strconv.Itoa(v), emulator.ReceiveLogName))
			if err != nil {
				t.Fatal(err)
			}
			lines, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			got[veh.Name] = map[string][]string{}
			for _, l := range lines[1:] {
				if _, seen := got[veh.Name][l[1]]; !seen {
					got[veh.Name][l[1]] = l[1:] // slot 0 is the id
				}
			}
		}
		checked, differ := 0, 0
		for i, row := range all[1:] {
			veh := row[col["vehicle"]]
			reply, ok := got[veh][row[col["reply_id"]]]
			if !ok {
				continue // the run ended before BeamNG's side read it
			}
			if len(controls[veh]) == 0 {
				t.Fatalf("vehicle %q has no controls in %q", veh, all[0])
			}
			for _, c := range controls[veh] {
				checked++
				rv, _ := strconv.ParseFloat(row[col[c.column]], 64)
				bv, _ := strconv.ParseFloat(reply[c.slot], 64)
				if rv != bv && !(math.IsNaN(rv) && math.IsNaN(bv)) {
					if differ++; differ <= 5 {
						t.Errorf("row %d (%s, reply id %s): %s recorded %v, BeamNG got %v", i+1, veh, row[col["reply_id"]], c.column, rv, bv)
					}
				}
			}
		}
		if differ > 0 {
			t.Errorf("%d of %d recorded controls are not what BeamNG got", differ, checked)
		}
		if want := 2 * 2 * 1900; checked < want {
			t.Errorf("%d controls checked against BeamNG's receive log, want at least %d", checked, want)
		}
	})
}
