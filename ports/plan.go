// Package ports is the Plan the coupling runtime reads, a config compiled
// (config.Compile): every port's fields resolved to message slots or meta
// sources, the model's port vectors, each contract's schedule, and the
// reply template. It knows nothing of files.
package ports

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/contracts"
	"beamconnect/relative"
	"beamconnect/timesync"
)

// Source says where a port element's value comes from or goes to.
type Source uint8

const (
	Slot            Source = iota // a slot of BeamNG's message
	Meta                          // a value computed about a contract or the link
	DirectiveSource               // port 0 in: connect (non-zero) or disconnect (0)
	StatusSource                  // port 0 out: connection status 0–5 (a Status)
	Relative                      // a cross-vehicle property computed from two vehicles' data
)

func (s Source) String() string {
	switch s {
	case Slot:
		return "slot"
	case Meta:
		return "meta"
	case Relative:
		return "relative"
	case DirectiveSource:
		return "directive"
	case StatusSource:
		return "status"
	}
	return "Source(" + strconv.Itoa(int(s)) + ")"
}

// ReplyID is the policy for the id written into each reply (beamng.replyId).
type ReplyID string

// The reply id policies.
const (
	ReplyNext    ReplyID = "next"    // received id + 1: no start-up stall
	ReplyEcho    ReplyID = "echo"    // received id, as BeamNG's S-function does
	ReplyCounter ReplyID = "counter" // 1, 2, 3, … as BeamNG's FMU does
)

// Field is one field of a port, resolved.
type Field struct {
	Name   string // propertyName as the config wrote it
	Path   string // where the config defines it, e.g. outputs[0].ports[1][0]
	Source Source
	Meta   contracts.Meta // for Source Meta
	// For Source Relative: the property, of vehicle Vehicle to vehicle Other.
	Relative relative.Property
	Other    int
	Vehicle  int     // index into Plan.Vehicles
	Slot     int     // first element of the message, for Source Slot
	Width    int     // elements, ≥ 1
	Offset   int     // first element within the port vector
	Initial  float64 // value before any data
	Invalid  float64 // value reported for a non-finite received value
	// Layout is its vehicle's message layout, which Signal reads (nil:
	// Gen 1's).
	Layout *beamng.Layout
}

// Signal is the layout's entry of slot i of the field (0 ≤ i < Width).
func (f *Field) Signal(dir beamng.Direction, i int) beamng.Signal {
	l := f.Layout
	if l == nil {
		l = beamng.Fixed
	}
	s, _ := l.At(dir, f.Slot+i)
	return s
}

// Port is one vector port of the model. Inputs carry data to BeamNG,
// outputs data from it; port 0 of each is the connection directive and the
// connection status.
type Port struct {
	Number   int
	Dir      beamng.Direction
	Contract int // index into Plan.Contracts; -1 for port 0
	Width    int
	Fields   []Field
}

// Contract is one port group at run time.
type Contract struct {
	Name     string // the group's config path, e.g. "outputs[0]"
	Dir      beamng.Direction
	CommData bool
	Schedule contracts.Schedule // zero for commData groups
	TimeSync bool
	Overdue  float64 // seconds; < 0: overdue detection off
	Ports    []int   // port numbers, in Inputs or Outputs as Dir says
}

// Vehicle is one coupled vehicle: its socket pair, its message layout and
// its reply template.
type Vehicle struct {
	Name   string
	Local  netip.AddrPort // beamconnect binds; BeamNG sends here
	Remote netip.AddrPort // BeamNG binds; beamconnect replies here
	// Layout is the message layout: which signal each element carries and
	// how long the messages are; CSV is the Gen 2 CSV it comes from (nil
	// for Gen 1). With Gen 2 each vehicle has its own.
	Layout *beamng.Layout
	CSV    *cosim.File
	// Template is the reply before the model writes anything: the id slot 0,
	// mapped slots at their fields' initial values and, in every slot no
	// field maps, NaN for Gen 1 (BeamNG's controller skips it, keeping its
	// previous value) and a neutral value for Gen 2, which has no NaN filter
	// (multiply 1, add, freeze and value rows 0).
	Template []float64
	// Need is how many doubles of BeamNG's message the fields of this
	// vehicle read (1 + the last slot mapped): a message shorter than that
	// lacks data the model reads.
	Need int
	// Unanswered is how many messages BeamNG lets this vehicle have in
	// flight before it blocks (its window): with Gen 2 from its own CSV's
	// Ping Time, so vehicles may differ.
	Unanswered int
	// State is where this vehicle's message carries each of
	// relative.Quantities (posX … groundspeed), the cross-vehicle
	// properties' inputs; 0 where its layout has none.
	State [len(relative.Quantities)]int
}

