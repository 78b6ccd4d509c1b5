package fmu

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// What Check reads of a modelDescription.xml: every attribute its rules
// look at, kept as written, with the line of each element a problem can
// be found at. ParseDescription reads what beamconnect runs an FMU with
// and stops at the first error; this reading keeps going, so that Check
// can say everything that is wrong at once.

// mdModel is the description as Check reads it.
type mdModel struct {
	major      int
	version    string
	token      string // guid (2.0) or instantiationToken (3.0)
	naming     string // variableNamingConvention
	interfaces []mdInterface
	units      map[string][]string // unit → its display units
	types      map[string]mdType   // declared types by name
	vars       []mdVar
	structure  mdStructure
	rootLine   int // the line of <fmiModelDescription>
	endLine    int // the line ModelVariables ends at, for problems of the whole list
}

type mdInterface struct {
	name, identifier string // CoSimulation, ModelExchange, ScheduledExecution
	line             int
}

type mdType struct {
	base string // Real, Integer… (2.0); Float64, Int32… (3.0, without "Type")
	unit string
}

// mdVar is one variable: FMI 2.0's ScalarVariable with its type element's
// attributes, or an FMI 3.0 variable element.
type mdVar struct {
	line                                   int
	name, vr, causality, variability       string
	initial, typ, unit, displayUnit        string
	declaredType, derivative, clocks       string
	hasInitial, hasStart, hasVariability   bool
	hasCausality, hasDerivative, hasClocks bool
	dims                                   []mdDimension
}

type mdDimension struct{ start, vr string }

// mdUnknown is an entry of ModelStructure: FMI 2.0's Unknown (index, the
// variable's place in ModelVariables from 1) or an FMI 3.0 element
// (valueReference).
type mdUnknown struct {
	line                int
	ref                 string
	dependencies, kinds string
	hasDependencies     bool
}

type mdStructure struct {
	line                                  int
	outputs, derivatives, initialUnknowns []mdUnknown
	clockedStates, eventIndicators        []mdUnknown
}

// The XML of a variable, both versions. FMI 2.0 wraps the type's element
// in a ScalarVariable; FMI 3.0 names the element after its type.
type xmlCheckVar struct {
	XMLName   xml.Name
	Attrs     []xml.Attr `xml:",any,attr"`
	Inner     []xmlCheckVar
	Dimension []struct {
		Start string `xml:"start,attr"`
		VR    string `xml:"valueReference,attr"`
	} `xml:"Dimension"`
	Starts []struct{} `xml:"Start"` // FMI 3.0: a String's or Binary's start values
}

func (x *xmlCheckVar) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	x.XMLName, x.Attrs = start.Name, start.Attr
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			switch t.Name.Local {
			case "Dimension":
				var dim struct {
					Start string `xml:"start,attr"`
					VR    string `xml:"valueReference,attr"`
				}
				if err := d.DecodeElement(&dim, &t); err != nil {
					return err
				}
				x.Dimension = append(x.Dimension, dim)
			case "Start":
				x.Starts = append(x.Starts, struct{}{})
				if err := d.Skip(); err != nil {
					return err
				}
			case "Real", "Integer", "Boolean", "String", "Enumeration":
				var in xmlCheckVar
				if err := in.UnmarshalXML(d, t); err != nil {
					return err
				}
				x.Inner = append(x.Inner, in)
			default:
				if err := d.Skip(); err != nil {
					return err
				}
			}
		}
	}
}

func attrOf(attrs []xml.Attr, name string) (string, bool) {
	for _, a := range attrs {
		if a.Name.Local == name && a.Name.Space == "" {
			return a.Value, true
		}
	}
	return "", false
}

