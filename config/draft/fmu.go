package draft

import (
	"beamconnect/beamng"
	"beamconnect/config"
	"beamconnect/fmu"
	"fmt"
	"math"
	"net/netip"
	"strconv"
)

// Bound is how one FMU variable was bound.
type Bound struct {
	Variable, Signal string
	Guessed          bool // not the same name: a case or typo match
}

// FromFMU is a config that couples the FMU described by d (Gen 1
// messages, "model": "fmu"), path its file as the config names it, at the
// addresses given (nil: the defaults): the variables bound, and what is
// left to do, a line each.
func FromFMU(d *fmu.Description, path string, addrs *Addresses) (cfg any, ins, outs []Bound, todo []string) {
	params := map[string]any{"path": path}
	bind := func(causality string, dir beamng.Direction, key string) ([]Bound, []field) {
		var bound []Bound
		var fields []field
		mapped := map[string]any{}
		used := map[string]bool{}
		for _, v := range d.Variables {
			if v.Causality != causality {
				continue
			}
			switch {
			case v.Kind == fmu.Unsupported:
				todo = append(todo, fmt.Sprintf("the FMU's %s %q is a %s, which beamconnect does not drive: it cannot be bound", causality, v.Name, v.Type))
				continue
			case v.Kind == fmu.String || v.Kind == fmu.Binary:
				todo = append(todo, fmt.Sprintf("the FMU's %s %q is a %s: beamconnect sets it once, before the FMU starts, in modelParams.parameters; it is not exchanged at every step", causality, v.Name, v.Type))
				continue
			case v.Array:
				todo = append(todo, fmt.Sprintf("the FMU's %s %q is an array, %s%s: bind its elements one by one in modelParams.%s, e.g. {\"%s[1]\": \"FIELD\", \"%s[2]\": \"FIELD\"}, after adding the fields",
					causality, v.Name, v.Type, d.Shape(&v), key, v.Name, v.Name))
				continue
			}
			signal, guessed := matchSignal(dir, v.Name)
			if signal == "" || dir == beamng.ToBeamNG && used[signal] {
				todo = append(todo, fmt.Sprintf("the FMU's %s %q matches no BeamNG signal: map it in modelParams.%s, e.g. {%q: \"FIELD\"}, after adding the field", causality, v.Name, key, v.Name))
				continue
			}
			if guessed {
				mapped[v.Name] = signal
			}
			bound = append(bound, Bound{Variable: v.Name, Signal: signal, Guessed: guessed})
			if !used[signal] {
				used[signal] = true
				jf := field{PropertyName: signal}
				if dir == beamng.ToBeamNG {
					zero := 0.0
					jf.InitialValue = &zero
				}
				fields = append(fields, jf)
			}
		}
		if len(mapped) > 0 {
			params[key] = mapped
		}
		return bound, fields
	}
	ins, inFields := bind("input", beamng.FromBeamNG, "inputs")
	outs, outFields := bind("output", beamng.ToBeamNG, "outputs")
	values := map[string]any{}
	for _, v := range d.Variables {
		if v.Causality != "parameter" || !v.Settable() || v.Kind == fmu.Unsupported || v.Array || v.Start == "" {
			continue
		}
		if x, err := strconv.ParseFloat(v.Start, 64); err == nil {
			values[v.Name] = x
		} else if b, err := strconv.ParseBool(v.Start); err == nil && v.Kind == fmu.Bool {
			values[v.Name] = b
		}
	}
	if len(values) > 0 {
		params["parameters"] = values
	}
	period := periodMs(d)
	portsOf := func(fields []field) []group {
		if len(fields) == 0 {
			return []group{}
		}
		return []group{{UpdatePeriodMs: period, Ports: [][]field{fields}}}
	}
	bn := map[string]any{"protocol": "fixed", "model": "fmu", "modelParams": params}
	out := struct {
		Version      float64        `json:"version"`
		RemoteIP     string         `json:"remoteIP,omitempty"`
		RemotePort   int            `json:"remotePort,omitempty"`
		RemoteObject string         `json:"remoteObject,omitempty"`
		Inputs       []group        `json:"inputs"`
		Outputs      []group        `json:"outputs"`
		BeamNG       map[string]any `json:"beamng"`
	}{Version: 2, Inputs: portsOf(outFields), Outputs: portsOf(inFields), BeamNG: bn}
	if addrs != nil {
		out.RemoteIP, out.RemotePort, out.RemoteObject = addrs.Remote.Addr().String(), int(addrs.Remote.Port()), addrs.Object
		bn["localIP"], bn["localPort"] = addrs.Local.Addr().String(), int(addrs.Local.Port())
	}
	return out, ins, outs, todo
}

