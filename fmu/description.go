// Package fmu reads Functional Mock-up Units: the .fmu archive, its
// modelDescription.xml (FMI 2.0 and 3.0), the variables a master can set
// and read, and which platforms the archive has a binary for. It loads
// nothing: package fmu/fmi calls into the binary.
package fmu

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Kind is how a variable's value travels between beamconnect and the FMU.
type Kind uint8

const (
	Unsupported Kind = iota // a type beamconnect does not exchange (String, Binary, Clock, Int64…)
	Float64                 // FMI 2.0 Real, FMI 3.0 Float64
	Float32                 // FMI 3.0 Float32
	Int32                   // FMI 2.0 Integer and Enumeration, FMI 3.0 Int32
	Bool                    // FMI 2.0 Boolean (an int), FMI 3.0 Boolean (a C bool)
)

func (k Kind) String() string {
	switch k {
	case Float64:
		return "float64"
	case Float32:
		return "float32"
	case Int32:
		return "int32"
	case Bool:
		return "bool"
	}
	return "unsupported"
}

// Variable is one model variable.
type Variable struct {
	Name        string
	VR          uint32 // valueReference
	Type        string // as the standard names it: Real, Integer… (2.0); Float64, Int32… (3.0)
	Kind        Kind
	Causality   string // parameter, calculatedParameter, input, output, local, independent, structuralParameter
	Variability string // constant, fixed, tunable, discrete, continuous
	Initial     string // exact, approx, calculated; "" when not given
	Unit        string // its own or its declared type's; "" when none
	Start       string // as written; "" when none
	Description string
	Array       bool // an FMI 3.0 array variable (it has Dimension elements)
}

// Settable reports whether a master may give the variable a value before
// the FMU is initialized: a parameter (fixed or tunable) or an input.
func (v *Variable) Settable() bool {
	switch v.Causality {
	case "parameter", "structuralParameter":
		return v.Variability == "fixed" || v.Variability == "tunable"
	case "input":
		return true
	}
	return false
}

// Tunable reports whether the variable may change while the FMU runs.
func (v *Variable) Tunable() bool {
	return v.Causality == "input" || v.Causality == "parameter" && v.Variability == "tunable"
}

// Experiment is the FMU's DefaultExperiment; a nil field was not given.
type Experiment struct {
	StartTime, StopTime, Tolerance, StepSize *float64
}

// CoSimulation is the FMU's co-simulation interface.
type CoSimulation struct {
	ModelIdentifier string // the binary's base name
	// VariableStep is canHandleVariableCommunicationStepSize: the FMU
	// accepts a doStep of any size, not only its fixed one.
	VariableStep bool
	// FixedInternalStepSize is FMI 3.0's, 0 when not given.
	FixedInternalStepSize float64
}

// Description is what modelDescription.xml says.
type Description struct {
	FMIVersion string // as written, e.g. "2.0" or "3.0"
	Major      int    // 2 or 3
	ModelName  string
	Token      string // FMI 2.0 guid, FMI 3.0 instantiationToken
	Generator  string // generationTool, "" when not given
	CoSim      *CoSimulation
	// Interfaces lists every interface the FMU has: "CoSimulation",
	// "ModelExchange", "ScheduledExecution".
	Interfaces []string
	Default    Experiment
	Variables  []Variable
}

// Variable finds a variable by name.
func (d *Description) Variable(name string) (*Variable, bool) {
	for i := range d.Variables {
		if d.Variables[i].Name == name {
			return &d.Variables[i], true
		}
	}
	return nil, false
}

// Names lists every variable's name, in the description's order.
func (d *Description) Names() []string {
	out := make([]string, len(d.Variables))
	for i := range d.Variables {
		out[i] = d.Variables[i].Name
	}
	return out
}

// The XML of both versions. FMI 2.0 wraps a variable's type in a
// ScalarVariable; FMI 3.0 names the element after the type.
type xmlModel struct {
	XMLName    xml.Name
	FMIVersion string       `xml:"fmiVersion,attr"`
	ModelName  string       `xml:"modelName,attr"`
	GUID       string       `xml:"guid,attr"`
	Token      string       `xml:"instantiationToken,attr"`
	Generator  string       `xml:"generationTool,attr"`
	CoSim      *xmlCoSim    `xml:"CoSimulation"`
	ME         *struct{}    `xml:"ModelExchange"`
	SE         *struct{}    `xml:"ScheduledExecution"`
	Types      xmlTypes     `xml:"TypeDefinitions"`
	Default    *xmlDefault  `xml:"DefaultExperiment"`
	Vars       xmlVariables `xml:"ModelVariables"`
}

type xmlCoSim struct {
	ModelIdentifier string `xml:"modelIdentifier,attr"`
	VariableStep    string `xml:"canHandleVariableCommunicationStepSize,attr"`
	FixedStep       string `xml:"fixedInternalStepSize,attr"`
}

type xmlDefault struct {
	StartTime string `xml:"startTime,attr"`
	StopTime  string `xml:"stopTime,attr"`
	Tolerance string `xml:"tolerance,attr"`
	StepSize  string `xml:"stepSize,attr"`
}

