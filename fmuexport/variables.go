// Package export makes beamconnect an FMU for another master (Simulink,
// Dymola, OpenModelica, fmusim): a co-simulation FMU of FMI 2.0 or 3.0
// whose variables are a config's fields, whose binary is a small C shim
// (package fmuexport/shim) that runs the coupling in a beamconnect child
// process (package fmuexport/child), and which carries beamconnect's own
// executables and the config. Interface is what the description says and
// the child serves; Write makes the archive.
package fmuexport

import (
	"crypto/sha256"
	"fmt"
	"math"
	"strconv"
	"strings"

	"beamconnect/beamng"
	"beamconnect/ports"
	"beamconnect/recording"
)

// Protocol is the version of what the shim and the child say to each
// other. The child refuses a shim of another, so an FMU that carries a
// beamconnect of another version says so instead of misbehaving. 2: the
// independent variable, and the variables listed in parts. 3: the child
// beats while a call waits, and names the parameter processTimeout.
const Protocol = 3

// Causality is a variable's role for the master.
type Causality uint8

const (
	Output      Causality = iota // one of BeamNG's signals (a field of the config's outputs)
	Input                        // a control (a field of the config's inputs)
	Parameter                    // set before initialization: an address, a port, a timeout, the recording
	Independent                  // time, the FMU's: read only, the master sets it with its steps
)

func (c Causality) String() string {
	switch c {
	case Output:
		return "output"
	case Input:
		return "input"
	case Independent:
		return "independent"
	}
	return "parameter"
}

// Type is a variable's FMI type.
type Type uint8

const (
	Real    Type = iota // FMI 2.0 Real, 3.0 Float64
	Integer             // FMI 2.0 Integer, 3.0 Int32
	String
)

// ParamKind says what a parameter sets.
type ParamKind uint8

const (
	NoParam        ParamKind = iota
	LocalIP                  // the address a vehicle's link binds (BeamNG sends there)
	LocalPort                // its port; 0 takes a free one
	RemoteIP                 // BeamNG's address for the vehicle (replies go there)
	RemotePort               // its port
	RecordFile               // the recording's file; "" records nothing
	ConnectTimeout           // how long initialization waits for BeamNG's first message, s
	SilenceTimeout           // how long a step waits for BeamNG's next message before BeamNG counts as lost, s
	ProcessTimeout           // how long a call waits for a sign of life from beamconnect's coupling process, s
)

// Variable is one variable of the exported FMU.
type Variable struct {
	Name        string
	VR          uint32 // its index in Interface.Vars
	Causality   Causality
	Type        Type
	Start       string // as modelDescription.xml writes it
	Unit        string
	Description string
	Min, Max    string // "" when unbounded
	// For an output or input: the port element its value is.
	Elem ports.Element
	// For a parameter: what it sets, and for whose vehicle.
	Param   ParamKind
	Vehicle int
}

// Interface is the exported FMU's variables: BeamNG's signals as outputs,
// the controls as inputs, in the config's order, then the parameters.
type Interface struct {
	Vars []Variable
	// Period is BeamNG's send period: a communication step must be a
	// whole number of them.
	Period float64
	// Token is the FMU's guid (FMI 2.0) and instantiationToken (3.0): a
	// digest of what the shim and the child must agree on.
	Token string
	// Several says the config couples several vehicles: names carry the
	// vehicle.
	Several bool
}

// MaxInputs and MaxOutputs bound an exported FMU's inputs and outputs.
// Every step's request carries every input, and its answer every output
// (8 bytes each), through the shared memory between the FMU's library and
// beamconnect's child process, 256 KiB each way: half of it at most, so
// that the step's log lines and the parameters fit beside them. (The list
// of variables goes in parts, so their names bound nothing.)
const (
	MaxInputs  = 16384
	MaxOutputs = 16384
)

