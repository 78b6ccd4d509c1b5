package ports

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"beamconnect/beamng"
)

// Changes is what a new plan changes relative to the running one.
type Changes struct {
	// RestartOnly names the changes a running coupling cannot take; a
	// reload that has any is refused whole.
	RestartOnly []string
	// Live describes the changes a reload applies: ports and fields added,
	// removed or re-mapped, contracts whose schedule or time sync changed.
	Live []string
	// Params describes a change of beamng.modelParams ("" when none), the
	// values as the config writes them. Whether the running model can take
	// it is the model's to say (models.Rebinder).
	Params string
}

// None reports whether the plans are the same as far as a run can tell.
func (c Changes) None() bool { return len(c.RestartOnly) == 0 && len(c.Live) == 0 && c.Params == "" }

// Diff compares a running plan with a new one. Restart-only are what BeamNG
// or the socket were started with (addresses, protocol, vehicles, physics
// step, BeamNG's send period) and the model itself.
func Diff(old, new *Plan) Changes {
	var c Changes
	restart := func(what string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			c.RestartOnly = append(c.RestartOnly, fmt.Sprintf("%s (%v → %v)", what, a, b))
		}
	}
	restart("beamng.protocol", old.Protocol.String(), new.Protocol.String())
	restart("beamng.physicsDt", old.PhysicsDt, new.PhysicsDt)
	restart("the update period BeamNG sends at (BeamNG was started with simulinkTime "+luaNumber(old.Period)+")", old.Period, new.Period)
	restart("beamng.model", old.Model, new.Model)
	// The model takes its mode and timeout when it starts.
	restart("beamng.realTime", old.RealTime, new.RealTime)
	restart("the model timeout, ms ("+new.ModelTimeoutFrom+")", old.ModelTimeout*1000, new.ModelTimeout*1000)
	if !reflect.DeepEqual(old.ModelParams, new.ModelParams) {
		c.Params = strings.Join(paramChanges("beamng.modelParams", old.ModelParams, new.ModelParams), "; ")
	}
	if len(old.Vehicles) != len(new.Vehicles) {
		restart("the number of vehicles", len(old.Vehicles), len(new.Vehicles))
	} else {
		for i := range old.Vehicles {
			o, n := old.Vehicles[i], new.Vehicles[i]
			restart("vehicle name", o.Name, n.Name)
			restart("the local address (beamng.localIP/localPort)", o.Local, n.Local)
			restart("BeamNG's address (remoteIP/remotePort)", o.Remote, n.Remote)
			if old.Protocol == new.Protocol && !o.Layout.Equal(n.Layout) {
				// BeamNG laid its messages out from the CSV it was started with.
				c.RestartOnly = append(c.RestartOnly, fmt.Sprintf("the CSV's message layout%s (%s: %d signalTo and %d signalFrom rows → %d and %d; BeamNG must be restarted with the new CSV)",
					vehicleLabel(n.Name), n.Layout.Source, o.Layout.Len(beamng.FromBeamNG)-1, o.Layout.Len(beamng.ToBeamNG)-1, n.Layout.Len(beamng.FromBeamNG)-1, n.Layout.Len(beamng.ToBeamNG)-1))
			}
		}
	}

	live := func(format string, args ...any) { c.Live = append(c.Live, fmt.Sprintf(format, args...)) }
	if old.ReplyID != new.ReplyID {
		live("reply ids: %s → %s", old.ReplyID, new.ReplyID)
	}
	if old.TimeSync != new.TimeSync || old.TimeDilation != new.TimeDilation {
		live("time sync: %s at timeDilation %g → %s at %g", old.TimeSync, old.TimeDilation, new.TimeSync, new.TimeDilation)
	}
	if old.PingTime != new.PingTime {
		live("pingTime %g → %g (BeamNG keeps the window it was started with)", old.PingTime, new.PingTime)
	}
	for i := range min(len(old.Vehicles), len(new.Vehicles)) {
		if o, n := old.Vehicles[i].Unanswered, new.Vehicles[i].Unanswered; o != n && old.PingTime == new.PingTime {
			live("messages in flight%s %d → %d (BeamNG keeps the window it was started with)", vehicleLabel(new.Vehicles[i].Name), o, n)
		}
	}
	if old.FailOnControl != new.FailOnControl {
		live("beamng.failOn control: %v → %v", old.FailOnControl, new.FailOnControl)
	}
	if !reflect.DeepEqual(old.Quality, new.Quality) {
		live("beamng.quality: %s → %s", loopsText(old.Quality), loopsText(new.Quality))
	}
	diffPorts(&c, "in", beamng.ToBeamNG, old, new, old.Inputs, new.Inputs)
	diffPorts(&c, "out", beamng.FromBeamNG, old, new, old.Outputs, new.Outputs)
	oc, nc := contractsByName(old), contractsByName(new)
	for name, n := range nc {
		o, ok := oc[name]
		switch {
		case !ok:
			live("contract %s added (every %d messages)", name, n.Schedule.Every)
		case o.Schedule.Every != n.Schedule.Every && !n.CommData:
			live("contract %s: every %d → %d messages (%g → %g ms)", name, o.Schedule.Every, n.Schedule.Every,
				o.Schedule.Period*1000, n.Schedule.Period*1000)
		}
		if ok && (o.TimeSync != n.TimeSync || o.Overdue != n.Overdue) {
			live("contract %s: time sync %v → %v, overdue timeout %g → %g s", name, o.TimeSync, n.TimeSync, o.Overdue, n.Overdue)
		}
	}
	for name := range oc {
		if _, ok := nc[name]; !ok {
			live("contract %s removed", name)
		}
	}
	return c
}

