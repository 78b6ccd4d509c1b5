package ports

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"beamconnect/beamng"
)

// Element is one element of a port vector, and the vehicle whose field
// holds it.
type Element struct {
	Port, Elem, Vehicle int
}

// Get reads the element from port vectors.
func (e Element) Get(v [][]float64) float64 { return v[e.Port][e.Elem] }

// Names maps every name a field answers to in one direction to the port
// elements that answer to it, as an FMU binds by name and beamng.quality
// names its fields: the signal's canonical name (groundspeed), its Gen 2
// CSV name with or without its group (Driver/throttle), the propertyName
// the config wrote, a meta or cross-vehicle field's label (time,
// gap:lead); with several vehicles every name also prefixed with the
// field's vehicle (ego.groundspeed); and each of these prefixed with its
// port as a recording names its column (out2.throttle beside
// in1.throttle, out1.ego.groundspeed).
func (p *Plan) Names(dir beamng.Direction) map[string][]Element {
	names := map[string][]Element{}
	add := func(name string, e Element) {
		if name != "" && !slices.Contains(names[name], e) {
			names[name] = append(names[name], e)
		}
	}
	list := p.Outputs
	if dir == beamng.ToBeamNG {
		list = p.Inputs
	}
	several := len(p.Vehicles) > 1
	side := "out"
	if dir == beamng.ToBeamNG {
		side = "in"
	}
	for _, pt := range list[1:] {
		port := side + strconv.Itoa(pt.Number) + "."
		for i := range pt.Fields {
			f := &pt.Fields[i]
			for k := range f.Width {
				e := Element{pt.Number, f.Offset + k, f.Vehicle}
				var own []string
				switch f.Source {
				case Slot:
					s := f.Signal(dir, k)
					own = append(own, s.Name, s.Meaning)
					if s.Group != "" {
						own = append(own, s.Group+"/"+s.Name)
					}
					if f.Width == 1 {
						own = append(own, f.Name)
					}
				case Meta, Relative:
					if f.Width == 1 {
						own = append(own, f.Label(p))
					}
				}
				for _, n := range own {
					if n == "" {
						continue
					}
					if several {
						n = p.Vehicles[f.Vehicle].Name + "." + n
						add(n[len(p.Vehicles[f.Vehicle].Name)+1:], e)
					}
					add(n, e)
					add(port+n, e)
				}
			}
		}
	}
	return names
}

// Resolve finds the one element name answers to in names (Names'). ok is
// false when none does; err says why a name that does cannot be used (it
// is a field of several vehicles).
func (p *Plan) Resolve(names map[string][]Element, name string) (e Element, ok bool, err error) {
	es := names[name]
	if len(es) == 0 {
		return Element{}, false, nil
	}
	for _, o := range es[1:] {
		if o.Vehicle != es[0].Vehicle {
			var qual []string
			for _, o := range es {
				q := p.Vehicles[o.Vehicle].Name + "." + name
				if !slices.Contains(qual, q) {
					qual = append(qual, q)
				}
			}
			return Element{}, true, fmt.Errorf("%q is a field of several vehicles: expected one of %s", name, strings.Join(qual, ", "))
		}
	}
	return es[0], true, nil
}
