package mdf

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"beamconnect/recording"
	"beamconnect/recording/mdf/mdftest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// memFile is a file in memory that keeps every write, so a test can see
// the file as it was after any of them; past room bytes it fails like a
// full disk.
type memFile struct {
	b      []byte
	writes []write
	room   int64 // 0: no limit
}

type write struct {
	at   int64
	data []byte
}

func (m *memFile) WriteAt(p []byte, at int64) (int, error) {
	if m.room > 0 && at+int64(len(p)) > m.room {
		n := max(0, int(m.room-at))
		m.put(p[:n], at)
		return n, syscall.ENOSPC
	}
	m.put(p, at)
	return len(p), nil
}

func (m *memFile) put(p []byte, at int64) {
	if end := at + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	copy(m.b[at:], p)
	m.writes = append(m.writes, write{at, slices.Clone(p)})
}

func (m *memFile) Truncate(n int64) error {
	m.b = m.b[:min(n, int64(len(m.b)))]
	m.writes = append(m.writes, write{at: -n - 1})
	return nil
}

// after is the file as it was after the first n writes.
func (m *memFile) after(n int) []byte {
	var b []byte
	for _, w := range m.writes[:n] {
		if w.at < 0 {
			b = b[:min(int64(len(b)), -w.at-1)]
			continue
		}
		if end := w.at + int64(len(w.data)); end > int64(len(b)) {
			b = append(b, make([]byte, end-int64(len(b)))...)
		}
		copy(b[w.at:], w.data)
	}
	return b
}

// runLayout is a one-vehicle layout like the cruise example's.
func runLayout(extra bool) *recording.Layout {
	l := &recording.Layout{Vehicles: []string{""}, Columns: []recording.Column{
		{Name: "time", Unit: "s", Role: recording.Time, Vehicle: -1},
		{Name: "status", Role: recording.Own, Vehicle: -1, Out: true, Comment: "connection status"},
		{Name: "id", Role: recording.Own, Vehicle: -1, Out: true},
		{Name: "reply_id", Role: recording.Own, Vehicle: -1},
		{Name: "reloads", Role: recording.Own, Vehicle: -1, Out: true},
		{Name: "out1.groundspeed", Unit: "m/s", Comment: "speed over ground [B7]", Role: recording.Field, Out: true},
		{Name: "directive", Role: recording.Own, Vehicle: -1},
		{Name: "in1.throttle", Comment: "throttle pedal, 0 to 1 [A1]", Role: recording.Field},
	}}
	if extra {
		cols := slices.Clone(l.Columns[:6])
		cols = append(cols, recording.Column{Name: "out1.rpm", Unit: "1/min", Role: recording.Field, Out: true})
		l.Columns = append(cols, l.Columns[6:]...)
	}
	return l
}

// fleetLayout is a two-vehicle layout like the follow example's.
func fleetLayout() *recording.Layout {
	return &recording.Layout{Vehicles: []string{"ego", "lead"}, Columns: []recording.Column{
		{Name: "time", Unit: "s", Role: recording.Time, Vehicle: -1},
		{Name: "vehicle", Role: recording.Vehicle, Vehicle: -1},
		{Name: "status", Role: recording.Own, Vehicle: -1, Out: true},
		{Name: "id", Role: recording.Own, Vehicle: -1, Out: true},
		{Name: "reply_id", Role: recording.Own, Vehicle: -1},
		{Name: "reloads", Role: recording.Own, Vehicle: -1, Out: true},
		{Name: "out1.ego.groundspeed", Unit: "m/s", Role: recording.Field, Vehicle: 0, Out: true},
		{Name: "out1.lead.groundspeed", Unit: "m/s", Role: recording.Field, Vehicle: 1, Out: true},
		{Name: "out2.ego.gap:lead", Unit: "m", Role: recording.Field, Vehicle: 0, Out: true},
		{Name: "directive", Role: recording.Own, Vehicle: -1},
		{Name: "in1.ego.throttle", Role: recording.Field, Vehicle: 0},
		{Name: "in1.lead.throttle", Role: recording.Field, Vehicle: 1},
	}}
}

var start = time.Date(2026, 11, 26, 9, 30, 0, 0, time.UTC)