func contractsByName(p *Plan) map[string]Contract {
	m := map[string]Contract{}
	for _, c := range p.Contracts {
		m[c.Name] = c
	}
	return m
}

// FieldKey names a field by what it carries, so a field keeps its identity
// (and its port value) when a reload moves it: the signal's slot, or the
// meta value and the contract it describes.
func FieldKey(dir beamng.Direction, f *Field, contract string) string {
	switch f.Source {
	case Slot:
		return strconv.Itoa(f.Vehicle) + "/" + f.Signal(dir, 0).Name + "×" + strconv.Itoa(f.Width)
	case Meta:
		return contract + "/" + f.Meta.String()
	case Relative:
		return strconv.Itoa(f.Vehicle) + "/" + f.Relative.String() + "/" + strconv.Itoa(f.Other)
	}
	return f.Source.String()
}

// paramChanges says what changed between two parameter objects, key by
// key, nested objects down to their keys: "beamng.modelParams.parameters
// .setSpeed 20 → 25", "… added", "… removed", in key order.
func paramChanges(path string, old, new map[string]any) []string {
	keys := map[string]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range new {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		o, inOld := old[k]
		n, inNew := new[k]
		at := path + "." + k
		switch {
		case !inOld:
			out = append(out, at+" added: "+jsonText(n))
		case !inNew:
			out = append(out, at+" removed (was "+jsonText(o)+")")
		case !reflect.DeepEqual(o, n):
			om, ok1 := o.(map[string]any)
			nm, ok2 := n.(map[string]any)
			if ok1 && ok2 {
				out = append(out, paramChanges(at, om, nm)...)
				continue
			}
			out = append(out, at+" "+jsonText(o)+" → "+jsonText(n))
		}
	}
	return out
}

// loopsText lists control loops for a diff line: [groundspeed: setSpeed
// (model parameter)].
func loopsText(ls []Loop) string {
	var parts []string
	for i := range ls {
		parts = append(parts, ls[i].Name+": "+ls[i].Setpoint())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// jsonText writes a value as a config writes it.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// describe lists a port's fields for a diff line; with several vehicles
// each field is named with its vehicle.
func describe(dir beamng.Direction, plan *Plan, p *Port) string {
	var names []string
	for i := range p.Fields {
		f := &p.Fields[i]
		prefix := ""
		if len(plan.Vehicles) > 1 {
			prefix = plan.Vehicles[f.Vehicle].Name + "."
		}
		switch f.Source {
		case Slot:
			s := f.Signal(dir, 0)
			n := s.Name + "@" + s.Ref
			if f.Width > 1 {
				n += "×" + strconv.Itoa(f.Width)
			}
			names = append(names, n)
		case Meta:
			names = append(names, f.Meta.String())
		case Relative:
			names = append(names, f.Relative.String())
		default:
			names = append(names, f.Source.String())
		}
		names[len(names)-1] = prefix + names[len(names)-1]
		if f.Initial != 0 {
			names[len(names)-1] += fmt.Sprintf(" (initial %g)", f.Initial)
		}
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func diffPorts(c *Changes, side string, dir beamng.Direction, op, np *Plan, old, new []Port) {
	for i := 1; i < max(len(old), len(new)); i++ {
		switch {
		case i >= len(old):
			c.Live = append(c.Live, fmt.Sprintf("%s %d added: %s", side, i, describe(dir, np, &new[i])))
		case i >= len(new):
			c.Live = append(c.Live, fmt.Sprintf("%s %d removed: %s", side, i, describe(dir, op, &old[i])))
		default:
			if a, b := describe(dir, op, &old[i]), describe(dir, np, &new[i]); a != b {
				c.Live = append(c.Live, fmt.Sprintf("%s %d re-mapped: %s → %s", side, i, a, b))
			}
		}
	}
}

// vehicleLabel names a vehicle in a change, when the config names vehicles.
func vehicleLabel(name string) string {
	if name == "" {
		return ""
	}
	return " of vehicle " + strconv.Quote(name)
}
