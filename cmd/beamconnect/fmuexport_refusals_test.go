package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"beamconnect/fmuexport"
)

// A step size no BeamNG message fits fails the step, through the real
// library in a real master, with the reason in the master's log: h
// infinite, not a number, or 1e300 s (which used to return OK at once,
// coupling nothing, the next step failing at an overflowed time).
func TestExportedFMURefusesStepSizes(t *testing.T) {
	parallelOffWine(t)
	e := exportFMU(t, "../../examples/cruise-pedals.json", 2)
	for _, tc := range []struct {
		name    string
		stop, h float64
		want    string
	}{
		{"h infinite", 1, math.Inf(1), "a step of h = +Inf s: a step is a whole number of BeamNG's 5 ms periods"},
		{"h not a number", 1, math.NaN(), "a step of h = NaN s: a step is a whole number of BeamNG's 5 ms periods"},
		{"h of 1e300 s", 1e300, 1e300, "a step of h = 1e+300 s from t = 0 s ends past 1000000000 s (about 31 years), further than any BeamNG message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listen := freePort(t)
			m := startMaster(t, e, tc.stop, tc.h, 0, 0.5, map[string]string{"localPort": "0", "remotePort": strconv.Itoa(int(listen.Port()))})
			bound := m.out.waitLine(t, waiting, 1, m.done)[1]
			em := emulate(t, e, bound, listen.String(), 0) // BeamNG's first message: the FMU initialized
			if code := m.wait(t); code != 3 {
				t.Errorf("the master exited %d, want 3 (the step's Error):\n%s", code, m.out)
			}
			for _, want := range []string{"[Error] logStatusError: " + tc.want, "master: fmi2DoStep returned Error"} {
				if !strings.Contains(m.out.String(), want) {
					t.Errorf("the master's log lacks %q:\n%s", want, m.out)
				}
			}
			em.summary(t)
		})
	}
}

// A master that shortens its last step to land on a stop time that is not
// a whole number of BeamNG's periods (fmusim and FMPy do) keeps its
// results: the step returns OK, the master's time is the stop time, and
// the outputs there are BeamNG's last message within the step, as the log
// says once. FMI 2.0 and 3.0, through the real library in a real master.
func TestExportedFMUShortLastStep(t *testing.T) {
	parallelOffWine(t)
	const stop, h = 0.5025, 0.01 // the last step: 2.5 ms from 0.5 s
	for _, major := range []int{2, 3} {
		t.Run(fmt.Sprintf("FMI %d", major), func(t *testing.T) {
			e := exportFMU(t, "../../examples/cruise-pedals.json", major)
			listen := freePort(t)
			m := startMaster(t, e, stop, h, 0.2, 0.5, map[string]string{"localPort": "0", "remotePort": strconv.Itoa(int(listen.Port()))}, "-last")
			bound := m.out.waitLine(t, waiting, 1, m.done)[1]
			em := emulate(t, e, bound, listen.String(), 0.5) // its last message, of 0.5 s, is the last step's
			if code := m.wait(t); code != 0 {
				t.Fatalf("the master exited %d, want 0:\n%s", code, m.out)
			}
			if want := "the last step, from t = 0.5 s to the stop time 0.5025 s, is shorter than BeamNG's 5 ms period: it coupled BeamNG's message of 0.5 s only"; strings.Count(m.out.String(), want) != 1 {
				t.Errorf("the master's log does not say once %q:\n%s", want, m.out)
			}
			rows := readTable(t, m.csv)
			beamngTime, _ := e.iface.Variable("out4.time")
			last := rows[len(rows)-1]
			independent, _ := e.iface.Variable("time")
			if len(rows) != 52 || last["time"] != stop || last[strconv.Itoa(int(beamngTime.VR))] != 0.5 || math.Abs(last[strconv.Itoa(int(independent.VR))]-stop) > 1e-9 {
				t.Errorf("%d rows, the last at %v with BeamNG's message of %v s, the FMU's time %v: want 52, at %v with the message of 0.5 s",
					len(rows), last["time"], last[strconv.Itoa(int(beamngTime.VR))], last[strconv.Itoa(int(independent.VR))], stop)
			}
			for _, r := range rows {
				if math.Abs(r[strconv.Itoa(int(independent.VR))]-r["time"]) > 1e-9 {
					t.Errorf("at %v the FMU's time (its independent variable) is %v", r["time"], r[strconv.Itoa(int(independent.VR))])
					break
				}
			}
			if sum := em.summary(t); sum["stalls"] != 0.0 {
				t.Errorf("BeamNG stalled: %v", sum)
			}
			if !strings.Contains(m.out.String(), "the run was healthy") {
				t.Errorf("the run was not healthy:\n%s", m.out)
			}
		})
	}
}