// readForCheck reads data as Check needs it. It fails only where the XML
// itself cannot be read.
func readForCheck(data []byte) (*mdModel, error) {
	m := &mdModel{units: map[string][]string{}, types: map[string]mdType{}}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	most, err := variablesLimit()
	if err != nil {
		return nil, err
	}
	var path []string // the elements open around the token
	for {
		tok, err := dec.Token()
		if err == io.EOF && len(path) == 0 {
			if m.version == "" {
				return nil, errors.New("no <fmiModelDescription> element")
			}
			return m, nil
		}
		if err != nil {
			return nil, err
		}
		line, _ := dec.InputPos()
		switch t := tok.(type) {
		case xml.EndElement:
			if len(path) == 2 && path[1] == "ModelVariables" {
				m.endLine = line
			}
			path = path[:len(path)-1]
		case xml.StartElement:
			// Element names of the root's children are matched without a
			// namespace, as FMI writes them.
			here := strings.Join(append(path, t.Name.Local), "/")
			decoded := true
			switch {
			case len(path) == 0:
				if t.Name.Local != "fmiModelDescription" {
					return nil, fmt.Errorf("the root element is <%s>, expected <fmiModelDescription>", t.Name.Local)
				}
				m.rootLine = line
				m.version, _ = attrOf(t.Attr, "fmiVersion")
				m.naming, _ = attrOf(t.Attr, "variableNamingConvention")
				switch {
				case m.version == "2.0" || strings.HasPrefix(m.version, "2.0."):
					m.major = 2
					m.token, _ = attrOf(t.Attr, "guid")
				case strings.HasPrefix(m.version, "3."):
					m.major = 3
					m.token, _ = attrOf(t.Attr, "instantiationToken")
				default:
					return nil, fmt.Errorf("fmiVersion %q: expected 2.0 or 3.0", m.version)
				}
				decoded = false
			case len(path) == 1 && (t.Name.Local == "CoSimulation" || t.Name.Local == "ModelExchange" || t.Name.Local == "ScheduledExecution"):
				id, _ := attrOf(t.Attr, "modelIdentifier")
				m.interfaces = append(m.interfaces, mdInterface{name: t.Name.Local, identifier: id, line: line})
				err = dec.Skip()
			case here == "fmiModelDescription/UnitDefinitions/Unit":
				err = m.readUnit(dec, t)
			case len(path) == 2 && path[1] == "TypeDefinitions":
				err = m.readType(dec, t)
			case len(path) == 2 && path[1] == "ModelVariables":
				if len(m.vars) >= most {
					return nil, tooManyVariables(most)
				}
				err = m.readVar(dec, t, line)
			case here == "fmiModelDescription/ModelStructure":
				m.structure.line = line
				decoded = false
			case len(path) == 2 && path[1] == "ModelStructure":
				err = m.readStructure(dec, t, line)
			default:
				decoded = false
			}
			if err != nil {
				return nil, err
			}
			if !decoded {
				path = append(path, t.Name.Local)
			}
		}
	}
}

func (m *mdModel) readUnit(dec *xml.Decoder, t xml.StartElement) error {
	var u struct {
		Name    string `xml:"name,attr"`
		Display []struct {
			Name string `xml:"name,attr"`
		} `xml:"DisplayUnit"`
	}
	if err := dec.DecodeElement(&u, &t); err != nil {
		return err
	}
	var names []string
	for _, d := range u.Display {
		names = append(names, d.Name)
	}
	m.units[u.Name] = names
	return nil
}

func (m *mdModel) readType(dec *xml.Decoder, t xml.StartElement) error {
	var x struct {
		Name  string `xml:"name,attr"`
		Unit  string `xml:"unit,attr"`
		Inner []struct {
			XMLName xml.Name
			Unit    string `xml:"unit,attr"`
		} `xml:",any"`
	}
	if err := dec.DecodeElement(&x, &t); err != nil {
		return err
	}
	if m.major == 2 { // <SimpleType name><Real unit/></SimpleType>
		if len(x.Inner) > 0 {
			m.types[x.Name] = mdType{base: x.Inner[0].XMLName.Local, unit: x.Inner[0].Unit}
		}
		return nil
	}
	m.types[x.Name] = mdType{base: strings.TrimSuffix(t.Name.Local, "Type"), unit: x.Unit}
	return nil
}