// writeRun records a small run: rows at 200 Hz with a flush every 10, a
// reload that adds a field after 20 rows, a model fault from 0.1 s to
// 0.125 s, a status change, and finalizes unless open is set.
func writeRun(t *testing.T, f Output, open bool, flushed ...func()) *Recording {
	t.Helper()
	r, err := NewRecording(f, recording.Options{Start: start, Version: "test", Config: []byte(`{"version": 2}`), ConfigName: "rig.json"})
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	var events []recording.Event
	buf = r.Header(buf, runLayout(false))
	for i := range 40 {
		tm := float64(i) * 0.005
		if i == 20 {
			buf = r.Header(buf, runLayout(true))
			events = append(events, recording.Event{Time: tm, Vehicle: -1, Kind: recording.Reload, Name: "reload", Text: "out 1 re-mapped: [groundspeed@B7] → [groundspeed@B7, rpm@C9]", Config: []byte(`{"version": 2, "rpm": true}`)})
		}
		switch i {
		case 0:
			events = append(events, recording.Event{Time: tm, Vehicle: 0, Kind: recording.StatusChange, Name: "status connected", Text: "connection status 3 (connected), was connecting"})
		case 20:
			events = append(events, recording.Event{Time: tm, Vehicle: -1, Kind: recording.FaultBegin, Name: "model fault", Text: "the model's step ran longer than the model timeout"})
		case 25:
			events = append(events, recording.Event{Time: tm, Vehicle: -1, Kind: recording.FaultEnd, Name: "model fault", Text: "the model recovered after 25ms"})
		}
		vals := []float64{tm, 3, float64(i), float64(i + 1), 0, float64(i) * 0.1, 1, 0.5}
		if i >= 20 {
			vals = []float64{tm, 3, float64(i), float64(i + 1), 1, float64(i) * 0.1, 800 + float64(i), 1, 0.5}
		}
		buf = r.Row(buf, 0, vals)
		if i%10 == 9 {
			if _, _, err := r.Write(buf, events); err != nil {
				t.Fatal(err)
			}
			buf, events = buf[:0], events[:0]
			for _, fn := range flushed {
				fn()
			}
		}
	}
	if !open {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// writeFleet records two vehicles, their messages interleaved.
func writeFleet(t *testing.T, f Output) {
	t.Helper()
	r, err := NewRecording(f, recording.Options{Start: start, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	buf := r.Header(nil, fleetLayout())
	for i := range 10 {
		for v := range 2 {
			tm := float64(i)*0.005 + float64(v)*0.001
			buf = r.Row(buf, v, []float64{tm, math.NaN(), 3, float64(i), float64(i + 1), 0, 10 + float64(i), 12, 40 - float64(i), 1, 0.25, 0.5})
		}
	}
	if _, _, err := r.Write(buf, []recording.Event{{Time: 0.02, Vehicle: 1, Kind: recording.Diagnosis, Name: "diagnosis", Text: "BeamNG's messages are longer than this coupling's layout"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// The byte layout of small recordings stays as it is: a change to it must
// be meant (go test ./recording/mdf -run Golden -update), and checked by the
// independent readers, which read the golden files alike.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(Output)
	}{
		{"run.mf4", func(f Output) { writeRun(t, f, false) }},
		{"unfinished.mf4", func(f Output) { writeRun(t, f, true) }},
		{"fleet.mf4", func(f Output) { writeFleet(t, f) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f memFile
			tc.write(&f)
			path := filepath.Join("testdata", "golden", tc.name)
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				os.WriteFile(path, f.b, 0o644)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(f.b, want) {
				t.Errorf("%s: %d bytes differ from the golden file's %d (first at 0x%x)", tc.name, len(f.b), len(want), firstDiff(f.b, want))
			}
			dump := mdftest.Agree(t, path)
			if dump == "" {
				return
			}
			dumpPath := strings.TrimSuffix(path, ".mf4") + ".dump"
			if *update {
				os.WriteFile(dumpPath, []byte(dump+"\n"), 0o644)
			}
			if wantDump, _ := os.ReadFile(dumpPath); strings.TrimSpace(string(wantDump)) != dump {
				t.Errorf("the readers read %s otherwise than before:\n%s", tc.name, dump)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// What the independent readers read is what was written: units, value
// texts, the reload's new groups, the fault as a range, the fleet's groups
// named by vehicle.
func TestReadersSeeTheRecording(t *testing.T) {
	run := mdftest.Agree(t, filepath.Join("testdata", "golden", "run.mf4"))
	fleet := mdftest.Agree(t, filepath.Join("testdata", "golden", "fleet.mf4"))
	if run == "" {
		t.Skip("no independent MDF reader here")
	}
	for _, want := range []string{
		`DG 0 CG 0 name="from BeamNG" samples=20 channels=5 master="time"`,
		`DG 2 CG 0 name="from BeamNG" samples=20 channels=6 master="time"`,
		`CN 0/0 "out1.groundspeed" unit="m/s" type=float64`,
		`CN 2/0 "out1.rpm" unit="1/min" type=float64`,
		`CN 0/0 "status" unit="" type=uint8 ctype=fixed sync=none conv=7 n=20`,
		`first=["connected", "connected", "connected"]`,
		`CN 0/0 "time" unit="s" type=float64 ctype=master sync=time`,
		`EV 1 name="reload" type=6 sync=1 range=0 cause=4 value=0.10000000000000001`,
		`EV 2 name="model fault" type=6 sync=1 range=1 cause=1`,
		`EV 3 name="model fault" type=6 sync=1 range=2 cause=1 value=0.125`,
	} {
		if !strings.Contains(run, want) {
			t.Errorf("run.mf4: the readers do not read %s:\n%s", want, run)
		}
	}
	for _, want := range []string{`name="ego: from BeamNG" samples=10`, `name="lead: to BeamNG" samples=10`,
		`CN 2/0 "out1.lead.groundspeed" unit="m/s"`, `EV 0 name="diagnosis"`} {
		if !strings.Contains(fleet, want) {
			t.Errorf("fleet.mf4: the readers do not read %s:\n%s", want, fleet)
		}
	}
}

// The file is readable after every single write the writer makes, as a
// run killed at that moment leaves it: unfinalized, with everything linked
// by then, never less than what the last completed flush linked. This
// package's reader reads every state; the independent readers each read
// every few states, and read alike the states a flush completed. (Between
// a flush's link and its count, the ID block's flag asks a reader to count
// the records itself: mdfcheck.py does, as the standard asks; mdflib keeps
// the count written, the previous flush's rows. Both are whole readings.)
func TestReadableAfterEveryWrite(t *testing.T) {
	var f memFile
	var flushes []int
	writeRun(t, &f, false, func() { flushes = append(flushes, len(f.writes)) })
	flushes = append(flushes, len(f.writes))
	dir := t.TempDir()
	last, done := -1, 0
	for n := 1; n <= len(f.writes); n++ {
		b := f.after(n)
		if len(b) < 64+hdSize {
			continue // the header is one write: before it, no file
		}
		mf, err := Read(bytes.NewReader(b), int64(len(b)), "state")
		if err != nil {
			t.Fatalf("after write %d of %d: %v", n, len(f.writes), err)
		}
		rows := 0
		for _, g := range mf.Groups {
			if strings.HasSuffix(g.Name, fromName) {
				rows += int(g.Cycles)
			}
		}
		if rows < last {
			t.Fatalf("after write %d: %d rows, fewer than the %d before", n, rows, last)
		}
		last = rows
		if n == len(f.writes) != mf.Finalized {
			t.Fatalf("after write %d of %d: finalized %v", n, len(f.writes), mf.Finalized)
		}
		p := filepath.Join(dir, "state.mf4")
		if slices.Contains(flushes, n) {
			done += 10
			if rows != done && n < len(f.writes) {
				t.Fatalf("after flush %d: %d rows, want %d", done/10, rows, done)
			}
			os.WriteFile(p, b, 0o644)
			mdftest.Agree(t, p)
		} else if n%7 == 0 {
			os.WriteFile(p, b, 0o644)
			for _, r := range mdftest.Readers(t) {
				if _, err := mdftest.Dump(r, p); err != nil {
					t.Fatalf("after write %d of %d: %v", n, len(f.writes), err)
				}
			}
		}
	}
	if last != 40 {
		t.Errorf("the finished file has %d rows, want 40", last)
	}
}

// A full disk: the write that does not fit is cut off again, its rows are
// counted lost, the file stays readable with what came before, and later
// rows are written when there is room again.
func TestFullDisk(t *testing.T) {
	f := &memFile{}
	r, err := NewRecording(f, recording.Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	buf := r.Header(nil, runLayout(false))
	rows := func(from, n int) {
		for i := from; i < from+n; i++ {
			buf = r.Row(buf, 0, []float64{float64(i) * 0.005, 3, float64(i), float64(i + 1), 0, 1, 1, 0.5})
		}
	}
	rows(0, 10)
	if w, l, err := r.Write(buf, nil); w != 10 || l != 0 || err != nil {
		t.Fatalf("written %d, lost %d, %v", w, l, err)
	}
	buf = buf[:0]
	f.room = int64(len(f.b)) + 100 // less than the next flush needs
	rows(10, 10)
	w, l, err := r.Write(buf, nil)
	if w != 0 || l != 10 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("on a full disk: written %d, lost %d, %v", w, l, err)
	}
	size := len(f.b)
	mf, err := Read(bytes.NewReader(f.b), int64(size), "full")
	if err != nil || mf.Groups[0].Cycles != 10 {
		t.Fatalf("after the failed write: %v, %+v", err, mf)
	}
	f.room = 0
	buf = buf[:0]
	rows(20, 10)
	if w, l, err := r.Write(buf, nil); w != 10 || l != 0 || err != nil {
		t.Fatalf("with room again: written %d, lost %d, %v", w, l, err)
	}
	r.Close()
	mf, err = Read(bytes.NewReader(f.b), int64(len(f.b)), "full")
	if err != nil || mf.Groups[0].Cycles != 20 || !mf.Finalized {
		t.Fatalf("finished: %v, %+v", err, mf)
	}
}

// Rows cost no allocation.
func TestRowAllocs(t *testing.T) {
	r, err := NewRecording(&memFile{}, recording.Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	buf := r.Header(make([]byte, 0, 1<<20), fleetLayout())
	vals := []float64{0, math.NaN(), 3, 1, 2, 0, 10, 12, 40, 1, 0.25, 0.5}
	if a := testing.AllocsPerRun(1000, func() {
		buf = r.Row(buf[:0], 1, vals)
	}); a != 0 {
		t.Errorf("%v allocations per row", a)
	}
}

// Broken files are refused with the block and what was expected.
func TestReadErrors(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "golden", "run.mf4"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := Read(bytes.NewReader(good), int64(len(good)), "run.mf4")
	if err != nil {
		t.Fatal(err)
	}
	cg := mf.Groups[0].at
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
		want string
	}{
		{"not MDF", func(b []byte) []byte { copy(b, "MDX     "); return b }, `run.mf4: not an MDF file: it starts "MDX     "`},
		{"MDF 3", func(b []byte) []byte { b[28] = 0x2c; b[29] = 1; return b }, "run.mf4: MDF version 300: only MDF 4 is read"},
		{"short", func(b []byte) []byte { return b[:100] }, "run.mf4: 100 bytes: too short for an MDF 4 file (an ID and a header block)"},
		{"cut", func(b []byte) []byte { return b[:len(b)-40] }, "points outside the file"},
		{"count", func(b []byte) []byte { b[cg+cgCycles]++; return b }, `run.mf4: block at 0x` + hex(cg) + `: channel group "from BeamNG": 21 records of 29 bytes, but its data blocks hold 580 bytes`},
		{"unsorted", func(b []byte) []byte { b[mf.Groups[0].at-dgSize+headerSize+dgLinks*8] = 1; return b }, "an unsorted data group (record ids of 1 bytes): sort the file first"},
		{"header", func(b []byte) []byte { copy(b[hdAt:], "##HX"); return b }, `run.mf4: block at 0x40: expected a HD block, found "##HX"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.edit(slices.Clone(good))
			_, err := Read(bytes.NewReader(b), int64(len(b)), "run.mf4")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
			}
		})
	}
}

func hex(n int64) string { return fmtHex(n) }

func fmtHex(n int64) string {
	const digits = "0123456789abcdef"
	var b []byte
	for n > 0 {
		b = append([]byte{digits[n%16]}, b...)
		n /= 16
	}
	return string(b)
}

// The reader refuses or reads any input without panicking, looping or
// allocating beyond the input's size.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"run.mf4", "unfinished.mf4", "fleet.mf4"} {
		b, err := os.ReadFile(filepath.Join("testdata", "golden", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		mf, err := Read(bytes.NewReader(b), int64(len(b)), "fuzz")
		if err != nil {
			return
		}
		for _, g := range mf.Groups {
			mf.records(g, func(rec []byte) error {
				for _, c := range g.Channels {
					if c.Unsupported == "" {
						c.Value(rec)
					}
				}
				return nil
			})
		}
		scan(mf, func(*recording.Header) error { return nil }, func(*recording.Header, *recording.Row) error { return nil })
	})
}
