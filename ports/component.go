package ports

import "beamconnect/beamng"

// ComponentPlan is the plan an FMU of a system is bound to (package
// system): like base's (its period, model timeout and mode), but
// of no BeamNG: one outputs port whose fields are the component's inputs
// and one inputs port whose fields are its outputs, each named as the
// component names it, so that the fmu model binds the FMU's variables to
// them by name, and the system fills and reads its port vectors. Its
// signals document no range (models clamp nothing by BeamNG's).
func ComponentPlan(name string, inputs, outputs []string, base *Plan) *Plan {
	p := &Plan{
		Source: base.Source, Protocol: beamng.Gen2, PhysicsDt: base.PhysicsDt, Period: base.Period, PingTime: base.PingTime,
		SendSkips: base.SendSkips, Unanswered: 1, BusyPoll: base.BusyPoll, Model: "fmu", RealTime: base.RealTime,
		ModelTimeout: base.ModelTimeout, ModelTimeoutFrom: base.ModelTimeoutFrom,
		Inputs: []Port{{Number: 0, Dir: beamng.ToBeamNG, Contract: -1, Width: 1, Fields: []Field{
			{Name: "directive", Source: DirectiveSource, Width: 1, Initial: 1},
		}}},
		Outputs: []Port{{Number: 0, Dir: beamng.FromBeamNG, Contract: -1, Width: 1, Fields: []Field{
			{Name: "status", Source: StatusSource, Width: 1},
		}}},
	}
	signals := func(dir beamng.Direction, names []string) []beamng.Signal {
		out := make([]beamng.Signal, len(names))
		for i, n := range names {
			out[i] = beamng.Signal{Dir: dir, Name: n, Kind: "connector", Desc: "connector " + n + " of the component " + name}
		}
		return out
	}
	layout := beamng.NewLayout("component "+name, signals(beamng.FromBeamNG, inputs), signals(beamng.ToBeamNG, outputs))
	p.Vehicles = []Vehicle{{Name: name, Layout: layout, Template: make([]float64, len(outputs)+1), Need: len(inputs) + 1, Unanswered: 1}}
	for _, side := range []struct {
		dir   beamng.Direction
		names []string
		ports *[]Port
	}{{beamng.FromBeamNG, inputs, &p.Outputs}, {beamng.ToBeamNG, outputs, &p.Inputs}} {
		if len(side.names) == 0 {
			continue
		}
		pt := Port{Number: 1, Dir: side.dir, Contract: -1, Width: len(side.names)}
		for i, n := range side.names {
			pt.Fields = append(pt.Fields, Field{Name: n, Source: Slot, Slot: i + 1, Width: 1, Offset: i, Layout: layout})
		}
		*side.ports = append(*side.ports, pt)
	}
	return p
}
