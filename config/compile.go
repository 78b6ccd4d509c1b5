package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"beamconnect/beamng"
	"beamconnect/contracts"
	"beamconnect/internal/suggest"
	"beamconnect/ports"
	"beamconnect/relative"
	"beamconnect/timesync"
)

// Compile lays a checked config out for the runtime: the plan the
// coupling reads, which knows nothing of files. It fails on a config that
// did not come from Parse, and with Diagnostics, placed in the file, when
// beamng.quality names what is not a field.
func Compile(cfg *Config) (*ports.Plan, error) {
	if cfg == nil || len(cfg.Vehicles) == 0 || cfg.Period <= 0 || cfg.PhysicsDt <= 0 {
		return nil, errors.New("config: not a checked config (use config.Load)")
	}
	p := &ports.Plan{
		Source:        cfg.File,
		Config:        cfg.Text,
		CSVPaths:      cfg.CSVPaths(),
		Protocol:      cfg.Protocol,
		ReplyID:       cfg.ReplyID,
		TimeDilation:  cfg.TimeDilation,
		PhysicsDt:     cfg.PhysicsDt,
		Period:        cfg.Period,
		PingTime:      cfg.PingTime,
		SendSkips:     beamng.SendSkips(cfg.Period, cfg.PhysicsDt),
		DebugFile:     cfg.DebugFile,
		BusyPoll:      cfg.BusyPoll,
		RealTime:      cfg.RealTime,
		Model:         cfg.Model,
		ModelParams:   cfg.ModelParams,
		ModelTimeout:  cfg.ModelTimeout,
		FailOnControl: cfg.FailOnControl,
		Inputs: []ports.Port{{Number: 0, Dir: beamng.ToBeamNG, Contract: -1, Width: 1, Fields: []ports.Field{
			{Name: "directive", Source: ports.DirectiveSource, Width: 1, Initial: 1},
		}}},
		Outputs: []ports.Port{{Number: 0, Dir: beamng.FromBeamNG, Contract: -1, Width: 1, Fields: []ports.Field{
			{Name: "status", Source: ports.StatusSource, Width: 1},
		}}},
	}
	if p.Protocol == nil {
		p.Protocol = beamng.Gen1
	}
	for _, v := range cfg.Vehicles {
		layout := v.Layout
		if layout == nil {
			layout = beamng.Fixed
		}
		t := make([]float64, layout.Len(beamng.ToBeamNG))
		for i, s := range layout.Signals(beamng.ToBeamNG)[1:] {
			t[i+1] = layout.Protocol.Unset(s)
		}
		veh := ports.Vehicle{Name: v.Name, Local: v.Local, Remote: v.Remote,
			Layout: layout, CSV: v.CSV, Template: t, Need: 1, Unanswered: v.Unanswered}
		if veh.Unanswered < 1 {
			veh.Unanswered = beamng.Unanswered(cfg.PingTime, cfg.Period)
		}
		for i, q := range relative.Quantities {
			if s, ok := layout.Find(beamng.FromBeamNG, q); ok {
				veh.State[i] = s.Index
			}
		}
		p.Unanswered = max(p.Unanswered, veh.Unanswered)
		p.Vehicles = append(p.Vehicles, veh)
	}
	for _, side := range []struct {
		groups []Group
		ports  *[]ports.Port
	}{{cfg.Inputs, &p.Inputs}, {cfg.Outputs, &p.Outputs}} {
		for _, g := range side.groups {
			if err := addGroup(p, g, side.ports); err != nil {
				return nil, err
			}
		}
	}
	for i, c := range p.Contracts {
		if c.TimeSync {
			p.TimeSync = timesync.ModeFor(p.Contracts[i].Dir)
		}
	}
	p.FillModelTimeout()
	if ds := compileQuality(p, cfg); len(ds) > 0 {
		return nil, ds
	}
	return p, nil
}

// ParsePlan parses, checks and compiles config text data of file: a
// reload's part that reads the file. The error is Parse's or Compile's.
func ParsePlan(file string, data []byte) (*ports.Plan, error) {
	cfg, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	return Compile(cfg)
}

