package system

import (
	"fmt"
	"strings"

	"beamconnect/fmu"
)

// Units a system's connectors are measured in. A unit's name is looked up
// in the .ssd's Units, then the FMU's UnitDefinitions, then the common
// names below (which BeamNG's signals are measured in); a connection
// between two units of one quantity converts its values, one between two
// quantities is refused, and one whose unit is unknown is taken as it is
// (said as a warning when the names differ).

// unit is a unit resolved to SI base units; known is false for a name no
// definition says.
type unit struct {
	name  string
	base  fmu.BaseUnit
	known bool
}

// si is a unit of SI base units without factor or offset.
func si(kg, m, s, a, k, mol, cd, rad int) fmu.BaseUnit {
	return fmu.BaseUnit{Exp: [8]int{kg, m, s, a, k, mol, cd, rad}, Factor: 1}
}

func scaled(b fmu.BaseUnit, factor, offset float64) fmu.BaseUnit {
	b.Factor, b.Offset = factor, offset
	return b
}

// commonUnits are the names BeamNG's catalogue, FMUs and tools commonly
// use, for a unit no file defines.
var commonUnits = map[string]fmu.BaseUnit{
	"1": si(0, 0, 0, 0, 0, 0, 0, 0), "%": scaled(si(0, 0, 0, 0, 0, 0, 0, 0), 0.01, 0),
	"m": si(0, 1, 0, 0, 0, 0, 0, 0), "km": scaled(si(0, 1, 0, 0, 0, 0, 0, 0), 1000, 0), "mm": scaled(si(0, 1, 0, 0, 0, 0, 0, 0), 0.001, 0),
	"s": si(0, 0, 1, 0, 0, 0, 0, 0), "ms": scaled(si(0, 0, 1, 0, 0, 0, 0, 0), 0.001, 0),
	"m/s": si(0, 1, -1, 0, 0, 0, 0, 0), "km/h": scaled(si(0, 1, -1, 0, 0, 0, 0, 0), 1/3.6, 0), "mph": scaled(si(0, 1, -1, 0, 0, 0, 0, 0), 0.44704, 0),
	"m/s²": si(0, 1, -2, 0, 0, 0, 0, 0), "m/s2": si(0, 1, -2, 0, 0, 0, 0, 0), "m/s^2": si(0, 1, -2, 0, 0, 0, 0, 0),
	"rad": si(0, 0, 0, 0, 0, 0, 0, 1), "deg": scaled(si(0, 0, 0, 0, 0, 0, 0, 1), 0.017453292519943295, 0), "°": scaled(si(0, 0, 0, 0, 0, 0, 0, 1), 0.017453292519943295, 0),
	"rad/s": si(0, 0, -1, 0, 0, 0, 0, 1), "deg/s": scaled(si(0, 0, -1, 0, 0, 0, 0, 1), 0.017453292519943295, 0),
	"1/min": scaled(si(0, 0, -1, 0, 0, 0, 0, 0), 1.0/60, 0), "rpm": scaled(si(0, 0, -1, 0, 0, 0, 0, 0), 1.0/60, 0),
	"1/s": si(0, 0, -1, 0, 0, 0, 0, 0), "Hz": si(0, 0, -1, 0, 0, 0, 0, 0),
	"kg": si(1, 0, 0, 0, 0, 0, 0, 0), "N": si(1, 1, -2, 0, 0, 0, 0, 0),
	"N·m": si(1, 2, -2, 0, 0, 0, 0, 0), "N.m": si(1, 2, -2, 0, 0, 0, 0, 0), "Nm": si(1, 2, -2, 0, 0, 0, 0, 0),
	"W": si(1, 2, -3, 0, 0, 0, 0, 0), "kW": scaled(si(1, 2, -3, 0, 0, 0, 0, 0), 1000, 0),
	"Pa": si(1, -1, -2, 0, 0, 0, 0, 0), "bar": scaled(si(1, -1, -2, 0, 0, 0, 0, 0), 1e5, 0),
	"A": si(0, 0, 0, 1, 0, 0, 0, 0), "V": si(1, 2, -3, -1, 0, 0, 0, 0),
	"K": si(0, 0, 0, 0, 1, 0, 0, 0), "degC": scaled(si(0, 0, 0, 0, 1, 0, 0, 0), 1, 273.15), "°C": scaled(si(0, 0, 0, 0, 1, 0, 0, 0), 1, 273.15),
}

// describeBase writes a unit in SI base units, for messages: "m·s-1".
func describeBase(b fmu.BaseUnit) string {
	var parts []string
	for i, e := range b.Exp {
		switch {
		case e == 1:
			parts = append(parts, fmu.BaseUnitNames[i])
		case e != 0:
			parts = append(parts, fmt.Sprintf("%s%d", fmu.BaseUnitNames[i], e))
		}
	}
	if len(parts) == 0 {
		return "no dimension"
	}
	return strings.Join(parts, "·")
}

// conversion is how a value in one unit becomes the same value in
// another: x in from is (x·from.Factor + from.Offset) in SI, and that is
// (y·to.Factor + to.Offset) in to.
type conversion struct {
	on       bool
	from, to fmu.BaseUnit
}

func (c conversion) apply(x float64) float64 {
	if !c.on {
		return x
	}
	return (x*c.from.Factor + c.from.Offset - c.to.Offset) / c.to.Factor
}

// convert says how values of unit a reach a connector of unit b: a
// conversion when both are known units of one quantity (none when they
// are the same), an error when they are of different quantities, a
// warning when one of them is not known and their names differ.
func convert(a, b unit) (c conversion, warn string, err error) {
	switch {
	case a.name == "" || b.name == "" || a.name == b.name:
		return conversion{}, "", nil
	case !a.known || !b.known:
		unknown := a.name
		if a.known {
			unknown = b.name
		}
		return conversion{}, fmt.Sprintf("the unit %q is defined nowhere (the .ssd's Units, the FMU's UnitDefinitions): values go from %s to %s unconverted", unknown, a.name, b.name), nil
	case !a.base.SameDimension(b.base):
		return conversion{}, "", fmt.Errorf("the units do not fit: %s (%s) is not a quantity %s (%s) measures", a.name, describeBase(a.base), b.name, describeBase(b.base))
	case a.base.Factor == b.base.Factor && a.base.Offset == b.base.Offset:
		return conversion{}, "", nil
	}
	return conversion{on: true, from: a.base, to: b.base}, "", nil
}