// Plan is a compiled config (config.Compile): everything the runtime
// reads, and nothing it has to look up. A Plan is never modified once
// compiled, so goroutines may share it and a reload swaps in a whole new
// one.
type Plan struct {
	Source       string // the config file
	Config       []byte // its text, as compiled (recordings keep it)
	Protocol     *beamng.Protocol
	ReplyID      ReplyID
	TimeSync     timesync.Mode
	TimeDilation float64
	PhysicsDt    float64 // seconds
	Period       float64 // BeamNG's send period (simulinkTime), seconds
	PingTime     float64 // seconds
	SendSkips    int     // physics steps BeamNG skips between sends
	// Unanswered is the largest of the vehicles' windows (each vehicle's
	// is in Vehicles): a watchdog that expects no more than that in flight
	// never mistakes a vehicle with a wider window for one running ahead.
	Unanswered  int
	DebugFile   bool
	BusyPoll    bool           // beamng.busyPoll: read the socket by busy polling
	Model       string         // the model the config names
	ModelParams map[string]any // its parameters: float64, bool, string or []string
	// RealTime is beamng.realTime: each model step is awaited up to its
	// deadline, and a message whose step is late gets neutral controls.
	// false is lockstep: a reply waits for the model's step on its
	// message's data, up to the model timeout; a late step slows BeamNG.
	RealTime bool
	// ModelTimeout is how long a model's step may go without an answer
	// before it is a fault (seconds): beamng.modelTimeoutMs; else in
	// lockstep the shortest overdueDataTimeout of the inputs (data to
	// BeamNG), at most LockstepModelTimeout, or LockstepModelTimeout; in
	// real time 5 periods, at least DefaultModelTimeout. ModelTimeoutFrom
	// says which.
	ModelTimeout     float64
	ModelTimeoutFrom string
	Vehicles         []Vehicle
	Inputs           []Port // Inputs[0] is the connection directive
	Outputs          []Port // Outputs[0] is the connection status
	Contracts        []Contract
	// Quality lists the controlled quantities of beamng.quality.
	Quality []Loop
	// FailOnControl is beamng.failOn's "control" (run --fail-on control
	// too): a control verdict other than good makes the exit status 4.
	FailOnControl bool
	// CSVPaths are the CSV files the plan was compiled from besides its
	// config (each Gen 2 vehicle's interface; none for Gen 1): what a run
	// watches, beside the config, to reload when they change.
	CSVPaths []string
}

// DefaultModelTimeout is the shortest default model timeout in real time:
// a few periods, but never so short that a scheduler hiccup counts as a
// hung model.
const DefaultModelTimeout = 0.025

// LockstepModelTimeout is the model timeout in lockstep (seconds), unless
// the config says otherwise: BeamNG waits 2 s for a reply, so a step that
// has not answered by then is a fault whose neutral reply still reaches
// BeamNG within that wait.
const LockstepModelTimeout = 1.5

// Mode names how a late model step is handled, for compile and the
// summary.
func (p *Plan) Mode() string {
	if p.RealTime {
		return "real time"
	}
	return "lockstep"
}

// StartCommand is the line to type into BeamNG's Lua console (with vehicle v
// selected) that starts a Gen 1 coupling matching the plan: BeamNG sends to
// the vehicle's Local address and listens on its Remote one.
func (p *Plan) StartCommand(v int) string {
	veh := p.Vehicles[v]
	if veh.CSV != nil {
		return p.gen2Command(veh)
	}
	var b strings.Builder
	b.WriteString("extensions.load('tech/vehicleSystemsCoupling'); tech_vehicleSystemsCoupling.startCoupling({")
	fmt.Fprintf(&b, "simulinkTime=%s, pingTime=%s, udpSendPort=%d, udpReceivePort=%d, udpSendIP='%s', udpReceiveIP='%s'",
		luaNumber(p.Period), luaNumber(p.PingTime), veh.Local.Port(), veh.Remote.Port(), veh.SendTo().Addr(), veh.Remote.Addr())
	if p.DebugFile {
		b.WriteString(", debugFile=true")
	}
	b.WriteString("})")
	return b.String()
}