// Addresses are a rig's addresses, taken from a config of one Gen 1
// vehicle (init --addresses-from).
type Addresses struct {
	Local, Remote netip.AddrPort
	Object        string
}

// AddressesFrom reads the addresses of a config of one Gen 1 vehicle.
func AddressesFrom(path string) (*Addresses, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("--addresses-from %s: %w", path, err)
	}
	switch {
	case len(cfg.Vehicles) != 1:
		return nil, fmt.Errorf("--addresses-from %s: it couples %d vehicles: expected a config of one (the FMU's rig is one vehicle)", path, len(cfg.Vehicles))
	case cfg.Protocol != beamng.Gen1:
		return nil, fmt.Errorf("--addresses-from %s: a Gen 2 config's addresses are in its CSV: expected a Gen 1 (\"fixed\") config", path)
	}
	v := cfg.Vehicles[0]
	return &Addresses{Local: v.Local, Remote: v.Remote, Object: cfg.RemoteObject}, nil
}

// matchSignal finds the BeamNG signal a variable is named like: its exact
// name, or one in another letter case or a typo away (guessed).
func matchSignal(dir beamng.Direction, name string) (string, bool) {
	s, m := beamng.Lookup(dir, name)
	switch {
	case m == beamng.Exact:
		return s.Name, false
	case m == beamng.Folded:
		return s.Name, true
	case m == beamng.Reference:
		return "", false // a bank reference is no variable's name
	}
	// A typo of a short name is as likely another word (i8 is not id).
	if sug := beamng.Suggest(dir, name); sug != "" && len(name) >= 4 {
		return sug, true
	}
	return "", false
}

// periodMs is the coupling's period in ms for the FMU: its suggested
// step rounded up to BeamNG's physics step, or 5 ms when it suggests none
// or one slower than a coupling can be (500 ms). For a step the FMU cannot
// change (a fixed internal step, or a DefaultExperiment step without
// variable step sizes): the first multiple of it that is a whole number
// of physics steps, within 500 ms; else a period that a whole number of
// makes a whole number of its steps (stepped every few messages,
// multi-rate): 5 ms if it can, else the fastest that can.
func periodMs(d *fmu.Description) float64 {
	const physics, slowest, usual = 0.0005, 0.5, 0.005
	var step float64
	fixed := false
	switch st := d.Default.StepSize; {
	case d.CoSim != nil && d.CoSim.FixedInternalStepSize > 0:
		step, fixed = d.CoSim.FixedInternalStepSize, true
	case st != nil && *st > 0:
		step, fixed = *st, d.CoSim != nil && !d.CoSim.VariableStep
	default:
		return usual * 1000
	}
	ms := func(p float64) float64 { return math.Round(p/physics) * physics * 1000 }
	whole := func(s float64) bool { n := math.Round(s / physics); return n >= 1 && math.Abs(s-n*physics) < 1e-12 }
	if !fixed {
		if step > slowest {
			return usual * 1000
		}
		return math.Ceil(step/physics-1e-9) * physics * 1000
	}
	for k := 1.0; k*step <= slowest; k++ {
		if whole(k * step) {
			return ms(k * step)
		}
	}
	// Multi-rate: every few periods make a whole number of its steps.
	steps := func(p float64) bool {
		for k := 1.0; k <= 10000; k++ {
			n := math.Round(k * p / step)
			if n >= 1 && math.Abs(k*p-n*step) <= 1e-9*k*p {
				return true
			}
		}
		return false
	}
	if steps(usual) {
		return usual * 1000
	}
	for n := 1.0; n*physics <= slowest; n++ {
		if steps(n * physics) {
			return ms(n * physics)
		}
	}
	return usual * 1000 // none: validate says why
}
