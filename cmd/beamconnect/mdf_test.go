package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"beamconnect/config/configtest"
	"beamconnect/internal/eventually"
	"beamconnect/recording"
	"beamconnect/recording/mdf"
	"beamconnect/recording/mdf/mdftest"
)

// mdfRows is how many rows (messages) this package's reader finds in an
// MDF recording, 0 while it cannot read it yet.
func mdfRows(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	st, _ := f.Stat()
	mf, err := mdf.Read(f, st.Size(), path)
	if err != nil {
		return 0
	}
	n := 0
	for _, g := range mf.Groups {
		if strings.HasSuffix(g.Name, "from BeamNG") {
			n += int(g.Cycles)
		}
	}
	return n
}

// samples adds up the samples of the dump's groups named like name.
func samples(t *testing.T, dump, name string) int {
	t.Helper()
	re := regexp.MustCompile(`name="` + regexp.QuoteMeta(name) + `" samples=(\d+)`)
	n := 0
	for _, m := range re.FindAllStringSubmatch(dump, -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	return n
}

// A cruise run with a live reload recorded to .mf4: the independent
// readers read it alike, with units, one sample per message, the reload as
// an event (and new channel groups for the field it added), the config
// attached; plot and convert read it as they read CSV.
func TestRecordMDFCruiseReload(t *testing.T) {
	parallelOffWine(t)
	dir := t.TempDir()
	rig := filepath.Join(dir, "rig.json")
	src, _ := os.ReadFile("../../examples/cruise-pedals.json")
	src = []byte(strings.Replace(string(src), `"$schema": "../schemas/config.schema.json",`, "", 1))
	os.WriteFile(rig, src, 0o644)
	rec := filepath.Join(dir, "run.mf4")
	go func() {
		// Once rows are on disk, log the fuel as well.
		eventually.True(time.Minute, func() bool { return mdfRows(rec) >= 20 })
		os.WriteFile(rig, []byte(strings.Replace(string(src), `{ "propertyName": "gear" }`, `{ "propertyName": "gear" }, { "propertyName": "fuel" }`, 1)), 0o644)
	}()
	// Paced, so that the reload lands while the run goes on; 2 s of
	// BeamNG's time, so that a loaded machine records the same 400
	// messages (a wall-clock 2 s recorded 287 under Wine beside CI's load).
	out, errOut, code := exec(t, nil, "run", "--json", rig, "--emulate", "--sim-duration", "2s", "--record", rec)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var sum struct {
		Replies int
		Reloads int
		Written int `json:"record_written"`
	}
	json.Unmarshal([]byte(out), &sum)
	if sum.Reloads != 1 {
		t.Fatalf("reloads %d\n%s", sum.Reloads, errOut)
	}
	if n := mdfRows(rec); n != sum.Replies || n < 300 {
		t.Errorf("%d rows read for %d replies", n, sum.Replies)
	}
	dump := mdftest.Agree(t, rec)
	if dump != "" {
		if n := samples(t, dump, "from BeamNG"); n != sum.Replies {
			t.Errorf("the readers read %d samples for %d messages", n, sum.Replies)
		}
		if n := samples(t, dump, "to BeamNG"); n != sum.Replies {
			t.Errorf("the readers read %d replies' samples for %d replies", n, sum.Replies)
		}
		for _, want := range []string{`"out1.groundspeed" unit="m/s" type=float64`, `"out3.rpm" unit="1/min"`,
			`CN 2/0 "out3.fuel"`, `name="reload" type=6 sync=1 range=0 cause=4`, `"status" unit="" type=uint8 ctype=fixed sync=none conv=7`} {
			if !strings.Contains(dump, want) {
				t.Errorf("the readers do not read %s:\n%s", want, dump)
			}
		}
	}
	// The config that ran is attached, with the one the reload applied.
	f, _ := os.Open(rec)
	st, _ := f.Stat()
	mf, err := mdf.Read(f, st.Size(), rec)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(mf.Attachments) != 2 || !bytes.Equal(mf.Attachments[0].Data, src) || !strings.Contains(string(mf.Attachments[1].Data), "fuel") {
		t.Errorf("attachments %d: %+v", len(mf.Attachments), mf.Attachments)
	}
	if _, errOut, code := exec(t, nil, "plot", rec); code != exitOK || !strings.Contains(errOut, "reload") && !strings.Contains(errOut, "wrote") {
		t.Errorf("plot: exit %d\n%s", code, errOut)
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "run.svg"))
	if !strings.Contains(string(svg), "added out3.fuel") || !strings.Contains(string(svg), `data-field="out3.fuel"`) {
		t.Errorf("the plot shows no reload or no fuel")
	}
}

// A two-vehicle run's recording names both vehicles' channel groups.
func TestRecordMDFFleet(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "follow.mf4")
	if _, errOut, code := exec(t, nil, "run", "../../examples/follow.json", "--emulate", "--free-running", "--sim-duration", "1s", "--record", rec); code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	dump := mdftest.Agree(t, rec)
	if dump == "" {
		t.Skip("no independent MDF reader here")
	}
	for _, want := range []string{`name="ego: from BeamNG"`, `name="ego: to BeamNG"`, `name="lead: from BeamNG"`, `name="lead: to BeamNG"`,
		`"out2.ego.gap:lead" unit="m"`} {
		if !strings.Contains(dump, want) {
			t.Errorf("the readers do not read %s:\n%s", want, dump)
		}
	}
}