// luaNumber writes a number the way Lua's tostring does for these values
// (shortest form that reads back as the same double: 0.005, 1e-05).
func luaNumber(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Port returns input or output port n of the plan.
func (p *Plan) Port(dir beamng.Direction, n int) (*Port, bool) {
	ports := p.Outputs
	if dir == beamng.ToBeamNG {
		ports = p.Inputs
	}
	if n < 0 || n >= len(ports) {
		return nil, false
	}
	return &ports[n], true
}

// Find locates the first field that carries a BeamNG signal (by canonical
// name) in the ports of one direction: the port number and the element of
// the port vector. Models use it to bind to the ports they need.
func (p *Plan) Find(dir beamng.Direction, name string) (port, elem int, ok bool) {
	return p.FindFor(dir, name, -1)
}

// FindFor is Find among the fields of vehicle v (any vehicle when v < 0).
func (p *Plan) FindFor(dir beamng.Direction, name string, v int) (port, elem int, ok bool) {
	list := p.Outputs
	if dir == beamng.ToBeamNG {
		list = p.Inputs
	}
	for _, pt := range list {
		for i := range pt.Fields {
			f := &pt.Fields[i]
			if f.Source != Slot || v >= 0 && f.Vehicle != v {
				continue
			}
			for k := range f.Width {
				if s := f.Signal(dir, k); (s.Name == name || s.Meaning == name) && (s.Kind == "" || s.Kind == "value") {
					return pt.Number, f.Offset + k, true
				}
			}
		}
	}
	return 0, 0, false
}

// gen2Command is the vehicle-Lua line that starts a Gen 2 coupling the way
// the editor's execute() does (spec §3.1): the CSV's rows as cData, passed
// through lpack to loadControllerExternal. Sensors are not created by it:
// a CSV with sensor rows needs the editor.
func (p *Plan) gen2Command(veh Vehicle) string {
	var b strings.Builder
	b.WriteString("controller.loadControllerExternal('tech/cosimulationCoupling', 'cosimulationCoupling', lpack.encode({{signalsTo={")
	for i, r := range veh.CSV.To {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{type=%s, groupName=%s, name=%s}", luaString(orNumber(r.Type)), luaString(r.Group), luaString(r.Name))
	}
	b.WriteString("}, signalsFrom={")
	for i, r := range veh.CSV.From {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{type=%s, groupName=%s, name=%s, isValue=%t, isMultiply=%t, isAdd=%t, isFreeze=%t}",
			luaString(orNumber(r.Type)), luaString(r.Group), luaString(r.Name), r.Value == "value", r.Value == "multiply", r.Value == "add", r.Value == "freeze")
	}
	steps := int(math.Round(p.Period / p.PhysicsDt))
	fmt.Fprintf(&b, "}, sensorMap={}, time3rdParty=%s, pingTime=%s, udpSendPort=%d, udpReceivePort=%d, udpSendIP=%s, udpReceiveIP=%s}}))",
		cosim.TimeText(steps, p.PhysicsDt), cosim.LuaText(veh.CSV.Ping.Value), veh.Local.Port(), veh.Remote.Port(),
		luaString(veh.SendTo().Addr().String()), luaString(veh.Remote.Addr().String()))
	return b.String()
}

func orNumber(typ string) string {
	if typ == "" {
		return "number"
	}
	return typ
}

// luaString quotes s as a Lua string literal.
func luaString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`, "\n", `\n`).Replace(s) + "'"
}

// Label names a field that carries no signal of BeamNG's message: its meta
// value ("time"), or its relative property and the other vehicle
// ("gap:lead").
func (f *Field) Label(p *Plan) string {
	if f.Source == Relative {
		return f.Relative.String() + ":" + p.Vehicles[f.Other].Name
	}
	return f.Meta.String()
}

// FieldAt is the field that holds element elem of port n in a direction
// (nil for port 0, or an element no field holds).
func (p *Plan) FieldAt(dir beamng.Direction, n, elem int) *Field {
	pt, ok := p.Port(dir, n)
	if !ok || n == 0 {
		return nil
	}
	for i := range pt.Fields {
		f := &pt.Fields[i]
		if elem >= f.Offset && elem < f.Offset+f.Width {
			return f
		}
	}
	return nil
}

// SendTo is the address BeamNG must send to: the local address, or when
// it binds every interface (0.0.0.0), this machine's address on the way to
// BeamNG's (the one the system would send from: no datagram is sent to
// find it).
func (v Vehicle) SendTo() netip.AddrPort {
	if !v.Local.Addr().IsUnspecified() {
		return v.Local
	}
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(v.Remote))
	if err != nil {
		return v.Local
	}
	defer c.Close()
	a := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
	return netip.AddrPortFrom(a, v.Local.Port())
}

// InRealTime is the plan in real time (run --real-time), whatever its
// config says: a copy, its model timeout the real-time default unless the
// config sets one.
func (p *Plan) InRealTime() *Plan {
	q := *p
	q.RealTime = true
	if q.ModelTimeoutFrom != timeoutFromConfig {
		q.ModelTimeout = 0
	}
	q.FillModelTimeout()
	return &q
}

const timeoutFromConfig = "beamng.modelTimeoutMs"

// FillModelTimeout sets the model timeout the config leaves to its
// default, and says where it comes from: the compiler's last step, and
// InRealTime's.
func (p *Plan) FillModelTimeout() {
	switch {
	case p.ModelTimeout > 0:
		p.ModelTimeoutFrom = timeoutFromConfig
	case p.RealTime:
		p.ModelTimeout = max(5*p.Period, DefaultModelTimeout)
		p.ModelTimeoutFrom = "5 periods, at least 25 ms (real time)"
	default:
		p.ModelTimeout = LockstepModelTimeout
		p.ModelTimeoutFrom = "BeamNG's 2 s wait for a reply"
		// How late the data to BeamNG may be, where the config says.
		for _, c := range p.Contracts {
			if c.Dir == beamng.ToBeamNG && c.Overdue > 0 && c.Overdue < p.ModelTimeout {
				p.ModelTimeout = c.Overdue
				p.ModelTimeoutFrom = "overdueDataTimeout of " + c.Name
			}
		}
	}
}
