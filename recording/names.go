package recording

import (
	"strings"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/relative"
)

// Name is a recording column's name taken apart: out3.lead.wheelspeed is
// port out3, vehicle lead, field wheelspeed; out2.ego.gap:lead has the
// field gap:lead, whose base is gap; controller.demand is the connector
// demand of a system's component controller, drawn as a port is.
type Name struct {
	Full    string
	Port    string // out3, in1; out0 for status, in0 for directive; model for a model's variable
	Vehicle string // "" in a one-vehicle recording
	Field   string
	// Setpoint marks a setpoint's column (beamng.quality): its port,
	// vehicle and field are the measured value's.
	Setpoint bool
	// Component marks a connector of a system's component
	// (controller.demand): Port is the component, Field the connector.
	Component bool
}

// ModelPort is the port a model's variable of its own is drawn under
// (its column model.NAME).
const ModelPort = "model"

// SetpointPrefix starts a setpoint's column: setpoint:out1.groundspeed is
// the setpoint of out1.groundspeed (setpoint:out1.groundspeed#2 that of a
// second loop on it).
const SetpointPrefix = "setpoint:"

// ParseName takes a column name apart; several says whether the recording
// has a vehicle column (and so a vehicle in every port column's name).
// false for the columns that belong to no port: time, vehicle, id,
// reply_id, reloads.
func ParseName(col string, several bool) (Name, bool) {
	switch col {
	case "status":
		return Name{Full: col, Port: "out0", Field: col}, true
	case "directive":
		return Name{Full: col, Port: "in0", Field: col}, true
	}
	if v, ok := strings.CutPrefix(col, ModelPrefix); ok && v != "" {
		return Name{Full: col, Port: ModelPort, Field: v}, true
	}
	if measured, ok := strings.CutPrefix(col, SetpointPrefix); ok {
		if i := strings.LastIndexByte(measured, '#'); i > 0 {
			measured = measured[:i]
		}
		n, ok := ParseName(measured, several)
		if !ok || n.Setpoint || n.Port == "out0" || n.Port == "in0" || n.Port == ModelPort || n.Component {
			return Name{}, false
		}
		n.Full, n.Setpoint = col, true
		return n, true
	}
	port, rest, ok := strings.Cut(col, ".")
	switch {
	case !ok || port == "" || rest == "":
		return Name{}, false
	case !isPort(port):
		// A system's component's connector: component.connector.
		return Name{Full: col, Port: port, Field: rest, Component: true}, true
	}
	n := Name{Full: col, Port: port, Field: rest}
	if several {
		if v, f, ok := strings.Cut(rest, "."); ok && v != "" && f != "" {
			n.Vehicle, n.Field = v, f
		}
	}
	return n, true
}

func isPort(s string) bool {
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "out"), "in")
	if digits == s || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Base is the field without the other vehicle of a relative property:
// gap for gap:lead.
func (n Name) Base() string {
	b, _, _ := strings.Cut(n.Field, ":")
	return b
}

// Matches reports whether a --fields entry names this column. An entry is
// the full name, or any of its parts in order with some left out: the
// field (groundspeed, or gap for gap:lead), vehicle.field (ego.groundspeed),
// port.field (out1.groundspeed, whatever the vehicle), a vehicle alone
// (ego: all of its fields) or a port alone (out1).
func (n Name) Matches(spec string) bool {
	if spec == n.Full {
		return true
	}
	field := func(s string) bool { return s == n.Field || s == n.Base() }
	parts := strings.Split(spec, ".")
	switch len(parts) {
	case 1:
		return field(spec) || spec == n.Port || n.Vehicle != "" && spec == n.Vehicle
	case 2:
		a, b := parts[0], parts[1]
		return (a == n.Port || n.Vehicle != "" && a == n.Vehicle) && field(b) ||
			a == n.Port && n.Vehicle != "" && b == n.Vehicle
	case 3:
		return parts[0] == n.Port && parts[1] == n.Vehicle && field(parts[2])
	}
	return false
}

// Unit is the unit of the column's values as BeamNG's catalogues give it
// ("m/s", "1/min", "N·m"), "s" for times, "" when it has none (a pedal,
// a gear, a serial number, the status) or is not known (a custom Gen 2
// electrics value).
func (n Name) Unit() string {
	if n.Port == ModelPort || n.Component {
		return "" // the model's: a recording says it
	}
	switch n.Field {
	case "status", "directive", "serial_number":
		return ""
	case "time", "receive_time_offset":
		return "s"
	}
	if strings.HasPrefix(n.Field, "ping_results") {
		return ""
	}
	if p, ok := relative.Parse(n.Base()); ok && strings.Contains(n.Field, ":") {
		return p.Unit()
	}
	dir := beamng.FromBeamNG
	if strings.HasPrefix(n.Port, "in") {
		dir = beamng.ToBeamNG
	}
	if s, m := beamng.Lookup(dir, n.Field); m == beamng.Exact {
		return s.Unit
	}
	// Gen 2: the CSV's names, whose groups a recording does not keep.
	if _, f, ok := strings.Cut(n.Field, " "); ok { // a powertrain device's "<device> <field>"
		switch {
		case strings.Contains(f, "AV"):
			return "rad/s"
		case strings.Contains(f, "Torque"):
			return "N·m"
		}
		return ""
	}
	for _, d := range cosim.Catalogue() {
		if d.Name == n.Field || d.Group == "Wheels" && strings.HasPrefix(n.Field, d.Name) && len(n.Field) <= len(d.Name)+2 {
			return d.Unit
		}
	}
	return ""
}
