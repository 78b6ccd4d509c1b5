package fmuexport

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"slices"
)

// Generator is what modelDescription.xml names as its generation tool.
const Generator = "beamconnect fmu export"

// Categories are the log categories the FMU logs under (FMI's logger):
// what happens (connected, waiting, the summary), warnings and errors.
var Categories = []struct{ Name, Description string }{
	{"logEvents", "what the coupling does: waiting for BeamNG, connected, BeamNG started its coupling again, the run's summary"},
	{"logStatusWarning", "what went wrong without failing the call: BeamNG's stalls, lost messages, lockstep lost and repaired"},
	{"logStatusError", "why a call failed: BeamNG lost, a step that is not a whole number of BeamNG's periods, a bad parameter"},
}

// Description is the FMU's modelDescription.xml for FMI major (2 or 3):
// a co-simulation FMU whose binary is identifier.
func (in *Interface) Description(major int, modelName, identifier, description string) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	tokenAttr := "guid"
	if major == 3 {
		tokenAttr = "instantiationToken"
	}
	w(`<fmiModelDescription fmiVersion="%d.0" modelName=%s %s=%s description=%s generationTool=%s variableNamingConvention="flat"`,
		major, attr(modelName), tokenAttr, attr(in.Token), attr(description), attr(Generator))
	if major == 2 {
		b.WriteString(` numberOfEventIndicators="0"`)
	}
	b.WriteString(">\n")
	// BeamNG is the tool that computes the outputs: the FMU only talks to
	// it. A step may be any whole number of BeamNG's periods.
	w(`  <CoSimulation modelIdentifier=%s needsExecutionTool="true" canHandleVariableCommunicationStepSize="true"`, attr(identifier))
	if major == 2 {
		b.WriteString(` canNotUseMemoryManagementFunctions="true"`)
	} else {
		w(` fixedInternalStepSize=%s`, attr(number(in.Period)))
	}
	b.WriteString("/>\n")
	var units []string
	for _, v := range in.Vars {
		if v.Unit != "" && !slices.Contains(units, v.Unit) {
			units = append(units, v.Unit)
		}
	}
	if len(units) > 0 {
		b.WriteString("  <UnitDefinitions>\n")
		for _, u := range units {
			w("    <Unit name=%s/>\n", attr(u))
		}
		b.WriteString("  </UnitDefinitions>\n")
	}
	b.WriteString("  <LogCategories>\n")
	for _, c := range Categories {
		w("    <Category name=%s description=%s/>\n", attr(c.Name), attr(c.Description))
	}
	b.WriteString("  </LogCategories>\n")
	w("  <DefaultExperiment startTime=\"0\" stepSize=%s/>\n", attr(number(in.Period)))
	b.WriteString("  <ModelVariables>\n")
	for _, v := range in.Vars {
		if major == 2 {
			in.variable2(&b, &v)
		} else {
			in.variable3(&b, &v)
		}
	}
	b.WriteString("  </ModelVariables>\n  <ModelStructure>\n")
	// The outputs at a communication point are BeamNG's message of that
	// time, computed by BeamNG from the inputs held over the step before:
	// they depend on no input of the same instant (no direct feedthrough,
	// so a master closing a loop through the FMU has no algebraic loop).
	if major == 2 && in.Count(Output) > 0 { // an empty list is not allowed
		for _, list := range []string{"Outputs", "InitialUnknowns"} {
			w("    <%s>\n", list)
			for i, v := range in.Vars {
				if v.Causality == Output {
					w("      <Unknown index=\"%d\" dependencies=\"\"/>\n", i+1)
				}
			}
			w("    </%s>\n", list)
		}
	} else if major == 3 {
		for _, v := range in.Vars {
			if v.Causality == Output {
				w("    <Output valueReference=\"%d\" dependencies=\"\"/>\n", v.VR)
			}
		}
		for _, v := range in.Vars {
			if v.Causality == Output {
				w("    <InitialUnknown valueReference=\"%d\" dependencies=\"\"/>\n", v.VR)
			}
		}
	}
	b.WriteString("  </ModelStructure>\n</fmiModelDescription>\n")
	return b.Bytes()
}

// The attributes every variable has. An output's start is the field's
// initialValue, what it holds until BeamNG's first message (initial
// "approx": the FMU computes the value, from BeamNG's message, as it
// leaves initialization); an input's and a parameter's is exact.
func (v *Variable) attrs() string {
	s := fmt.Sprintf(`name=%s valueReference="%d" causality=%q`, attr(v.Name), v.VR, v.Causality.String())
	switch {
	case v.Causality == Parameter:
		s += ` variability="fixed"`
	case v.Causality == Independent:
		s += ` variability="continuous"`
	case v.Type == Real:
		s += ` variability="continuous"`
	default:
		s += ` variability="discrete"`
	}
	if v.Causality == Output {
		s += ` initial="approx"`
	}
	if v.Description != "" {
		s += " description=" + attr(v.Description)
	}
	return s
}

func (in *Interface) variable2(b *bytes.Buffer, v *Variable) {
	fmt.Fprintf(b, "    <ScalarVariable %s>", v.attrs())
	typ := map[Type]string{Real: "Real", Integer: "Integer", String: "String"}[v.Type]
	fmt.Fprintf(b, "<%s%s%s/></ScalarVariable>\n", typ, v.start(), v.bounds())
}

func (in *Interface) variable3(b *bytes.Buffer, v *Variable) {
	switch v.Type {
	case String:
		fmt.Fprintf(b, "    <String %s><Start value=%s/></String>\n", v.attrs(), attr(v.Start))
	case Integer:
		fmt.Fprintf(b, "    <Int32 %s%s%s/>\n", v.attrs(), v.start(), v.bounds())
	default:
		fmt.Fprintf(b, "    <Float64 %s%s%s/>\n", v.attrs(), v.start(), v.bounds())
	}
}

// start is a number's start attribute; the independent variable has
// none (its value is the master's start time).
func (v *Variable) start() string {
	if v.Causality == Independent {
		return ""
	}
	return " start=" + attr(v.Start)
}

// bounds are the unit, min and max attributes of a number.
func (v *Variable) bounds() string {
	s := ""
	if v.Unit != "" {
		s += " unit=" + attr(v.Unit)
	}
	if v.Min != "" {
		s += " min=" + attr(v.Min)
	}
	if v.Max != "" {
		s += " max=" + attr(v.Max)
	}
	return s
}

// attr quotes an XML attribute's value.
func attr(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	xml.EscapeText(&b, []byte(s))
	b.WriteByte('"')
	return b.String()
}
