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
	"slices"
	"strconv"
	"strings"
)

// Kind is how a variable's value travels between beamconnect and the FMU.
// Every numeric kind travels in the port vectors as a float64 (integers
// of more than 53 bits lose their last bits); String and Binary are set
// once, as parameters, before the FMU is initialized.
type Kind uint8

const (
	Unsupported Kind = iota // a type beamconnect does not exchange (Clock)
	Float64                 // FMI 2.0 Real, FMI 3.0 Float64
	Float32                 // FMI 3.0 Float32
	Int32                   // FMI 2.0 Integer, FMI 3.0 Int32
	Bool                    // FMI 2.0 Boolean (an int), FMI 3.0 Boolean (a C bool)
	Int8                    // FMI 3.0 Int8 …
	UInt8
	Int16
	UInt16
	UInt32
	Int64
	UInt64
	Enum   // FMI 2.0 Enumeration (set as an Integer), FMI 3.0 Enumeration (set as an Int64)
	String // set before initialization only
	Binary // set before initialization only, from hexadecimal text
	numKinds
)

var kindNames = [numKinds]string{"unsupported", "float64", "float32", "int32", "bool", "int8", "uint8", "int16",
	"uint16", "uint32", "int64", "uint64", "enumeration", "string", "binary"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "unsupported"
}

// Numeric reports whether values of the kind travel as numbers: every
// kind but String, Binary and the unsupported.
func (k Kind) Numeric() bool { return k >= Float64 && k <= Enum }

// Integer reports whether the kind holds whole numbers.
func (k Kind) Integer() bool { return k == Int32 || k >= Int8 && k <= Enum }

// Limits are the smallest and largest value the kind can hold (as float64:
// the 64-bit kinds' limits rounded), ±Inf for the floating-point kinds.
func (k Kind) Limits() (lo, hi float64) {
	switch k {
	case Int8:
		return math.MinInt8, math.MaxInt8
	case UInt8:
		return 0, math.MaxUint8
	case Int16:
		return math.MinInt16, math.MaxInt16
	case UInt16:
		return 0, math.MaxUint16
	case Int32:
		return math.MinInt32, math.MaxInt32
	case UInt32:
		return 0, math.MaxUint32
	case Int64, Enum:
		return math.MinInt64, math.MaxInt64
	case UInt64:
		return 0, math.MaxUint64
	case Bool:
		return 0, 1
	}
	return math.Inf(-1), math.Inf(1)
}

// Variable is one model variable.
type Variable struct {
	Name        string
	VR          uint32
	Type        string // as the standard names it: Real, Integer… (2.0); Float64, Int32… (3.0)
	Kind        Kind
	Causality   string // parameter, calculatedParameter, input, output, local, independent, structuralParameter
	Variability string // constant, fixed, tunable, discrete, continuous
	Initial     string // exact, approx, calculated; "" when not given
	Unit        string // its own or its declared type's; "" when none
	// Start is the start value as written; an array's elements are
	// separated by spaces; a String's or Binary's elements (FMI 3.0's
	// <Start value>) are in Starts too.
	Start        string
	Starts       []string
	Description  string
	DeclaredType string
	// Min and Max are its own or its declared type's bounds; nil when none.
	Min, Max *float64
	// Items are an enumeration's items (from its declared type).
	Items []Item
	// Dims are an FMI 3.0 array's dimensions; none for a scalar.
	Dims  []Dimension
	Array bool // an FMI 3.0 array variable (it has Dims)
}

// Item is one item of an enumeration.
type Item struct {
	Name        string
	Value       int64
	Description string
}

// Dimension is one dimension of an array variable: a fixed size (Start),
// or the value of a structural parameter (VR, when Param).
type Dimension struct {
	Start uint64
	VR    uint32
	Param bool
}