// convert turns a CSV recording into MDF 4 and back to the same bytes,
// and refuses to write over what is not a recording. (A several-vehicle
// recording comes back with each vehicle's values at its own messages, in
// time order: see the command's help.)
func TestConvert(t *testing.T) {
	dir := t.TempDir()
	csvFile, mf4, back := filepath.Join(dir, "run.csv"), filepath.Join(dir, "run.mf4"), filepath.Join(dir, "back.csv")
	if _, errOut, code := exec(t, nil, "run", "../../examples/cruise-pedals.json", "--emulate", "--free-running", "--sim-duration", "1s", "--record", csvFile); code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, args := range [][]string{{csvFile, mf4}, {mf4, back}} {
		if _, errOut, code := exec(t, nil, "convert", args[0], args[1]); code != exitOK {
			t.Fatalf("convert %v: exit %d\n%s", args, code, errOut)
		}
	}
	a, _ := os.ReadFile(csvFile)
	b, _ := os.ReadFile(back)
	if !bytes.Equal(a, b) || len(a) < 1000 {
		t.Errorf("CSV → MDF 4 → CSV changed the recording (%d → %d bytes)", len(a), len(b))
	}
	mdftest.Agree(t, mf4)
	link, linkWant := filepath.Join(dir, "link.csv"), "link.csv is the recording "+csvFile+" itself"
	err := os.Symlink(csvFile, link)
	if err == nil {
		// Wine's CreateSymbolicLink reports success and makes no link.
		_, err = os.Readlink(link)
	}
	if err != nil {
		t.Logf("no symbolic link here (%v): the link's row is a file that is no recording", err)
		os.WriteFile(link, []byte("lab notes\n"), 0o644)
		linkWant = "link.csv: the file exists and is not a recording"
	}
	notes := filepath.Join(dir, "notes.mf4")
	os.WriteFile(notes, []byte("lab notes\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{csvFile, csvFile}, "is the recording " + csvFile + " itself"},
		{[]string{csvFile, link}, linkWant},
		{[]string{csvFile, notes}, "notes.mf4: the file exists and is not a recording"},
		{[]string{notes, back}, "notes.mf4: 10 bytes: too short for an MDF 4 file"},
		{[]string{csvFile}, "expected a recording and the file to write"},
	} {
		t.Run(argsName(tc.args), func(t *testing.T) {
			_, errOut, code := exec(t, nil, append([]string{"convert"}, tc.args...)...)
			if code == exitOK || !strings.Contains(errOut, tc.want) {
				t.Errorf("convert %v: exit %d, %s; want %q", tc.args, code, errOut, tc.want)
			}
		})
	}
}

// What a recording says of its run stays said: converted, the rows lost to
// a full disk and the run's faults are named on stderr (a CSV has no place
// for them); plotted, a loop that held is not called good, in the headline
// or on stderr, and the faults are listed.
func TestRecordingSaysItsLosses(t *testing.T) {
	dir := t.TempDir()
	plan := configtest.Plan(t, pedals)
	path := filepath.Join(dir, "run.mf4")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := mdf.NewRecording(f, recording.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lay := recording.LayoutOf(plan, nil)
	buf := w.Header(nil, lay)
	outs := [][]float64{{3}, {20}, {0.3, 0}, {2000, 3}, {0, 0}}
	ins := [][]float64{{1}, {0.3, 0}, {0}}
	for i := range 400 {
		buf = w.Row(buf, 0, lay.Flatten(nil, &recording.Entry{Time: float64(i) * 0.005, Status: 3, ID: float64(i), ReplyID: float64(i + 1),
			Outputs: outs, Inputs: ins, Setpoints: []float64{20}}))
	}
	events := []recording.Event{
		{Time: 1.995, Vehicle: -1, Kind: recording.Lost, Name: "recording lost rows", Text: "1190 rows could not be written (no space left on device): the file does not hold the whole run"},
		{Time: 1.995, Vehicle: -1, Kind: recording.Faults, Name: "run ended with faults", Text: "recording: 1190 rows lost"},
	}
	if _, _, err := w.Write(buf, events); err != nil {
		t.Fatal(err)
	}
	w.Close()
	f.Close()
	_, errOut, code := exec(t, nil, "convert", path, filepath.Join(dir, "back.csv"))
	flat := strings.Join(strings.Fields(errOut), " ")
	if code != exitOK || !strings.Contains(flat, "note: "+path+" says: recording lost rows at 1.995 s: 1190 rows could not be written") ||
		!strings.Contains(flat, "says: run ended with faults at 1.995 s: recording: 1190 rows lost") {
		t.Errorf("convert: exit %d\n%s", code, errOut)
	}
	_, errOut, code = exec(t, nil, "plot", path, "-o", filepath.Join(dir, "run.svg"))
	svg, _ := os.ReadFile(filepath.Join(dir, "run.svg"))
	flat = strings.Join(strings.Fields(errOut), " ")
	if code != exitOK || !strings.Contains(flat, "control groundspeed: held, in a run with faults") || strings.Contains(flat, ": good:") ||
		!strings.Contains(flat, "the run had faults: recording lost rows at 1.995 s") {
		t.Errorf("plot: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(string(svg), `fill="#b45309">control groundspeed: held, in a run with faults`) || strings.Contains(string(svg), "control groundspeed: good") {
		t.Errorf("the plot's headline:\n%.2000s", svg)
	}
}
