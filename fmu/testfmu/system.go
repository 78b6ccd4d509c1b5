package testfmu

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
)

// The example system's FMUs (docs/systems.md): a PI speed controller
// (c/speedctl3.c, FMI 3.0) and a pedal actuator with a rate limit and a
// delay (c/actuator2.c, FMI 2.0).

// The FMUs' instantiationToken and guid; their binaries refuse others.
const (
	ControllerToken = "{5d0c35d2-8f3b-4c2a-9a41-3f1c7e2b0001}"
	ActuatorGUID    = "{5d0c35d2-8f3b-4c2a-9a41-3f1c7e2b0002}"
)

// ControllerDescription is the speed controller's modelDescription.xml.
func ControllerDescription() string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="speedctl" instantiationToken="` + ControllerToken + `"
    description="a PI speed controller: the demand (-1 brake … 1 throttle) that holds setSpeed" generationTool="beamconnect testfmu">
  <CoSimulation modelIdentifier="speedctl" canHandleVariableCommunicationStepSize="true"/>
  <UnitDefinitions>
    <Unit name="s"><BaseUnit s="1"/></Unit>
    <Unit name="km/h"><BaseUnit m="1" s="-1" factor="0.2777777777777778"/></Unit>
    <Unit name="km/h.s"><BaseUnit m="1" factor="0.2777777777777778"/></Unit>
  </UnitDefinitions>
  <DefaultExperiment startTime="0" stopTime="10" stepSize="0.005"/>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous" unit="s"/>
    <Float64 name="speed" valueReference="1" causality="input" variability="continuous" start="0" unit="km/h" description="the vehicle's speed"/>
    <Float64 name="setSpeed" valueReference="2" causality="parameter" variability="tunable" start="72" unit="km/h" min="0" max="300" description="the speed to hold"/>
    <Float64 name="kp" valueReference="3" causality="parameter" variability="tunable" start="0.08" min="0" max="10" description="proportional gain, per km/h"/>
    <Float64 name="ki" valueReference="4" causality="parameter" variability="tunable" start="0.015" min="0" max="10" description="integral gain, per km/h and second"/>
    <Float64 name="demand" valueReference="5" causality="output" variability="continuous" initial="calculated" min="-1" max="1" description="-1 full brake … 1 full throttle"/>
    <Float64 name="integral" valueReference="6" causality="local" variability="continuous" initial="calculated" unit="km/h.s" description="the integral of the speed error"/>
  </ModelVariables>
  <ModelStructure>
    <Output valueReference="5" dependencies="1"/>
    <InitialUnknown valueReference="5" dependencies="1"/>
  </ModelStructure>
</fmiModelDescription>
`
}

// ActuatorDescription is the pedal actuator's modelDescription.xml.
func ActuatorDescription() string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="actuator" guid="` + ActuatorGUID + `"
    description="a pedal actuator: the demand's pedals, after a delay and at a limited rate" generationTool="beamconnect testfmu" variableNamingConvention="flat">
  <CoSimulation modelIdentifier="actuator" canHandleVariableCommunicationStepSize="false"/>
  <UnitDefinitions>
    <Unit name="s"><BaseUnit s="1"/></Unit>
    <Unit name="1/s"><BaseUnit s="-1"/></Unit>
  </UnitDefinitions>
  <DefaultExperiment startTime="0" stopTime="10" stepSize="0.01"/>
  <ModelVariables>
    <ScalarVariable name="command" valueReference="0" causality="input" variability="continuous" description="the demand: -1 full brake … 1 full throttle"><Real start="0" min="-1" max="1"/></ScalarVariable>
    <ScalarVariable name="rateLimit" valueReference="1" causality="parameter" variability="tunable" description="how fast the pedals move, in pedal travels per second"><Real start="2" unit="1/s" min="0.001"/></ScalarVariable>
    <ScalarVariable name="delay" valueReference="2" causality="parameter" variability="fixed" description="how late the pedals follow the demand (whole steps of 10 ms, at least one)"><Real start="0.05" unit="s" min="0" max="1"/></ScalarVariable>
    <ScalarVariable name="position" valueReference="3" causality="output" variability="continuous" initial="calculated" description="the actuator's position: -1 full brake … 1 full throttle"><Real/></ScalarVariable>
    <ScalarVariable name="throttle" valueReference="4" causality="output" variability="continuous" initial="calculated" description="throttle pedal 0..1"><Real/></ScalarVariable>
    <ScalarVariable name="brake" valueReference="5" causality="output" variability="continuous" initial="calculated" description="brake pedal 0..1"><Real/></ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Outputs>
      <Unknown index="4" dependencies=""/>
      <Unknown index="5" dependencies=""/>
      <Unknown index="6" dependencies=""/>
    </Outputs>
    <InitialUnknowns>
      <Unknown index="4" dependencies=""/>
      <Unknown index="5" dependencies=""/>
      <Unknown index="6" dependencies=""/>
    </InitialUnknowns>
  </ModelStructure>
</fmiModelDescription>
`
}

// BuildController compiles the speed controller for this machine (or takes
// its binary from the Prebuilt folder's speedctl3.fmu) and writes it to out.
func BuildController(out string) error { return BuildControllerFor(out, "", runtime.GOOS) }

// BuildControllerFor compiles the speed controller for x86-64 goos with the
// C compiler cc ("": this machine's) and writes it to out.
func BuildControllerFor(out, cc, goos string) error {
	lib, err := libraryFor(cc, goos, 3, "speedctl", "speedctl3.c")
	if err != nil {
		return err
	}
	plat, ext := platformOf(3, goos)
	return Zip(out, map[string][]byte{
		"modelDescription.xml":                 []byte(ControllerDescription()),
		"binaries/" + plat + "/speedctl" + ext: lib,
		"sources/speedctl3.c":                  mustRead("c/speedctl3.c"),
		"sources/fmi3.h":                       mustRead("c/fmi3.h"),
	})
}

// BuildActuator compiles the pedal actuator for this machine (or takes its
// binary from the Prebuilt folder's actuator2.fmu) and writes it to out.
func BuildActuator(out string) error { return BuildActuatorFor(out, "", runtime.GOOS) }

// BuildActuatorFor compiles the pedal actuator for x86-64 goos with the C
// compiler cc ("": this machine's) and writes it to out.
func BuildActuatorFor(out, cc, goos string) error {
	lib, err := libraryFor(cc, goos, 2, "actuator", "actuator2.c")
	if err != nil {
		return err
	}
	plat, ext := platformOf(2, goos)
	return Zip(out, map[string][]byte{
		"modelDescription.xml":                 []byte(ActuatorDescription()),
		"binaries/" + plat + "/actuator" + ext: lib,
		"sources/actuator2.c":                  mustRead("c/actuator2.c"),
		"sources/fmi2.h":                       mustRead("c/fmi2.h"),
	})
}

// SystemForTest builds the example system's two FMUs into the test's
// temporary directory (controller.fmu, actuator.fmu), or skips the test
// where that cannot be done.
func SystemForTest(t testing.TB) (controller, actuator string) {
	t.Helper()
	for _, major := range []int{2, 3} {
		if err := Available(major); err != nil {
			t.Skip(err)
		}
	}
	dir := t.TempDir()
	controller, actuator = filepath.Join(dir, "controller.fmu"), filepath.Join(dir, "actuator.fmu")
	if err := BuildController(controller); err != nil {
		t.Fatal(fmt.Errorf("the controller FMU: %w", err))
	}
	if err := BuildActuator(actuator); err != nil {
		t.Fatal(fmt.Errorf("the actuator FMU: %w", err))
	}
	return controller, actuator
}