func (m *mdModel) readVar(dec *xml.Decoder, t xml.StartElement, line int) error {
	var x xmlCheckVar
	if err := dec.DecodeElement(&x, &t); err != nil {
		return err
	}
	v := mdVar{line: line}
	v.name, _ = attrOf(x.Attrs, "name")
	v.vr, _ = attrOf(x.Attrs, "valueReference")
	v.causality, v.hasCausality = attrOf(x.Attrs, "causality")
	v.variability, v.hasVariability = attrOf(x.Attrs, "variability")
	v.initial, v.hasInitial = attrOf(x.Attrs, "initial")
	typeAttrs := x.Attrs
	v.typ = x.XMLName.Local
	if m.major == 2 {
		v.typ = ""
		if len(x.Inner) == 1 {
			v.typ, typeAttrs = x.Inner[0].XMLName.Local, x.Inner[0].Attrs
		}
	}
	_, v.hasStart = attrOf(typeAttrs, "start")
	if len(x.Starts) > 0 {
		v.hasStart = true
	}
	v.unit, _ = attrOf(typeAttrs, "unit")
	v.displayUnit, _ = attrOf(typeAttrs, "displayUnit")
	v.declaredType, _ = attrOf(typeAttrs, "declaredType")
	v.derivative, v.hasDerivative = attrOf(typeAttrs, "derivative")
	v.clocks, v.hasClocks = attrOf(x.Attrs, "clocks")
	for _, d := range x.Dimension {
		v.dims = append(v.dims, mdDimension{start: d.Start, vr: d.VR})
	}
	if !v.hasCausality {
		v.causality = "local"
	}
	if !v.hasVariability {
		v.variability = "discrete"
		if v.float() {
			v.variability = "continuous"
		}
	}
	m.vars = append(m.vars, v)
	return nil
}

func (m *mdModel) readStructure(dec *xml.Decoder, t xml.StartElement, line int) error {
	unknown := func(attrs []xml.Attr, line int, refAttr string) mdUnknown {
		u := mdUnknown{line: line}
		u.ref, _ = attrOf(attrs, refAttr)
		u.dependencies, u.hasDependencies = attrOf(attrs, "dependencies")
		u.kinds, _ = attrOf(attrs, "dependenciesKind")
		return u
	}
	if m.major == 3 { // <Output valueReference=… dependencies=…/>
		u := unknown(t.Attr, line, "valueReference")
		switch t.Name.Local {
		case "Output":
			m.structure.outputs = append(m.structure.outputs, u)
		case "ContinuousStateDerivative":
			m.structure.derivatives = append(m.structure.derivatives, u)
		case "InitialUnknown":
			m.structure.initialUnknowns = append(m.structure.initialUnknowns, u)
		case "ClockedState":
			m.structure.clockedStates = append(m.structure.clockedStates, u)
		case "EventIndicator":
			m.structure.eventIndicators = append(m.structure.eventIndicators, u)
		}
		return dec.Skip()
	}
	// FMI 2.0: <Outputs><Unknown index=… dependencies=…/></Outputs>
	var list *[]mdUnknown
	switch t.Name.Local {
	case "Outputs":
		list = &m.structure.outputs
	case "Derivatives":
		list = &m.structure.derivatives
	case "InitialUnknowns":
		list = &m.structure.initialUnknowns
	default:
		return dec.Skip()
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch u := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			at, _ := dec.InputPos()
			if u.Name.Local == "Unknown" {
				*list = append(*list, unknown(u.Attr, at, "index"))
			}
			if err := dec.Skip(); err != nil {
				return err
			}
		}
	}
}

// float reports whether the variable is of a floating-point type.
func (v *mdVar) float() bool {
	return v.typ == "Real" || v.typ == "Float64" || v.typ == "Float32"
}