type xmlTypes struct {
	Simple []struct { // FMI 2.0
		Name string      `xml:"name,attr"`
		Real *xmlTypeRef `xml:"Real"`
	} `xml:"SimpleType"`
	Any []struct { // FMI 3.0: Float64Type, Int32Type…
		XMLName xml.Name
		Name    string `xml:"name,attr"`
		Unit    string `xml:"unit,attr"`
	} `xml:",any"`
}

type xmlTypeRef struct {
	Start        string `xml:"start,attr"`
	Unit         string `xml:"unit,attr"`
	DeclaredType string `xml:"declaredType,attr"`
}

// xmlVariables is ModelVariables, decoded one variable at a time so that
// decoding stops at the limit on variables, before the time and memory a
// huge description would take.
type xmlVariables struct {
	Scalar []xmlScalar // FMI 2.0
	Any    []xmlAny    // FMI 3.0
}

type xmlScalar struct {
	xmlVarAttrs
	Real        *xmlTypeRef `xml:"Real"`
	Integer     *xmlTypeRef `xml:"Integer"`
	Boolean     *xmlTypeRef `xml:"Boolean"`
	String      *xmlTypeRef `xml:"String"`
	Enumeration *xmlTypeRef `xml:"Enumeration"`
}

type xmlAny struct {
	XMLName xml.Name
	xmlVarAttrs
	xmlTypeRef
	Dimension []struct{} `xml:"Dimension"`
}

func (v *xmlVariables) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	most, err := variablesLimit()
	if err != nil {
		return err
	}
	for n := 0; ; {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			if n++; n > most {
				return tooManyVariables(most)
			}
			if t.Name.Local == "ScalarVariable" {
				v.Scalar = append(v.Scalar, xmlScalar{})
				err = d.DecodeElement(&v.Scalar[len(v.Scalar)-1], &t)
			} else {
				v.Any = append(v.Any, xmlAny{})
				err = d.DecodeElement(&v.Any[len(v.Any)-1], &t)
			}
			if err != nil {
				return err
			}
		}
	}
}

type xmlVarAttrs struct {
	Name        string `xml:"name,attr"`
	VR          string `xml:"valueReference,attr"`
	Causality   string `xml:"causality,attr"`
	Variability string `xml:"variability,attr"`
	Initial     string `xml:"initial,attr"`
	Description string `xml:"description,attr"`
}

// ParseDescription reads a modelDescription.xml.
func ParseDescription(data []byte) (*Description, error) {
	var m xmlModel
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("modelDescription.xml: %w", err)
	}
	if m.XMLName.Local != "fmiModelDescription" {
		return nil, fmt.Errorf("modelDescription.xml: the root element is <%s>, expected <fmiModelDescription>", m.XMLName.Local)
	}
	d := &Description{FMIVersion: m.FMIVersion, ModelName: m.ModelName, Generator: m.Generator}
	switch {
	case m.FMIVersion == "2.0" || strings.HasPrefix(m.FMIVersion, "2.0."):
		d.Major, d.Token = 2, m.GUID
	case strings.HasPrefix(m.FMIVersion, "3."):
		d.Major, d.Token = 3, m.Token
	case m.FMIVersion == "":
		return nil, errors.New("modelDescription.xml: no fmiVersion attribute")
	default:
		return nil, fmt.Errorf("modelDescription.xml: fmiVersion %q is not supported: expected 2.0 or 3.0", m.FMIVersion)
	}
	if m.CoSim != nil {
		d.Interfaces = append(d.Interfaces, "CoSimulation")
		d.CoSim = &CoSimulation{ModelIdentifier: m.CoSim.ModelIdentifier, VariableStep: m.CoSim.VariableStep == "true"}
		if m.CoSim.FixedStep != "" {
			f, err := parseFloat(m.CoSim.FixedStep)
			if err != nil {
				return nil, fmt.Errorf("modelDescription.xml: CoSimulation fixedInternalStepSize: %w", err)
			}
			d.CoSim.FixedInternalStepSize = f
		}
		if !validIdentifier(d.CoSim.ModelIdentifier) {
			return nil, fmt.Errorf("modelDescription.xml: CoSimulation modelIdentifier %q: expected a C identifier naming the binary", d.CoSim.ModelIdentifier)
		}
	}
	if m.ME != nil {
		d.Interfaces = append(d.Interfaces, "ModelExchange")
	}
	if m.SE != nil {
		d.Interfaces = append(d.Interfaces, "ScheduledExecution")
	}
	if m.Default != nil {
		if err := d.Default.read(m.Default); err != nil {
			return nil, err
		}
	}
	var err error
	if d.Major == 2 {
		err = d.variables2(&m)
	} else {
		err = d.variables3(&m)
	}
	if err != nil {
		return nil, err
	}
	return d, d.check()
}

