package testfmu

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
)

// TypesToken is the types FMU's instantiationToken.
const TypesToken = "{0b9e5a52-3c6e-4d8f-a1f0-7e3e5a000003}"

// TypesDescription is the modelDescription.xml of the FMI 3.0 types FMU
// (c/types3.c): an input and an output of every integer type, Float32,
// an enumeration and a Boolean; a Float64[3] input u, a Float64[n] input
// w (n a structural parameter), gain (0 to 10), a String and a Binary
// parameter, the outputs y, texts and m[2], and the independent variable
// time. fixedStep > 0 writes a
// fixedInternalStepSize.
func TypesDescription(fixedStep float64) string {
	fixed := ""
	if fixedStep > 0 {
		fixed = fmt.Sprintf(` fixedInternalStepSize="%g"`, fixedStep)
	}
	return `<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="types" instantiationToken="` + TypesToken + `" generationTool="beamconnect testfmu">
  <CoSimulation modelIdentifier="types" canHandleVariableCommunicationStepSize="true"` + fixed + `/>
  <TypeDefinitions>
    <EnumerationType name="Mode"><Item name="Eco" value="1"/><Item name="Sport" value="2"/><Item name="Race" value="3"/></EnumerationType>
  </TypeDefinitions>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
    <Int8 name="i8" valueReference="1" causality="input" start="0"/>
    <UInt8 name="u8" valueReference="2" causality="input" start="0"/>
    <Int16 name="i16" valueReference="3" causality="input" start="0"/>
    <UInt16 name="u16" valueReference="4" causality="input" start="0"/>
    <Int32 name="i32" valueReference="5" causality="input" start="0"/>
    <UInt32 name="u32" valueReference="6" causality="input" start="0"/>
    <Int64 name="i64" valueReference="7" causality="input" start="0"/>
    <UInt64 name="u64" valueReference="8" causality="input" start="0"/>
    <Float32 name="f32" valueReference="9" causality="input" start="0"/>
    <Enumeration name="mode" valueReference="10" causality="input" declaredType="Mode" start="1"/>
    <Boolean name="flag" valueReference="11" causality="input" start="false"/>
    <Float64 name="u" valueReference="12" causality="input" start="0 0 0"><Dimension start="3"/></Float64>
    <UInt64 name="n" valueReference="13" causality="structuralParameter" variability="fixed" start="2"/>
    <Float64 name="w" valueReference="14" causality="input" start="0"><Dimension valueReference="13"/></Float64>
    <Float64 name="gain" valueReference="15" causality="parameter" variability="tunable" start="1" min="0" max="10"/>
    <String name="label" valueReference="16" causality="parameter" variability="fixed"><Start value=""/></String>
    <Binary name="blob" valueReference="17" causality="parameter" variability="fixed"><Start value=""/></Binary>
    <Int8 name="o_i8" valueReference="21" causality="output"/>
    <UInt8 name="o_u8" valueReference="22" causality="output"/>
    <Int16 name="o_i16" valueReference="23" causality="output"/>
    <UInt16 name="o_u16" valueReference="24" causality="output"/>
    <Int32 name="o_i32" valueReference="25" causality="output"/>
    <UInt32 name="o_u32" valueReference="26" causality="output"/>
    <Int64 name="o_i64" valueReference="27" causality="output"/>
    <UInt64 name="o_u64" valueReference="28" causality="output"/>
    <Float32 name="o_f32" valueReference="29" causality="output"/>
    <Enumeration name="o_mode" valueReference="30" causality="output" declaredType="Mode"/>
    <Boolean name="o_flag" valueReference="31" causality="output"/>
    <Float64 name="y" valueReference="32" causality="output"/>
    <Float64 name="texts" valueReference="33" causality="output"/>
    <Float64 name="m" valueReference="34" causality="output"><Dimension start="2"/></Float64>
  </ModelVariables>
  <ModelStructure>
` + outputsOf("Output", 21, 34) + outputsOf("InitialUnknown", 21, 34) + `  </ModelStructure>
</fmiModelDescription>
`
}

// outputsOf lists the outputs from vr from to vr to in ModelStructure's
// element (Output, or InitialUnknown: the outputs are calculated).
func outputsOf(element string, from, to int) string {
	s := ""
	for vr := from; vr <= to; vr++ {
		s += fmt.Sprintf("    <%s valueReference=\"%d\"/>\n", element, vr)
	}
	return s
}

// BuildTypes compiles the FMI 3.0 types FMU for this machine and writes it
// to out (its binary taken from the Prebuilt folder's types3.fmu where
// that is set and no C compiler is).
func BuildTypes(out string, fixedStep float64) error {
	return BuildTypesFor(out, fixedStep, "", runtime.GOOS)
}

// BuildTypesFor compiles the FMI 3.0 types FMU for x86-64 goos with the C
// compiler cc ("": this machine's) and writes it to out.
func BuildTypesFor(out string, fixedStep float64, cc, goos string) error {
	lib, err := libraryFor(cc, goos, 3, "types", "types3.c", `-DTYPES_TOKEN="`+TypesToken+`"`)
	if err != nil {
		return err
	}
	plat, ext := platformOf(3, goos)
	return Zip(out, map[string][]byte{
		"modelDescription.xml":              []byte(TypesDescription(fixedStep)),
		"binaries/" + plat + "/types" + ext: lib,
		"sources/types3.c":                  mustRead("c/types3.c"),
		"sources/fmi3.h":                    mustRead("c/fmi3.h"),
		"sources/fmi3rest.h":                mustRead("c/fmi3rest.h"),
	})
}

// TypesForTest builds the types FMU into the test's temporary directory,
// or skips the test where that cannot be done.
func TypesForTest(t testing.TB, fixedStep float64) string {
	t.Helper()
	if err := Available(3); err != nil {
		t.Skip(err)
	}
	out := filepath.Join(t.TempDir(), "types.fmu")
	if err := BuildTypes(out, fixedStep); err != nil {
		t.Fatal(err)
	}
	return out
}