// Shape is an array variable's dimensions as inspect and the messages
// write them: "[3]", "[2,3]", or a structural parameter's name and its
// start value, "[n=3]"; "" for a scalar.
func (d *Description) Shape(v *Variable) string {
	if !v.Array {
		return ""
	}
	var dims []string
	for _, dim := range v.Dims {
		if !dim.Param {
			dims = append(dims, strconv.FormatUint(dim.Start, 10))
			continue
		}
		p, ok := d.ByVR(dim.VR)
		switch {
		case !ok:
			dims = append(dims, fmt.Sprintf("vr %d", dim.VR))
		case p.Start != "":
			dims = append(dims, p.Name+"="+p.Start)
		default:
			dims = append(dims, p.Name)
		}
	}
	return "[" + strings.Join(dims, ",") + "]"
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

// Item finds an enumeration's item by value.
func (v *Variable) Item(value int64) (Item, bool) {
	for _, it := range v.Items {
		if it.Value == value {
			return it, true
		}
	}
	return Item{}, false
}

// Size is the number of elements: 1 for a scalar, the product of the
// dimensions for an array; a structural parameter's dimension is its start
// value (of d) or what size says it is set to (size may be nil).
func (v *Variable) Size(d *Description, size func(vr uint32) (uint64, bool)) (uint64, error) {
	n := uint64(1)
	for _, dim := range v.Dims {
		k := dim.Start
		if dim.Param {
			var ok bool
			if size != nil {
				k, ok = size(dim.VR)
			}
			if !ok {
				p, found := d.ByVR(dim.VR)
				if !found {
					return 0, fmt.Errorf("variable %q: its dimension refers to value reference %d, which no variable has", v.Name, dim.VR)
				}
				f, err := strconv.ParseUint(strings.TrimSpace(p.Start), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("variable %q: its dimension is the structural parameter %q, whose start %q is not a whole number", v.Name, p.Name, p.Start)
				}
				k = f
			}
		}
		if k > 0 && n > MaxVariables/k {
			return 0, fmt.Errorf("variable %q: more than %d elements", v.Name, MaxVariables)
		}
		n *= k
	}
	return n, nil
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
	// CanGetAndSetState: the FMU can save and restore its state (to redo
	// a step it discarded).
	CanGetAndSetState bool
}

// ModelExchange is the FMU's model exchange interface: the master
// integrates its equations.
type ModelExchange struct {
	ModelIdentifier string
	// CompletedIntegratorStep: the FMU needs fmiXCompletedIntegratorStep
	// after every step (FMI 2.0: unless completedIntegratorStepNotNeeded;
	// FMI 3.0: when needsCompletedIntegratorStep).
	CompletedIntegratorStep bool
}

// Description is what modelDescription.xml says.
type Description struct {
	FMIVersion string // as written, e.g. "2.0" or "3.0"
	Major      int    // 2 or 3
	ModelName  string
	Token      string // FMI 2.0 guid, FMI 3.0 instantiationToken
	Generator  string // generationTool, "" when not given
	CoSim      *CoSimulation
	ME         *ModelExchange
	// Interfaces lists every interface the FMU has: "CoSimulation",
	// "ModelExchange", "ScheduledExecution".
	Interfaces []string
	Default    Experiment
	Variables  []Variable
	// States and EventIndicators are a Model Exchange FMU's numbers of
	// continuous states and event indicators as its ModelStructure (FMI
	// 3.0: scalars; the FMU is asked at run time) and, for FMI 2.0,
	// numberOfEventIndicators say.
	States, EventIndicators int
	// Derivatives are a Model Exchange FMU's state derivatives in its
	// ModelStructure's order (the order of its continuous states, FMI 3.0
	// arrays as one each): each one's name and its state's, "" where the
	// description does not say. For messages that name a state.
	Derivatives []Derivative
	// Clocks: the FMU declares clocks (FMI 3.0), which beamconnect does not
	// drive.
	Clocks bool
}

// Derivative is a state derivative of a Model Exchange FMU, and its state.
type Derivative struct{ Name, State string }

// Variable finds a variable by name.
func (d *Description) Variable(name string) (*Variable, bool) {
	for i := range d.Variables {
		if d.Variables[i].Name == name {
			return &d.Variables[i], true
		}
	}
	return nil, false
}

// ByVR finds a variable by value reference (the first: FMI 2.0 aliases
// share one).
func (d *Description) ByVR(vr uint32) (*Variable, bool) {
	for i := range d.Variables {
		if d.Variables[i].VR == vr {
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

// Identifiers are the binaries' base names of the interfaces the FMU has.
func (d *Description) Identifiers() []string {
	var ids []string
	if d.CoSim != nil {
		ids = append(ids, d.CoSim.ModelIdentifier)
	}
	if d.ME != nil && !slices.Contains(ids, d.ME.ModelIdentifier) {
		ids = append(ids, d.ME.ModelIdentifier)
	}
	return ids
}

// The XML of both versions. FMI 2.0 wraps a variable's type in a
// ScalarVariable; FMI 3.0 names the element after the type.
type xmlModel struct {
	XMLName         xml.Name
	FMIVersion      string       `xml:"fmiVersion,attr"`
	ModelName       string       `xml:"modelName,attr"`
	GUID            string       `xml:"guid,attr"`
	Token           string       `xml:"instantiationToken,attr"`
	Generator       string       `xml:"generationTool,attr"`
	EventIndicators string       `xml:"numberOfEventIndicators,attr"`
	CoSim           *xmlCoSim    `xml:"CoSimulation"`
	ME              *xmlME       `xml:"ModelExchange"`
	SE              *struct{}    `xml:"ScheduledExecution"`
	Types           xmlTypes     `xml:"TypeDefinitions"`
	Default         *xmlDefault  `xml:"DefaultExperiment"`
	Vars            xmlVariables `xml:"ModelVariables"`
	Structure       xmlStructure `xml:"ModelStructure"`
}

type xmlCoSim struct {
	ModelIdentifier string `xml:"modelIdentifier,attr"`
	VariableStep    string `xml:"canHandleVariableCommunicationStepSize,attr"`
	FixedStep       string `xml:"fixedInternalStepSize,attr"`
	GetSet2         string `xml:"canGetAndSetFMUstate,attr"`
	GetSet3         string `xml:"canGetAndSetFMUState,attr"`
}

type xmlME struct {
	ModelIdentifier string `xml:"modelIdentifier,attr"`
	NotNeeded       string `xml:"completedIntegratorStepNotNeeded,attr"` // 2.0
	Needs           string `xml:"needsCompletedIntegratorStep,attr"`     // 3.0
}

type xmlStructure struct {
	Derivatives struct {
		Unknown []struct {
			Index string `xml:"index,attr"`
		} `xml:"Unknown"`
	} `xml:"Derivatives"` // 2.0
	StateDerivatives []struct {
		VR string `xml:"valueReference,attr"`
	} `xml:"ContinuousStateDerivative"` // 3.0
	EventIndicators []struct{} `xml:"EventIndicator"` // 3.0
}

type xmlDefault struct {
	StartTime string `xml:"startTime,attr"`
	StopTime  string `xml:"stopTime,attr"`
	Tolerance string `xml:"tolerance,attr"`
	StepSize  string `xml:"stepSize,attr"`
}

// xmlType is a type definition's attributes: FMI 2.0's inner element of a
// SimpleType, FMI 3.0's Float64Type and the like.
type xmlType struct {
	XMLName xml.Name
	Name    string    `xml:"name,attr"`
	Unit    string    `xml:"unit,attr"`
	Min     string    `xml:"min,attr"`
	Max     string    `xml:"max,attr"`
	Items   []xmlItem `xml:"Item"`
}

type xmlItem struct {
	Name        string `xml:"name,attr"`
	Value       string `xml:"value,attr"`
	Description string `xml:"description,attr"`
}

type xmlTypes struct {
	Simple []struct { // FMI 2.0
		Name  string    `xml:"name,attr"`
		Inner []xmlType `xml:",any"`
	} `xml:"SimpleType"`
	Any []xmlType `xml:",any"` // FMI 3.0: Float64Type, EnumerationType…
}

// typeDef is a declared type's attributes a variable inherits.
type typeDef struct {
	unit, min, max string
	items          []xmlItem
}

func (t *xmlTypes) defs(major int) map[string]typeDef {
	out := map[string]typeDef{}
	if major == 2 {
		for _, st := range t.Simple {
			for _, in := range st.Inner {
				out[st.Name] = typeDef{in.Unit, in.Min, in.Max, in.Items}
			}
		}
		return out
	}
	for _, x := range t.Any {
		out[x.Name] = typeDef{x.Unit, x.Min, x.Max, x.Items}
	}
	return out
}

type xmlTypeRef struct {
	Derivative   string `xml:"derivative,attr"` // the state's index (2.0) or value reference (3.0)
	Start        string `xml:"start,attr"`
	Unit         string `xml:"unit,attr"`
	DeclaredType string `xml:"declaredType,attr"`
	Min          string `xml:"min,attr"`
	Max          string `xml:"max,attr"`
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
	Dimension []struct {
		Start string `xml:"start,attr"`
		VR    string `xml:"valueReference,attr"`
	} `xml:"Dimension"`
	Starts []struct {
		Value string `xml:"value,attr"`
	} `xml:"Start"`
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
		d.CoSim = &CoSimulation{ModelIdentifier: m.CoSim.ModelIdentifier, VariableStep: m.CoSim.VariableStep == "true",
			CanGetAndSetState: m.CoSim.GetSet2 == "true" || m.CoSim.GetSet3 == "true"}
		if m.CoSim.FixedStep != "" {
			f, err := parseFloat(m.CoSim.FixedStep)
			if err != nil || f <= 0 {
				return nil, fmt.Errorf("modelDescription.xml: CoSimulation fixedInternalStepSize %q: expected a number of seconds above 0", m.CoSim.FixedStep)
			}
			d.CoSim.FixedInternalStepSize = f
		}
		if !validIdentifier(d.CoSim.ModelIdentifier) {
			return nil, fmt.Errorf("modelDescription.xml: CoSimulation modelIdentifier %q: expected a C identifier naming the binary", d.CoSim.ModelIdentifier)
		}
	}
	if m.ME != nil {
		d.Interfaces = append(d.Interfaces, "ModelExchange")
		d.ME = &ModelExchange{ModelIdentifier: m.ME.ModelIdentifier, CompletedIntegratorStep: m.ME.NotNeeded != "true"}
		if d.Major == 3 {
			d.ME.CompletedIntegratorStep = m.ME.Needs == "true"
		}
		if !validIdentifier(d.ME.ModelIdentifier) {
			return nil, fmt.Errorf("modelDescription.xml: ModelExchange modelIdentifier %q: expected a C identifier naming the binary", d.ME.ModelIdentifier)
		}
	}
	if m.SE != nil {
		d.Interfaces = append(d.Interfaces, "ScheduledExecution")
	}
	if m.Default != nil {
		if err := d.Default.read(m.Default); err != nil {
			return nil, err
		}
	}
	d.States = len(m.Structure.Derivatives.Unknown) + len(m.Structure.StateDerivatives)
	d.EventIndicators = len(m.Structure.EventIndicators)
	if m.EventIndicators != "" {
		n, err := strconv.ParseUint(strings.TrimSpace(m.EventIndicators), 10, 31)
		if err != nil {
			return nil, fmt.Errorf("modelDescription.xml: numberOfEventIndicators %q: expected a whole number", m.EventIndicators)
		}
		d.EventIndicators = int(n)
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
	d.derivatives(&m)
	return d, d.check()
}

// derivatives names the state derivatives and their states, where the
// description says (a wrong index is left unnamed: names only serve
// messages).
func (d *Description) derivatives(m *xmlModel) {
	num := func(s string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		return n, err == nil
	}
	if d.Major == 2 {
		for _, u := range m.Structure.Derivatives.Unknown {
			var dv Derivative
			if i, ok := num(u.Index); ok && i >= 1 && i <= len(d.Variables) && i <= len(m.Vars.Scalar) {
				dv.Name = d.Variables[i-1].Name
				if r := m.Vars.Scalar[i-1].Real; r != nil {
					if k, ok := num(r.Derivative); ok && k >= 1 && k <= len(d.Variables) {
						dv.State = d.Variables[k-1].Name
					}
				}
			}
			d.Derivatives = append(d.Derivatives, dv)
		}
		return
	}
	byVR := make(map[string]int, len(m.Vars.Any))
	for i, x := range m.Vars.Any {
		byVR[strings.TrimSpace(x.VR)] = i
	}
	for _, u := range m.Structure.StateDerivatives {
		var dv Derivative
		if i, ok := byVR[strings.TrimSpace(u.VR)]; ok {
			dv.Name = d.Variables[i].Name
			if k, ok := byVR[strings.TrimSpace(m.Vars.Any[i].Derivative)]; ok {
				dv.State = d.Variables[k].Name
			}
		}
		d.Derivatives = append(d.Derivatives, dv)
	}
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

// bounds reads a variable's min and max, its own or else its declared
// type's.
func (v *Variable) bounds(own *xmlTypeRef, td typeDef) error {
	for _, b := range []struct {
		name       string
		text, from string
		to         **float64
	}{{"min", own.Min, td.min, &v.Min}, {"max", own.Max, td.max, &v.Max}} {
		text := b.text
		if text == "" {
			text = b.from
		}
		if text == "" {
			continue
		}
		f, err := parseFloat(text)
		if err != nil {
			return fmt.Errorf("modelDescription.xml: variable %q: %s %w", v.Name, b.name, err)
		}
		*b.to = &f
	}
	return nil
}

// items reads an enumeration type's items.
func items(typeName string, in []xmlItem) ([]Item, error) {
	out := make([]Item, 0, len(in))
	for i, it := range in {
		value := int64(i + 1) // FMI 2.0 numbers items from 1 when a value is not given
		if it.Value != "" {
			n, err := strconv.ParseInt(strings.TrimSpace(it.Value), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("modelDescription.xml: enumeration %q, item %q: value %q is not a whole number", typeName, it.Name, it.Value)
			}
			value = n
		}
		out = append(out, Item{Name: it.Name, Value: value, Description: it.Description})
	}
	return out, nil
}

func (d *Description) variables2(m *xmlModel) error {
	defs := m.Types.defs(2)
	for _, x := range m.Vars.Scalar {
		v := Variable{Name: x.Name, Causality: x.Causality, Variability: x.Variability, Initial: x.Initial, Description: x.Description}
		var ref *xmlTypeRef
		n := 0
		for _, c := range []struct {
			name string
			r    *xmlTypeRef
			kind Kind
		}{{"Real", x.Real, Float64}, {"Integer", x.Integer, Int32}, {"Boolean", x.Boolean, Bool},
			{"String", x.String, String}, {"Enumeration", x.Enumeration, Enum}} {
			if c.r != nil {
				v.Type, v.Kind, ref = c.name, c.kind, c.r
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("modelDescription.xml: variable %q: expected exactly one of Real, Integer, Boolean, String or Enumeration, got %d", x.Name, n)
		}
		td := defs[ref.DeclaredType]
		v.Start, v.Unit, v.DeclaredType = ref.Start, ref.Unit, ref.DeclaredType
		if v.Unit == "" && v.Type == "Real" {
			v.Unit = td.unit
		}
		if v.Kind == String && v.Start != "" {
			v.Starts = []string{v.Start}
		}
		if err := v.bounds(ref, td); err != nil {
			return err
		}
		if v.Kind == Enum {
			var err error
			if v.Items, err = items(ref.DeclaredType, td.items); err != nil {
				return err
			}
		}
		if v.Variability == "" {
			v.Variability = "continuous"
			if v.Kind != Float64 {
				v.Variability = "discrete"
			}
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
	"Int8": Int8, "UInt8": UInt8, "Int16": Int16, "UInt16": UInt16,
	"UInt32": UInt32, "Int64": Int64, "UInt64": UInt64,
	"String": String, "Binary": Binary, "Enumeration": Enum, "Clock": Unsupported,
}

func (d *Description) variables3(m *xmlModel) error {
	defs := m.Types.defs(3)
	for _, x := range m.Vars.Any {
		typ := x.XMLName.Local
		kind, ok := kinds3[typ]
		if !ok {
			return fmt.Errorf("modelDescription.xml: <%s name=%q>: not an FMI 3.0 variable type", typ, x.Name)
		}
		td := defs[x.DeclaredType]
		v := Variable{Name: x.Name, Type: typ, Kind: kind, Causality: x.Causality, Variability: x.Variability,
			Initial: x.Initial, Description: x.Description, Start: x.Start, Unit: x.Unit, DeclaredType: x.DeclaredType,
			Array: len(x.Dimension) > 0}
		if typ == "Clock" {
			d.Clocks = true
		}
		if v.Unit == "" {
			v.Unit = td.unit
		}
		for _, st := range x.Starts {
			v.Starts = append(v.Starts, st.Value)
		}
		if len(v.Starts) > 0 && v.Start == "" {
			v.Start = strings.Join(v.Starts, " ")
		}
		if kind.Numeric() {
			if err := v.bounds(&x.xmlTypeRef, td); err != nil {
				return err
			}
		}
		if kind == Enum {
			var err error
			if v.Items, err = items(x.DeclaredType, td.items); err != nil {
				return err
			}
		}
		for _, dim := range x.Dimension {
			var dm Dimension
			switch {
			case dim.Start != "" && dim.VR == "":
				n, err := strconv.ParseUint(strings.TrimSpace(dim.Start), 10, 64)
				if err != nil {
					return fmt.Errorf("modelDescription.xml: variable %q: Dimension start %q: expected a whole number", x.Name, dim.Start)
				}
				dm.Start = n
			case dim.VR != "" && dim.Start == "":
				n, err := strconv.ParseUint(strings.TrimSpace(dim.VR), 10, 32)
				if err != nil {
					return fmt.Errorf("modelDescription.xml: variable %q: Dimension valueReference %q: expected a number from 0 to 4294967295", x.Name, dim.VR)
				}
				dm.VR, dm.Param = uint32(n), true
			default:
				return fmt.Errorf("modelDescription.xml: variable %q: a Dimension needs either start or valueReference", x.Name)
			}
			v.Dims = append(v.Dims, dm)
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