func (e *Experiment) read(x *xmlDefault) error {
	for _, f := range []struct {
		name, text string
		to         **float64
	}{{"startTime", x.StartTime, &e.StartTime}, {"stopTime", x.StopTime, &e.StopTime},
		{"tolerance", x.Tolerance, &e.Tolerance}, {"stepSize", x.StepSize, &e.StepSize}} {
		if f.text == "" {
			continue
		}
		v, err := parseFloat(f.text)
		if err != nil {
			return fmt.Errorf("modelDescription.xml: DefaultExperiment %s: %w", f.name, err)
		}
		*f.to = &v
	}
	return nil
}

func parseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	return v, nil
}

func (d *Description) variables2(m *xmlModel) error {
	units := map[string]string{}
	for _, t := range m.Types.Simple {
		if t.Real != nil {
			units[t.Name] = t.Real.Unit
		}
	}
	for _, x := range m.Vars.Scalar {
		v := Variable{Name: x.Name, Causality: x.Causality, Variability: x.Variability, Initial: x.Initial, Description: x.Description}
		var ref *xmlTypeRef
		n := 0
		for _, c := range []struct {
			name string
			r    *xmlTypeRef
			kind Kind
		}{{"Real", x.Real, Float64}, {"Integer", x.Integer, Int32}, {"Boolean", x.Boolean, Bool},
			{"String", x.String, Unsupported}, {"Enumeration", x.Enumeration, Int32}} {
			if c.r != nil {
				v.Type, v.Kind, ref = c.name, c.kind, c.r
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("modelDescription.xml: variable %q: expected exactly one of Real, Integer, Boolean, String or Enumeration, got %d", x.Name, n)
		}
		v.Start, v.Unit = ref.Start, ref.Unit
		if v.Unit == "" && v.Type == "Real" {
			v.Unit = units[ref.DeclaredType]
		}
		if v.Variability == "" {
			v.Variability = "continuous"
		}
		if err := v.finish(x.VR); err != nil {
			return err
		}
		d.Variables = append(d.Variables, v)
	}
	return nil
}

// kinds3 is how beamconnect exchanges each FMI 3.0 variable type.
var kinds3 = map[string]Kind{
	"Float64": Float64, "Float32": Float32, "Int32": Int32, "Boolean": Bool,
	"Int8": Unsupported, "UInt8": Unsupported, "Int16": Unsupported, "UInt16": Unsupported,
	"UInt32": Unsupported, "Int64": Unsupported, "UInt64": Unsupported,
	"String": Unsupported, "Binary": Unsupported, "Enumeration": Unsupported, "Clock": Unsupported,
}

func (d *Description) variables3(m *xmlModel) error {
	units := map[string]string{}
	for _, t := range m.Types.Any {
		units[t.Name] = t.Unit
	}
	for _, x := range m.Vars.Any {
		typ := x.XMLName.Local
		kind, ok := kinds3[typ]
		if !ok {
			return fmt.Errorf("modelDescription.xml: <%s name=%q>: not an FMI 3.0 variable type", typ, x.Name)
		}
		v := Variable{Name: x.Name, Type: typ, Kind: kind, Causality: x.Causality, Variability: x.Variability,
			Initial: x.Initial, Description: x.Description, Start: x.Start, Unit: x.Unit, Array: len(x.Dimension) > 0}
		if v.Unit == "" {
			v.Unit = units[x.DeclaredType]
		}
		if v.Variability == "" {
			v.Variability = "discrete"
			if typ == "Float64" || typ == "Float32" {
				v.Variability = "continuous"
			}
		}
		if err := v.finish(x.VR); err != nil {
			return err
		}
		d.Variables = append(d.Variables, v)
	}
	return nil
}

// finish checks what both versions share and applies the defaults.
func (v *Variable) finish(vr string) error {
	if v.Name == "" {
		return errors.New("modelDescription.xml: a variable without a name")
	}
	n, err := strconv.ParseUint(strings.TrimSpace(vr), 10, 32)
	if err != nil {
		return fmt.Errorf("modelDescription.xml: variable %q: valueReference %q: expected a number from 0 to 4294967295", v.Name, vr)
	}
	v.VR = uint32(n)
	if v.Causality == "" {
		v.Causality = "local"
	}
	switch v.Causality {
	case "parameter", "calculatedParameter", "input", "output", "local", "independent", "structuralParameter":
	default:
		return fmt.Errorf("modelDescription.xml: variable %q: causality %q: expected parameter, calculatedParameter, input, output, local or independent", v.Name, v.Causality)
	}
	switch v.Variability {
	case "constant", "fixed", "tunable", "discrete", "continuous":
	default:
		return fmt.Errorf("modelDescription.xml: variable %q: variability %q: expected constant, fixed, tunable, discrete or continuous", v.Name, v.Variability)
	}
	return nil
}

// check finds what would make binding by name ambiguous.
func (d *Description) check() error {
	seen := make(map[string]bool, len(d.Variables))
	for _, v := range d.Variables {
		if seen[v.Name] {
			return fmt.Errorf("modelDescription.xml: two variables are named %q", v.Name)
		}
		seen[v.Name] = true
	}
	return nil
}

func validIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9'
		if !ok {
			return false
		}
	}
	return true
}
