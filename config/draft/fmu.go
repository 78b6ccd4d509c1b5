package draft

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"beamconnect/beamng"
	"beamconnect/config"
	"beamconnect/fmu"
)

// Bound is how one FMU variable was bound.
type Bound struct {
	Variable, Signal string
	Guessed          bool // not the same name: a case or typo match
	// Custom: an output that matches no signal BeamNG reads, sent to a
	// free custom field (Signal), so that it is recorded under its name.
	Custom bool
}

// Draft is a config for an FMU, and what init says about it.
type Draft struct {
	Config          any
	Inputs, Outputs []Bound
	// Constants are the FMU inputs that match no signal BeamNG sends:
	// they keep their start values, written in modelParams.parameters.
	Constants []string
	// Quality is the loop proposed for beamng.quality ("" measured: none).
	Quality struct{ Measured, Setpoint string }
	// Notes say what the config leaves out, a line each (a String input is
	// set once; a Clock is not driven).
	Notes []string
}

// FromFMU is a config that couples the FMU described by d (Gen 1
// messages, "model": "fmu"), path its file as the config names it, at the
// addresses given (nil: the defaults), and runs as written: its inputs
// and outputs bound to BeamNG's signals of their names; an output that
// matches none sent to a free custom field (custom1…), so that BeamNG has
// it and the recording shows it under the FMU's name; an input that
// matches none kept at its start value (modelParams.parameters); its
// parameters with their start values; beamng.quality when a setpoint
// parameter and the signal it is the setpoint of are found (setSpeed and
// groundspeed); the period from the FMU's own step.
func FromFMU(d *fmu.Description, path string, addrs *Addresses) Draft {
	var dr Draft
	params := map[string]any{"path": path}
	values := map[string]any{}
	custom := 0 // the last custom field used
	nextCustom := func(used map[string]bool) string {
		for custom < maxCustom {
			custom++
			name := "custom" + strconv.Itoa(custom)
			if !used[name] {
				return name
			}
		}
		return ""
	}
	bind := func(causality string, dir beamng.Direction, key string) ([]Bound, []field) {
		var bound []Bound
		var fields []field
		mapped := map[string]any{}
		used := map[string]bool{}
		var unmatched []fmu.Variable
		for _, v := range d.Variables {
			if v.Causality != causality {
				continue
			}
			switch {
			case v.Kind == fmu.Unsupported:
				dr.Notes = append(dr.Notes, fmt.Sprintf("the FMU's %s %q is a %s, which beamconnect does not drive: it is left out", causality, v.Name, v.Type))
				continue
			case v.Kind == fmu.String || v.Kind == fmu.Binary:
				if causality == "input" && v.Start != "" {
					values[v.Name] = v.Start // set once, before the FMU starts
				}
				dr.Notes = append(dr.Notes, fmt.Sprintf("the FMU's %s %q is a %s: it is not exchanged at every step (an input's value is set once, in modelParams.parameters)", causality, v.Name, v.Type))
				continue
			case v.Array:
				unmatched = append(unmatched, v)
				continue
			}
			signal, guessed := matchSignal(dir, v.Name)
			if signal == "" || dir == beamng.ToBeamNG && used[signal] {
				unmatched = append(unmatched, v)
				continue
			}
			if guessed {
				mapped[v.Name] = signal
			}
			bound = append(bound, Bound{Variable: v.Name, Signal: signal, Guessed: guessed})
			if !used[signal] {
				used[signal] = true
				fields = append(fields, newField(signal, dir))
			}
		}
		for _, v := range unmatched {
			if dir == beamng.FromBeamNG {
				// Nothing of BeamNG's to read: the input keeps its start.
				if x, ok := startValue(d, &v); ok {
					values[v.Name] = x
				}
				dr.Constants = append(dr.Constants, v.Name)
				continue
			}
			for _, name := range elementNames(d, &v) {
				signal := nextCustom(used)
				if signal == "" {
					dr.Notes = append(dr.Notes, fmt.Sprintf("the FMU's output %q: no custom field is left (BeamNG has %d): it is recorded, not sent", name, maxCustom))
					continue
				}
				used[signal] = true
				mapped[name] = signal
				bound = append(bound, Bound{Variable: name, Signal: signal, Custom: true})
				fields = append(fields, newField(signal, dir))
			}
		}
		if len(mapped) > 0 {
			params[key] = mapped
		}
		return bound, fields
	}
	var inFields, outFields []field
	dr.Inputs, inFields = bind("input", beamng.FromBeamNG, "inputs")
	dr.Outputs, outFields = bind("output", beamng.ToBeamNG, "outputs")
	for _, v := range d.Variables {
		if v.Causality != "parameter" || !v.Settable() || v.Kind == fmu.Unsupported || v.Array || v.Start == "" {
			continue
		}
		if x, ok := startValue(d, &v); ok {
			values[v.Name] = x
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
	if m, s := proposeLoop(d, dr.Inputs); m != "" {
		dr.Quality.Measured, dr.Quality.Setpoint = m, s
		bn["quality"] = map[string]any{"measured": m, "setpoint": s}
	}
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
	dr.Config = out
	return dr
}

// maxCustom is how many custom fields BeamNG reads (custom1…custom50).
const maxCustom = 50

func newField(signal string, dir beamng.Direction) field {
	f := field{PropertyName: signal}
	if dir == beamng.ToBeamNG {
		zero := 0.0
		f.InitialValue = &zero
	}
	return f
}

// elementNames are a variable's names as bound: its own, or an array's
// elements' (u[1], u[2]…) at its start size.
func elementNames(d *fmu.Description, v *fmu.Variable) []string {
	if !v.Array {
		return []string{v.Name}
	}
	n := 1
	for _, dim := range v.Dims {
		size := dim.Start
		if dim.Param {
			if p, ok := d.ByVR(dim.VR); ok {
				if x, err := strconv.ParseUint(strings.TrimSpace(p.Start), 10, 64); err == nil {
					size = x
				}
			}
		}
		n *= int(size)
	}
	if len(v.Dims) > 1 {
		return nil // a matrix output is left to the user
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s[%d]", v.Name, i+1)
	}
	return out
}

// startValue is a variable's start as modelParams.parameters takes it: a
// number, true or false, an array of numbers; ok is false when it has
// none.
func startValue(d *fmu.Description, v *fmu.Variable) (any, bool) {
	if v.Array {
		var list []any
		for _, f := range strings.Fields(v.Start) {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, false
			}
			list = append(list, x)
		}
		if n := len(elementNames(d, v)); n == 0 || len(list) != n {
			return nil, false
		}
		return list, true
	}
	if x, err := strconv.ParseFloat(strings.TrimSpace(v.Start), 64); err == nil {
		return x, true
	}
	if b, err := strconv.ParseBool(strings.TrimSpace(v.Start)); err == nil && v.Kind == fmu.Bool {
		return b, true
	}
	return nil, false
}

// setpointWords start or end a setpoint parameter's name: setSpeed,
// targetSpeed, speedSetpoint, vRef, desiredHeading.
var setpointWords = []string{"setpoint", "target", "desired", "demand", "reference", "set", "ref", "sp"}

// proposeLoop finds a loop for beamng.quality: a parameter named as a
// setpoint (setSpeed) and a bound input whose signal is what it is the
// setpoint of (groundspeed: the name's rest, "speed", is in it, or their
// units agree).
func proposeLoop(d *fmu.Description, inputs []Bound) (measured, setpoint string) {
	for _, v := range d.Variables {
		if v.Causality != "parameter" || v.Array || !v.Kind.Numeric() {
			continue
		}
		rest := quantity(v.Name)
		if rest == "" {
			continue
		}
		for _, in := range inputs {
			iv, _ := d.Variable(in.Variable)
			sig := strings.ToLower(in.Signal)
			if strings.Contains(sig, rest) || strings.Contains(rest, sig) || iv != nil && v.Unit != "" && iv.Unit == v.Unit && iv.Unit != "1" {
				return in.Signal, v.Name
			}
		}
	}
	return "", ""
}

// quantity is what a setpoint parameter's name is the setpoint of, lower
// case ("speed" of setSpeed, set_speed or speedRef); "" for a name that is
// no setpoint's. The setpoint word must stand apart: a capital or a
// separator after or before it (settle is not a setpoint of "tle").
func quantity(name string) string {
	lower := strings.ToLower(name)
	apart := func(c byte) bool { return c >= 'A' && c <= 'Z' || c == '_' || c == '-' || c == '.' }
	clean := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(s))
	}
	for _, w := range setpointWords {
		if strings.HasPrefix(lower, w) && len(name) > len(w) && apart(name[len(w)]) {
			if rest := clean(name[len(w):]); len(rest) >= 3 {
				return rest
			}
		}
		if at := len(name) - len(w); strings.HasSuffix(lower, w) && at > 0 && (apart(name[at]) || apart(name[at-1])) {
			if rest := clean(name[:at]); len(rest) >= 3 {
				return rest
			}
		}
	}
	return ""
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
