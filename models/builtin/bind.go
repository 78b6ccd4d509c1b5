package builtin

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/relative"
)

// ref is a bound port element; vehicles, whose data the bound outputs
// carry.
type (
	ref      = models.Ref
	vehicles = models.Vehicles
)

// binder finds the ports a built-in model needs, collecting what is missing
// into one error.
type binder struct {
	plan    *ports.Plan
	model   string
	missing []string
	// reads are the vehicles whose data the bound outputs carry.
	reads vehicles
	// rows are the Gen 2 CSV rows a missing port needs first, by CSV file,
	// files in the order first met.
	rows  map[string][]string
	files []string
}

func (b *binder) need(dir beamng.Direction, name string) ref {
	return b.needFor(dir, name, -1)
}

// needFor binds a signal of vehicle v.
func (b *binder) needFor(dir beamng.Direction, name string, v int) ref {
	p, e, ok := b.plan.FindFor(dir, name, v)
	if !ok {
		b.lack(dir, name, v)
	} else if dir == beamng.FromBeamNG {
		b.reads = b.reads.Add(b.plan, ref{Port: p, Elem: e})
	}
	return ref{Port: p, Elem: e}
}

// lack notes a signal the config does not map, of vehicle v (any when
// v < 0), named as the user must write it: with Gen 2 its CSV name
// ("groundspeed" is Kinematics/vehicleGroundSpeed) and, when the vehicle's
// CSV has no row for it, the row to add, since BeamNG sends and applies
// only what the CSV lists.
func (b *binder) lack(dir beamng.Direction, name string, v int) {
	side := "outputs"
	if dir == beamng.ToBeamNG {
		side = "inputs"
	}
	of := ""
	if v >= 0 {
		of = fmt.Sprintf(" of vehicle %q", b.plan.Vehicles[v].Name)
	}
	if b.plan.Protocol != beamng.Gen2 {
		b.missing = append(b.missing, side+" "+name+of)
		return
	}
	row, ref, ok := gen2Row(dir, name)
	if !ok {
		b.missing = append(b.missing, side+" "+name+of+" (Gen 1 only: BeamNG's co-simulation CSV has no such signal)")
		return
	}
	b.missing = append(b.missing, side+" "+ref+of)
	veh := b.plan.Vehicles[max(v, 0)]
	if veh.CSV == nil {
		return
	}
	if _, listed := veh.Layout.Find(dir, name); !listed {
		f := filepath.Base(veh.CSV.Path)
		if b.rows == nil {
			b.rows = map[string][]string{}
		}
		if _, seen := b.rows[f]; !seen {
			b.files = append(b.files, f)
		}
		b.rows[f] = append(b.rows[f], row)
	}
}

// gen2Row is the CSV row that carries a Gen 1 signal in a Gen 2 coupling,
// as BeamNG's editor writes it ("signalFrom,Wheels,propulsionTorqueRL,
// value,number"), and its Group/name; ok is false for a signal BeamNG's
// co-simulation catalogue does not have.
func gen2Row(dir beamng.Direction, name string) (row, ref string, ok bool) {
	section, kind := "signalTo", ""
	if dir == beamng.ToBeamNG {
		section, kind = "signalFrom", "value"
	}
	for _, d := range cosim.Catalogue() {
		if dir == beamng.ToBeamNG && !d.From {
			continue
		}
		sig := ""
		switch {
		case d.Meaning == name && d.Group != "Wheels":
			sig = d.Name
		case d.Group == "Wheels" && d.Meaning != "":
			for _, w := range beamng.Wheels {
				if strings.Replace(d.Meaning, "%s", w, 1) == name {
					sig = d.Name + w
				}
			}
		}
		if sig != "" {
			return strings.Join([]string{section, d.Group, sig, kind, "number"}, ","), d.Group + "/" + sig, true
		}
	}
	return "", "", false
}

// needRelative binds a cross-vehicle property of vehicle v to vehicle o.
func (b *binder) needRelative(rp relative.Property, v, o int) ref {
	for _, pt := range b.plan.Outputs {
		for i := range pt.Fields {
			f := &pt.Fields[i]
			if f.Source == ports.Relative && f.Relative == rp && f.Vehicle == v && f.Other == o {
				b.reads = b.reads.Add(b.plan, ref{Port: pt.Number, Elem: f.Offset})
				return ref{Port: pt.Number, Elem: f.Offset}
			}
		}
	}
	b.missing = append(b.missing, fmt.Sprintf("outputs %s of vehicle %q to %q (remoteObject %q, params %q)", rp, b.plan.Vehicles[v].Name, b.plan.Vehicles[o].Name, b.plan.Vehicles[v].Name, b.plan.Vehicles[o].Name))
	return ref{}
}

// optional binds a signal if the config maps it.
func (b *binder) optional(dir beamng.Direction, name string) (ref, bool) {
	p, e, ok := b.plan.Find(dir, name)
	if ok && dir == beamng.FromBeamNG {
		b.reads = b.reads.Add(b.plan, ref{Port: p, Elem: e})
	}
	return ref{Port: p, Elem: e}, ok
}

func (b *binder) err() error {
	if len(b.missing) == 0 {
		return nil
	}
	msg := fmt.Sprintf("model %s needs the config to map %s", b.model, strings.Join(b.missing, ", "))
	for i, f := range b.files {
		lead := ": BeamNG sends and applies only what a CSV lists, so first add to "
		if i > 0 {
			lead = ", and to "
		}
		msg += lead + f + " the rows " + strings.Join(b.rows[f], "; ")
	}
	if len(b.files) > 0 {
		msg += " (in BeamNG's editor)"
	}
	return errors.New(msg)
}
