package fmu

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Structure is what a model description says of its variables beyond
// their declarations, which a system of FMUs needs: what its units are in
// SI base units, which inputs each output depends on at the same instant
// (direct feedthrough: a loop of them is an algebraic loop), and the
// aliases FMI 3.0 gives variables.
type Structure struct {
	// Units are the description's UnitDefinitions by name; a unit without
	// a BaseUnit has none here.
	Units map[string]BaseUnit
	// Feedthrough maps each output to the inputs it depends on directly;
	// an output whose dependencies are not listed depends on every input
	// (FMI's default).
	Feedthrough map[string][]string
	// Aliases map an FMI 3.0 variable's alias names to its name.
	Aliases map[string]string
}

// BaseUnit is a unit in SI base units: the exponents of kg, m, s, A, K,
// mol, cd and rad, and a value in it is factor × value + offset in them.
type BaseUnit struct {
	Exp            [8]int
	Factor, Offset float64
}

// SameDimension reports whether two units measure the same quantity.
func (u BaseUnit) SameDimension(o BaseUnit) bool { return u.Exp == o.Exp }

// BaseUnitNames are the SI base units in BaseUnit.Exp's order.
var BaseUnitNames = [8]string{"kg", "m", "s", "A", "K", "mol", "cd", "rad"}

type xmlStructureDoc struct {
	Units []struct {
		Name string       `xml:"name,attr"`
		Base *xmlBaseUnit `xml:"BaseUnit"`
	} `xml:"UnitDefinitions>Unit"`
	Vars struct {
		Any []struct {
			Name  string `xml:"name,attr"`
			Alias []struct {
				Name string `xml:"name,attr"`
			} `xml:"Alias"`
		} `xml:",any"`
	} `xml:"ModelVariables"`
	Outputs2 []xmlUnknown `xml:"ModelStructure>Outputs>Unknown"`
	Outputs3 []xmlUnknown `xml:"ModelStructure>Output"`
}

type xmlBaseUnit struct {
	KG     string `xml:"kg,attr"`
	M      string `xml:"m,attr"`
	S      string `xml:"s,attr"`
	A      string `xml:"A,attr"`
	K      string `xml:"K,attr"`
	Mol    string `xml:"mol,attr"`
	CD     string `xml:"cd,attr"`
	Rad    string `xml:"rad,attr"`
	Factor string `xml:"factor,attr"`
	Offset string `xml:"offset,attr"`
}

type xmlUnknown struct {
	Index        string  `xml:"index,attr"`          // FMI 2.0: the output's place among the variables, from 1
	VR           string  `xml:"valueReference,attr"` // FMI 3.0
	Dependencies *string `xml:"dependencies,attr"`
}

// base reads a BaseUnit element's attributes.
func (b *xmlBaseUnit) base() (BaseUnit, error) {
	u := BaseUnit{Factor: 1}
	for i, s := range []string{b.KG, b.M, b.S, b.A, b.K, b.Mol, b.CD, b.Rad} {
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return u, fmt.Errorf("BaseUnit %s=%q: expected a whole number", BaseUnitNames[i], s)
		}
		u.Exp[i] = n
	}
	for _, f := range []struct {
		text string
		to   *float64
	}{{b.Factor, &u.Factor}, {b.Offset, &u.Offset}} {
		if f.text == "" {
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(f.text), 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return u, fmt.Errorf("BaseUnit factor or offset %q: expected a number", f.text)
		}
		*f.to = x
	}
	if u.Factor == 0 {
		return u, fmt.Errorf("BaseUnit factor 0: expected a factor other than 0")
	}
	return u, nil
}

// Structure reads the FMU's units, direct dependencies and aliases from
// its model description.
func (f *FMU) Structure() (*Structure, error) {
	md := f.file("modelDescription.xml")
	limit, err := descriptionLimit()
	if err != nil {
		return nil, err
	}
	data, err := readAll(md, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	s, err := ParseStructure(data, f.Desc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return s, nil
}

// ParseStructure reads the Structure of the model description data,
// whose variables d has read.
func ParseStructure(data []byte, d *Description) (*Structure, error) {
	var x xmlStructureDoc
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("modelDescription.xml: %w", err)
	}
	s := &Structure{Units: map[string]BaseUnit{}, Feedthrough: map[string][]string{}, Aliases: map[string]string{}}
	for _, u := range x.Units {
		if u.Base == nil {
			continue
		}
		b, err := u.Base.base()
		if err != nil {
			return nil, fmt.Errorf("modelDescription.xml: unit %q: %w", u.Name, err)
		}
		s.Units[u.Name] = b
	}
	var inputs []string
	for _, v := range d.Variables {
		if v.Causality == "input" {
			inputs = append(inputs, v.Name)
		}
	}
	// A dependency names a variable: FMI 2.0 by its place among the
	// variables (from 1), FMI 3.0 by its value reference.
	byRef := func(ref string) (*Variable, bool) {
		n, err := strconv.ParseUint(ref, 10, 32)
		if err != nil {
			return nil, false
		}
		if d.Major == 2 {
			if n < 1 || int(n) > len(d.Variables) {
				return nil, false
			}
			return &d.Variables[n-1], true
		}
		return d.ByVR(uint32(n))
	}
	unknowns, key := x.Outputs3, func(u xmlUnknown) string { return u.VR }
	if d.Major == 2 {
		unknowns, key = x.Outputs2, func(u xmlUnknown) string { return u.Index }
	}
	for _, u := range unknowns {
		out, ok := byRef(strings.TrimSpace(key(u)))
		if !ok {
			return nil, fmt.Errorf("modelDescription.xml: ModelStructure names an output %q that is no variable", key(u))
		}
		if u.Dependencies == nil {
			s.Feedthrough[out.Name] = inputs
			continue
		}
		deps := []string{}
		for _, ref := range strings.Fields(*u.Dependencies) {
			v, ok := byRef(ref)
			if !ok {
				return nil, fmt.Errorf("modelDescription.xml: the output %q depends on %q, which is no variable", out.Name, ref)
			}
			if v.Causality == "input" {
				deps = append(deps, v.Name)
			}
		}
		s.Feedthrough[out.Name] = deps
	}
	// An output ModelStructure does not list depends on every input.
	for _, v := range d.Variables {
		if _, listed := s.Feedthrough[v.Name]; v.Causality == "output" && !listed {
			s.Feedthrough[v.Name] = inputs
		}
	}
	for _, v := range x.Vars.Any {
		for _, a := range v.Alias {
			s.Aliases[a.Name] = v.Name
		}
	}
	return s, nil
}