// Fits says whether the FMU's inputs and outputs fit what a step carries
// between the library and the child (MaxInputs, MaxOutputs): the error
// says which do not, and the limit.
func (in *Interface) Fits() error {
	for _, c := range []struct {
		causality Causality
		most      int
		what      string
	}{{Output, MaxOutputs, "outputs (the fields of its outputs: BeamNG's signals, an array field's each element)"},
		{Input, MaxInputs, "inputs (the fields of its inputs: the controls, an array field's each element)"}} {
		if n := in.Count(c.causality); n > c.most {
			return fmt.Errorf("the config makes %d %s, more than the %d an exported FMU can have: each step carries all of them between the FMU's library and beamconnect through 256 KiB of shared memory; couple fewer fields", n, c.what, c.most)
		}
	}
	return nil
}

// Defaults of the timeouts, in seconds.
const (
	DefaultConnectTimeout = 60
	DefaultSilenceTimeout = 10
	DefaultProcessTimeout = 5
)

// New lays out the exported FMU of plan.
func New(plan *ports.Plan) *Interface {
	in := &Interface{Period: plan.Period, Several: len(plan.Vehicles) > 1}
	cols := map[[3]int]recording.Column{}
	for _, c := range recording.LayoutOf(plan, nil).Columns {
		if c.Role == recording.Field {
			out := 0
			if c.Out {
				out = 1
			}
			cols[[3]int{out, c.Port, c.Elem}] = c
		}
	}
	var full []string // each variable's name qualified by its port, for names that clash
	for _, side := range []struct {
		dir   beamng.Direction
		list  []ports.Port
		cause Causality
	}{{beamng.FromBeamNG, plan.Outputs, Output}, {beamng.ToBeamNG, plan.Inputs, Input}} {
		out := 0
		if side.dir == beamng.FromBeamNG {
			out = 1
		}
		for _, p := range side.list[1:] {
			for i := range p.Fields {
				f := &p.Fields[i]
				for k := range f.Width {
					c := cols[[3]int{out, p.Number, f.Offset + k}]
					name := c.Name
					if f.Source == ports.Slot {
						if s := f.Signal(side.dir, k); s.Kind != "" && s.Kind != "value" {
							name += ":" + s.Kind // a Gen 2 multiply, add or freeze row
						}
					}
					_, short, _ := strings.Cut(name, ".") // out3.lead.wheelspeed: lead.wheelspeed
					desc := c.Comment
					if f.Path != "" {
						desc += " (" + f.Path + ")"
					}
					in.Vars = append(in.Vars, Variable{Name: short, Causality: side.cause, Type: Real,
						Start: number(f.Initial), Unit: c.Unit, Description: desc,
						Elem: ports.Element{Port: p.Number, Elem: f.Offset + k, Vehicle: f.Vehicle}})
					full = append(full, name)
				}
			}
		}
	}
	for v, veh := range plan.Vehicles {
		prefix, whose := "", "the vehicle's"
		if in.Several {
			prefix, whose = veh.Name+".", fmt.Sprintf("vehicle %q's", veh.Name)
		}
		for _, p := range []Variable{
			{Name: "localIP", Type: String, Param: LocalIP, Start: veh.Local.Addr().String(),
				Description: "the address beamconnect binds for " + whose + " link, where BeamNG sends (the config's localIP; 0.0.0.0 binds every interface)"},
			{Name: "localPort", Type: Integer, Param: LocalPort, Start: strconv.Itoa(int(veh.Local.Port())), Min: "0", Max: "65535",
				Description: "the port beamconnect binds for " + whose + " link, where BeamNG sends (the config's localPort; 0 takes a free one)"},
			{Name: "remoteIP", Type: String, Param: RemoteIP, Start: veh.Remote.Addr().String(),
				Description: "BeamNG's address for " + whose + " coupling, where replies go (the config's remoteIP)"},
			{Name: "remotePort", Type: Integer, Param: RemotePort, Start: strconv.Itoa(int(veh.Remote.Port())), Min: "1", Max: "65535",
				Description: "BeamNG's port for " + whose + " coupling, where replies go (the config's remotePort)"},
		} {
			p.Name, p.Causality, p.Vehicle = prefix+p.Name, Parameter, v
			in.Vars = append(in.Vars, p)
			full = append(full, p.Name)
		}
	}
	for _, p := range []Variable{
		{Name: "recordFile", Type: String, Param: RecordFile, Start: "",
			Description: "record every BeamNG message of the run to this file (CSV, or ASAM MDF 4 for a name ending .mf4), relative to the master's working folder; empty records nothing"},
		{Name: "connectTimeout", Type: Real, Param: ConnectTimeout, Start: number(DefaultConnectTimeout), Unit: "s", Min: "0",
			Description: "how long initialization waits for BeamNG's first message (0: for ever)"},
		{Name: "silenceTimeout", Type: Real, Param: SilenceTimeout, Start: number(DefaultSilenceTimeout), Unit: "s", Min: "0",
			Description: "how long a step waits for BeamNG's next message before BeamNG counts as lost and the step fails (0: for ever)"},
		{Name: "processTimeout", Type: Real, Param: ProcessTimeout, Start: number(DefaultProcessTimeout), Unit: "s", Min: "0",
			Description: "how long a call waits for a sign of life from beamconnect's coupling process (its answer, or its beat while it waits for BeamNG) before the call fails, naming the process: it stopped, hung or was killed (0: for ever, for a debugger on the process; else at least 1)"},
	} {
		p.Causality = Parameter
		in.Vars = append(in.Vars, p)
		full = append(full, p.Name)
	}
	in.unique(full)
	// time, the independent variable FMI 3.0 requires (and 2.0 allows):
	// the name unique keeps for it.
	in.Vars = append(in.Vars, Variable{Name: "time", Causality: Independent, Type: Real, Unit: "s",
		Description: "the FMU's time: the master's start time at BeamNG's first message, then the end of the last step"})
	for i := range in.Vars {
		in.Vars[i].VR = uint32(i)
	}
	in.Token = in.token(plan)
	return in
}

