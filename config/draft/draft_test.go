package draft

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"beamconnect/beamng/cosim"
	"beamconnect/fmu"
)

// The period init writes for an FMU is one it can run at: its suggested
// step rounded up to BeamNG's 0.5 ms physics step where it can take any
// step; for a step it cannot change, a multiple of it within 500 ms, or
// else a period every few of which make a whole number of its steps
// (multi-rate); 5 ms where it says nothing or something slower than a
// coupling can be.
func TestPeriodMs(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, tt := range []struct {
		name string
		d    fmu.Description
		want float64
	}{
		{"no step", fmu.Description{}, 5},
		{"any step, 1 ms", fmu.Description{Default: fmu.Experiment{StepSize: f(0.001)}, CoSim: &fmu.CoSimulation{VariableStep: true}}, 1},
		{"any step, 0.3 ms: rounded up", fmu.Description{Default: fmu.Experiment{StepSize: f(0.0003)}, CoSim: &fmu.CoSimulation{VariableStep: true}}, 0.5},
		{"any step, 1 s: slower than a coupling", fmu.Description{Default: fmu.Experiment{StepSize: f(1)}, CoSim: &fmu.CoSimulation{VariableStep: true}}, 5},
		{"fixed 0.75 ms: its first multiple of whole physics steps", fmu.Description{Default: fmu.Experiment{StepSize: f(0.00075)}, CoSim: &fmu.CoSimulation{}}, 1.5},
		{"fixed internal 300 ms", fmu.Description{CoSim: &fmu.CoSimulation{FixedInternalStepSize: 0.3, VariableStep: true}}, 300},
		{"fixed internal 1 s: multi-rate at 5 ms", fmu.Description{CoSim: &fmu.CoSimulation{FixedInternalStepSize: 1}}, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := periodMs(&tt.d); got != tt.want {
				t.Errorf("%v ms, want %v", got, tt.want)
			}
		})
	}
}

// A CSV's rows become one port per group, in file order; an input row of
// a kind other than a value starts at what BeamNG takes as unset; a name
// two groups share is qualified by its group.
func TestFromCSV(t *testing.T) {
	f := &cosim.File{Time: cosim.Param{Value: cosim.DefaultTime},
		To:   []cosim.Row{{Group: "ego", Name: "groundspeed"}, {Group: "ego", Name: "rpm"}, {Group: "lead", Name: "groundspeed"}},
		From: []cosim.Row{{Group: "ego", Name: "throttle", Value: "value"}}}
	b, err := json.Marshal(FromCSV(f, "rig.csv"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{`"propertyName":"ego/groundspeed"`, `"propertyName":"rpm"`, `"propertyName":"lead/groundspeed"`,
		`"inputs":[{"updatePeriodMs":`, `"propertyName":"throttle"}`, `"interface":"rig.csv"`, `"model":"hold"`, `"protocol":"csv"`} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in\n%s", want, got)
		}
	}
	if n := strings.Count(got, `"ports":[[`); n != 2 {
		t.Errorf("%d port lists, want one for the outputs and one for the inputs:\n%s", n, got)
	}
}

// An FMU's variables are bound by their names: exactly, or in another
// letter case (said to be guessed); an output that matches no signal goes
// to a free custom field, an input to its start value; its parameters go
// to modelParams.parameters with their start values; a setpoint parameter
// beside the signal it is the setpoint of makes a loop of beamng.quality.
func TestFromFMU(t *testing.T) {
	d, err := fmu.ParseDescription([]byte(`<?xml version="1.0"?>
<fmiModelDescription fmiVersion="2.0" modelName="m" guid="{x}">
  <CoSimulation modelIdentifier="m" canHandleVariableCommunicationStepSize="true"/>
  <DefaultExperiment stepSize="0.002"/>
  <ModelVariables>
    <ScalarVariable name="groundspeed" valueReference="1" causality="input"><Real start="0" unit="m/s"/></ScalarVariable>
    <ScalarVariable name="Throttle" valueReference="2" causality="output"><Real/></ScalarVariable>
    <ScalarVariable name="fuelFlowCmd" valueReference="3" causality="output"><Real/></ScalarVariable>
    <ScalarVariable name="setSpeed" valueReference="4" causality="parameter" variability="tunable"><Real start="20" unit="m/s"/></ScalarVariable>
    <ScalarVariable name="slope" valueReference="5" causality="input"><Real start="0.02"/></ScalarVariable>
  </ModelVariables>
  <ModelStructure><Outputs><Unknown index="2"/><Unknown index="3"/></Outputs></ModelStructure>
</fmiModelDescription>`))
	if err != nil {
		t.Fatal(err)
	}
	dr := FromFMU(d, "m.fmu", nil)
	if len(dr.Inputs) != 1 || dr.Inputs[0] != (Bound{Variable: "groundspeed", Signal: "groundspeed"}) || len(dr.Outputs) != 2 ||
		dr.Outputs[0] != (Bound{Variable: "Throttle", Signal: "throttle", Guessed: true}) ||
		dr.Outputs[1] != (Bound{Variable: "fuelFlowCmd", Signal: "custom1", Custom: true}) {
		t.Errorf("bound: inputs %+v, outputs %+v", dr.Inputs, dr.Outputs)
	}
	if !slices.Equal(dr.Constants, []string{"slope"}) || len(dr.Notes) != 0 {
		t.Errorf("constants %q, notes %q", dr.Constants, dr.Notes)
	}
	if dr.Quality.Measured != "groundspeed" || dr.Quality.Setpoint != "setSpeed" {
		t.Errorf("quality %+v, want groundspeed against setSpeed", dr.Quality)
	}
	b, _ := json.Marshal(dr.Config)
	for _, want := range []string{`"updatePeriodMs":2`, `"parameters":{"setSpeed":20,"slope":0.02}`, `"outputs":{"Throttle":"throttle","fuelFlowCmd":"custom1"}`,
		`{"propertyName":"custom1","initialValue":0}`, `"quality":{"measured":"groundspeed","setpoint":"setSpeed"}`, `"path":"m.fmu"`, `"model":"fmu"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %s in\n%s", want, b)
		}
	}
}

// What a setpoint parameter's name says it is the setpoint of.
func TestQuantity(t *testing.T) {
	for name, want := range map[string]string{
		"setSpeed": "speed", "set_speed": "speed", "targetSpeed": "speed", "speedSetpoint": "speed", "vRef": "",
		"speedRef": "speed", "desiredHeading": "heading", "spYaw": "yaw", "spring": "", "settle": "", "k": "", "setpoint": "", "speed_sp": "speed",
	} {
		t.Run(name, func(t *testing.T) {
			if got := quantity(name); got != want {
				t.Errorf("%q, want %q", got, want)
			}
		})
	}
}