// A Gen 2 BeamNG against a Gen 1 FMU, through the real library in a real
// master: initialization fails with the diagnosis of BeamNG's first
// message, though connectTimeout is 0 (wait for ever): a mismatch no
// message of that BeamNG can get past ends the wait.
func TestExportedFMUProtocolMismatch(t *testing.T) {
	parallelOffWine(t)
	e := exportFMU(t, "../../examples/cruise-pedals.json", 3)
	listen := freePort(t)
	m := startMaster(t, e, 1, 0.005, 0, 0.5, map[string]string{"localPort": "0", "remotePort": strconv.Itoa(int(listen.Port())), "connectTimeout": "0"})
	bound := m.out.waitLine(t, waiting, 1, m.done)[1]
	gen2 := e
	gen2.config = "../../examples/gen2-cruise.json"
	em := emulate(t, gen2, bound, listen.String(), 0)
	if code := m.wait(t); code != 3 {
		t.Errorf("the master exited %d, want 3 (initialization's Error):\n%s", code, m.out)
	}
	for _, want := range []string{"[Error] logStatusError: BeamNG speaks another protocol than the FMU's config", "BeamNG runs the Gen 2 co-simulation coupling",
		"master: fmi3ExitInitializationMode returned Error"} {
		if !strings.Contains(m.out.String(), want) {
			t.Errorf("the master's log lacks %q:\n%s", want, m.out)
		}
	}
	em.summary(t)
}

// As many outputs as an exported FMU can have (fmuexport.MaxOutputs: BeamNG's
// groundspeed read into that many fields) export, instantiate (their list
// goes to the library in parts: at about 7 000 it used to fail, "listed
// the variables in a way the shim cannot read") and couple in a real
// master; one more is refused by export, saying the limit.
func TestExportedFMUVariableLimit(t *testing.T) {
	parallelOffWine(t)
	src, err := os.ReadFile("../../examples/cruise-pedals.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := func(name string, outputs int) string {
		var cfg map[string]any
		json.Unmarshal(src, &cfg)
		delete(cfg, "$schema")
		group := cfg["outputs"].([]any)[0].(map[string]any)
		have := fmuexport.New(planOf(t, "../../examples/cruise-pedals.json")).Count(fmuexport.Output)
		var more []any
		for range outputs - have {
			more = append(more, map[string]any{"propertyName": "groundspeed"})
		}
		group["ports"] = append(group["ports"].([]any), more)
		data, _ := json.Marshal(cfg)
		path := filepath.Join(dir, name)
		os.WriteFile(path, data, 0o644)
		return path
	}
	over := config("over.json", fmuexport.MaxOutputs+1)
	_, stderr, code := runBinary(t, "fmu", "export", over, "-o", filepath.Join(dir, "over.fmu"))
	if code != 1 || !strings.Contains(stderr, "the config makes 16385 outputs") || !strings.Contains(stderr, "more than the 16384 an exported FMU can have") {
		t.Errorf("export of %d outputs: exit %d\n%s", fmuexport.MaxOutputs+1, code, stderr)
	}
	e := exportFMU(t, config("most.json", fmuexport.MaxOutputs), 2)
	if n := e.iface.Count(fmuexport.Output); n != fmuexport.MaxOutputs {
		t.Fatalf("%d outputs, want %d", n, fmuexport.MaxOutputs)
	}
	listen := freePort(t)
	m := startMaster(t, e, 0.05, 0.005, 0, 0.5, map[string]string{"localPort": "0", "remotePort": strconv.Itoa(int(listen.Port()))})
	bound := m.out.waitLine(t, waiting, 1, m.done)[1]
	em := emulate(t, e, bound, listen.String(), 0.05)
	if code := m.wait(t); code != 0 {
		t.Fatalf("the master exited %d:\n%s", code, m.out)
	}
	em.summary(t)
	rows := readTable(t, m.csv)
	var first, last *fmuexport.Variable // both BeamNG's groundspeed
	for i, v := range e.iface.Vars {
		if v.Causality == fmuexport.Output {
			if first == nil {
				first = &e.iface.Vars[i]
			}
			last = &e.iface.Vars[i]
		}
	}
	end := rows[len(rows)-1]
	if len(rows) != 11 || end[strconv.Itoa(int(last.VR))] != end[strconv.Itoa(int(first.VR))] || end[strconv.Itoa(int(first.VR))] == 0 {
		t.Errorf("%d rows; at the end the last output (%s) %v, the first groundspeed %v: want 11 rows, the two alike and moving",
			len(rows), last.Name, end[strconv.Itoa(int(last.VR))], end[strconv.Itoa(int(first.VR))])
	}
}