// unique gives every variable a name of its own: a name two variables
// share (throttle, read from BeamNG and sent to it), or time, is
// qualified by its port as a recording's column is (out2.throttle,
// in1.throttle, out4.time); one that still clashes gets #2, #3….
func (in *Interface) unique(full []string) {
	count := map[string]int{}
	for _, v := range in.Vars {
		count[v.Name]++
	}
	// time is every master's own (Modelica's built-in variable, the first
	// column of a result): a field of that name (the meta value) keeps its
	// port.
	count["time"]++
	for i := range in.Vars {
		if count[in.Vars[i].Name] > 1 {
			in.Vars[i].Name = full[i]
		}
	}
	seen := map[string]int{}
	for i := range in.Vars {
		n := in.Vars[i].Name
		if seen[n]++; seen[n] > 1 {
			in.Vars[i].Name = n + "#" + strconv.Itoa(seen[n])
		}
	}
}

// token digests what the shim, the description and the child must agree
// on: the protocol, the period, the messages' protocol, and every
// variable as the description declares it.
func (in *Interface) token(plan *ports.Plan) string {
	h := sha256.New()
	fmt.Fprintf(h, "beamconnect fmu export %d\nperiod %s\nprotocol %s\n", Protocol, number(in.Period), plan.Protocol)
	for _, v := range in.Vars {
		fmt.Fprintf(h, "%d\t%q\t%d\t%d\t%q\t%q\n", v.VR, v.Name, v.Causality, v.Type, v.Start, v.Unit)
	}
	s := fmt.Sprintf("%x", h.Sum(nil)[:16])
	return "{" + s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32] + "}"
}

// Count is the number of variables of a causality.
func (in *Interface) Count(c Causality) int {
	n := 0
	for _, v := range in.Vars {
		if v.Causality == c {
			n++
		}
	}
	return n
}

// Variable finds a variable by name.
func (in *Interface) Variable(name string) (*Variable, bool) {
	for i := range in.Vars {
		if in.Vars[i].Name == name {
			return &in.Vars[i], true
		}
	}
	return nil, false
}

// number writes a double as XML Schema's xs:double reads it back exactly
// (INF, -INF and NaN as it spells them).
func number(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "INF"
	case math.IsInf(v, -1):
		return "-INF"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
