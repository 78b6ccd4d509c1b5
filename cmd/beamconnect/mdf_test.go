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
	dir := t.TempDir()
	rig := filepath.Join(dir, "rig.json")
	src, _ := os.ReadFile("../../examples/cruise-pedals.json")
	src = []byte(strings.Replace(string(src), `"$schema": "../schemas/config.schema.json",`, "", 1))
	os.WriteFile(rig, src, 0o644)
	rec := filepath.Join(dir, "run.mf4")
	go func() {
		// Once rows are on disk, log the fuel as well.
		for deadline := time.Now().Add(10 * time.Second); mdfRows(rec) < 20 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		os.WriteFile(rig, []byte(strings.Replace(string(src), `{ "propertyName": "gear" }`, `{ "propertyName": "gear" }, { "propertyName": "fuel" }`, 1)), 0o644)
	}()
	out, errOut, code := exec(t, nil, "run", "--json", rig, "--emulate", "--duration", "2s", "--record", rec)
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
	if _, errOut, code := exec(t, nil, "run", "../../examples/follow.json", "--emulate", "--duration", "1s", "--record", rec); code != exitOK {
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
	if _, errOut, code := exec(t, nil, "run", "../../examples/cruise-pedals.json", "--emulate", "--free-running", "--duration", "500ms", "--record", csvFile); code != exitOK {
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
	notes := filepath.Join(dir, "notes.mf4")
	os.WriteFile(notes, []byte("lab notes\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{csvFile, csvFile}, "is the recording " + csvFile + " itself"},
		{[]string{csvFile, notes}, "notes.mf4: the file exists and is not a recording"},
		{[]string{notes, back}, "notes.mf4: 10 bytes: too short for an MDF 4 file"},
		{[]string{csvFile}, "expected a recording and the file to write"},
	} {
		_, errOut, code := exec(t, nil, append([]string{"convert"}, tc.args...)...)
		if code == exitOK || !strings.Contains(errOut, tc.want) {
			t.Errorf("convert %v: exit %d, %s; want %q", tc.args, code, errOut, tc.want)
		}
	}
}
