package main

import (
	"beamconnect/recording/recordingtest"
	"fmt"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every FMU of the example system against the FMI reference master: the
// system runs 10 s of BeamNG's time against the emulator; then fmusim
// runs each FMU alone, its inputs the ones the recording says it was given
// at each of its steps (fmusim's input file, one row per step at the
// step's time), its parameters the recorded ones; and each output the
// recording holds (at the row of the message whose step computed it: the
// end of the step, as the reply carries it) is fmusim's at that step's
// end, to the 16 digits fmusim prints. The controller (FMI 3.0) steps at
// every message (5 ms), the actuator (FMI 2.0) every second (10 ms, its
// fixed step), taking the controller's demand of the same step
// (Gauss–Seidel).
func TestExampleSystemAgainstFmusim(t *testing.T) {
	sim := fmusimPath(t)
	ssd, archive := exampleSystem(t) // the same files, unpacked and packed
	dir := t.TempDir()
	rec := filepath.Join(dir, "run.csv")
	if out, errOut, code := exec(t, nil, "run", "--json", archive, "--emulate", "--free-running", "--sim-duration", "10s", "--record", rec); code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	rows := recordingtest.Rows(t, rec)
	fmus := filepath.Dir(ssd)
	for _, tt := range []struct {
		component, fmu string
		every          int64 // messages a step spans
		inputs         []string
		params         []string
		outputs        []string
	}{
		{"controller", "controller.fmu", 1, []string{"speed"}, []string{"setSpeed", "kp", "ki"}, []string{"demand"}},
		{"actuator", "actuator.fmu", 2, []string{"command"}, []string{"rateLimit", "delay"}, []string{"position", "throttle", "brake"}},
	} {
		t.Run(tt.component, func(t *testing.T) {
			h := 0.005 * float64(tt.every)
			var in strings.Builder
			in.WriteString("time")
			for _, c := range tt.inputs {
				in.WriteString("," + c)
			}
			in.WriteString("\n")
			steps := 0
			for _, r := range rows {
				id := int64(r["id"])
				if id%tt.every != 0 || float64(id)*0.005 > 10-h {
					continue
				}
				fmt.Fprintf(&in, "%s", strconv.FormatFloat(float64(id/tt.every)*h, 'g', -1, 64))
				for _, c := range tt.inputs {
					fmt.Fprintf(&in, ",%s", strconv.FormatFloat(r[tt.component+"."+c], 'g', -1, 64))
				}
				in.WriteString("\n")
				steps++
			}
			input, output := filepath.Join(dir, tt.component+".in.csv"), filepath.Join(dir, tt.component+".out.csv")
			if err := os.WriteFile(input, []byte(in.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"--interface-type", "cs", "--stop-time", strconv.FormatFloat(float64(steps)*h, 'g', -1, 64), "--output-interval", strconv.FormatFloat(h, 'g', -1, 64),
				"--input-file", input, "--output-file", output}
			for _, p := range tt.params {
				args = append(args, "--start-value", p, strconv.FormatFloat(rows[0][tt.component+"."+p], 'g', -1, 64))
			}
			args = append(args, filepath.Join(fmus, "resources", tt.fmu))
			if out, err := osexec.Command(sim, args...).CombinedOutput(); err != nil {
				t.Fatalf("fmusim %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			want := readTable(t, output)
			compared := 0
			for _, r := range rows {
				id := int64(r["id"])
				end := id/tt.every + 1 // the fmusim row (from 0) at the end of the step this message's reply carries
				if end >= int64(len(want)) {
					continue
				}
				for _, o := range tt.outputs {
					theirs, ok := want[end][o]
					if !ok {
						t.Fatalf("fmusim's output has no %s: %v", o, want[0])
					}
					ours, _ := strconv.ParseFloat(strconv.FormatFloat(r[tt.component+"."+o], 'g', 16, 64), 64)
					if ours != theirs && !(math.IsNaN(ours) && math.IsNaN(theirs)) {
						t.Fatalf("message %d: %s.%s is %v, fmusim's at %g s %v", id, tt.component, o, r[tt.component+"."+o], float64(end)*h, theirs)
					}
					compared++
				}
			}
			if compared < 1900*len(tt.outputs) {
				t.Errorf("%d values compared", compared)
			}
			t.Logf("%d steps, %d recorded values equal to fmusim's", steps, compared)
		})
	}
}