// addGroup lays port group g out as a contract and its ports, appended
// to list.
func addGroup(p *ports.Plan, g Group, list *[]ports.Port) error {
	ci := len(p.Contracts)
	c := ports.Contract{Name: g.Path, Dir: g.Dir, CommData: g.CommData, Schedule: g.Schedule, TimeSync: g.TimeSync, Overdue: g.Overdue}
	for _, cp := range g.Ports {
		port := ports.Port{Number: len(*list), Dir: g.Dir, Contract: ci}
		for _, cf := range cp.Fields {
			f := ports.Field{
				Name: cf.PropertyName, Path: cf.Path, Vehicle: cf.Vehicle,
				Width: cf.ArraySize, Offset: port.Width,
				Initial: cf.InitialValue, Invalid: cf.InvalidValue,
			}
			if f.Width < 1 || cf.Vehicle < 0 || cf.Vehicle >= len(p.Vehicles) {
				return fmt.Errorf("config: %s: field not checked (width %d, vehicle %d)", cf.Path, f.Width, cf.Vehicle)
			}
			veh := &p.Vehicles[f.Vehicle]
			f.Layout = veh.Layout
			switch {
			case cf.Relative != relative.None:
				f.Source, f.Relative, f.Other = ports.Relative, cf.Relative, cf.Other
			case cf.Meta != contracts.NotMeta:
				f.Source, f.Meta = ports.Meta, cf.Meta
			default:
				f.Source, f.Slot = ports.Slot, cf.Signal.Index
				if n := veh.Layout.Len(g.Dir); f.Slot+f.Width > n {
					return fmt.Errorf("config: %s: slots %d–%d lie outside the %d-double message", cf.Path, f.Slot, f.Slot+f.Width-1, n)
				}
				if g.Dir == beamng.ToBeamNG {
					for i := range f.Width {
						veh.Template[f.Slot+i] = f.Initial
					}
				} else {
					veh.Need = max(veh.Need, f.Slot+f.Width)
				}
			}
			port.Width += f.Width
			port.Fields = append(port.Fields, f)
		}
		c.Ports = append(c.Ports, port.Number)
		*list = append(*list, port)
	}
	p.Contracts = append(p.Contracts, c)
	return nil
}

// compileQuality resolves beamng.quality's names against the plan's
// fields. A setpoint named by no field is taken for a model parameter,
// which models check. The findings are placed in the config.
func compileQuality(p *ports.Plan, cfg *Config) Diagnostics {
	var ds Diagnostics
	at := func(ptr, format string, args ...any) {
		pos, path := cfg.Locate(ptr)
		ds = append(ds, Diagnostic{File: cfg.File, Pos: pos, Path: path, Severity: Error, Msg: fmt.Sprintf(format, args...)})
	}
	outs, ins := p.Names(beamng.FromBeamNG), p.Names(beamng.ToBeamNG)
	for _, q := range cfg.Quality {
		_, path := cfg.Locate(q.Ptr)
		l := ports.Loop{Name: q.Name, Path: path, Ptr: q.Ptr, MeasuredName: q.Measured, SetValue: q.Setpoint, SetName: q.SetpointName, Band: q.Band}
		if l.Name == "" {
			l.Name = q.Measured
		}
		e, ok, err := p.Resolve(outs, q.Measured)
		switch {
		case err != nil:
			at(q.Ptr+"/measured", "%v", err)
			continue
		case !ok:
			msg := fmt.Sprintf("%q is not a field of the config's outputs (data from BeamNG): expected the field measured, as an FMU input would name it", q.Measured)
			if _, isIn := ins[q.Measured]; isIn {
				msg = fmt.Sprintf("%q is a field of the inputs (data to BeamNG), which the model writes: expected the measured value, a field of the outputs", q.Measured)
			} else if s := suggest.Closest(q.Measured, slices.Collect(maps.Keys(outs))); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			at(q.Ptr+"/measured", "%s", msg)
			continue
		}
		l.Measured = e
		if q.SetpointName != "" {
			l.Set = ports.SetParam
			for _, side := range []struct {
				names map[string][]ports.Element
				kind  ports.SetpointKind
			}{{outs, ports.SetOutput}, {ins, ports.SetInput}} {
				se, ok, err := p.Resolve(side.names, q.SetpointName)
				if err != nil {
					at(q.Ptr+"/setpoint", "%v", err)
				}
				if ok {
					l.Set, l.SetAt = side.kind, se
					break
				}
			}
			if l.SetAt == e && l.Set == ports.SetOutput {
				at(q.Ptr+"/setpoint", "%q is the measured value itself: expected the value it should have", q.SetpointName)
				continue
			}
		}
		p.Quality = append(p.Quality, l)
	}
	return ds
}
