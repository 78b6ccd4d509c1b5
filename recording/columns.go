package recording

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"beamconnect/beamng"
	"beamconnect/contracts"
	"beamconnect/models"
	"beamconnect/ports"
)

// Layout is the columns of a recording's rows, the same in every format:
// time (BeamNG's simulation time), the vehicle (with several vehicles),
// status, id, reply_id, reloads, local_time, every output port's values,
// the directive, every input port's values, the setpoints of
// beamng.quality's loops, then the model's own variables. A row is a value
// per column (NaN for the vehicle column).
type Layout struct {
	Vehicles []string // the vehicles' names; one vehicle: one name, maybe ""
	Columns  []Column
	// Sampled are, for each model column in order, the index of its
	// variable in the list LayoutOf was given: a row's model values are
	// those variables' values (Entry.Model).
	Sampled []int
}

// Column is one column: its name as a CSV header writes it, and what a
// reader of the recording should know of it.
type Column struct {
	Name    string
	Unit    string
	Comment string
	Role    Role
	// Vehicle is the vehicle whose value it is (an index into Vehicles)
	// for a field; a row's own columns (status, id…) are the row's vehicle's.
	Vehicle int
	Out     bool // from BeamNG's side: an output port, the status, BeamNG's message id
	// Port and Elem place a field's value in its port vector (Elem -1 for
	// the row's own columns); a setpoint's are its measured value's.
	Port, Elem int
	// Component is the system's component a model column is a connector
	// of (models.Variable.Component), "" for a model's own variable.
	Component string
}

// Role says what a column holds.
type Role uint8

const (
	Field    Role = iota // a port's value
	Time                 // the row's time: BeamNG's simulation time of the message, s
	Vehicle              // the vehicle the row is for
	Own                  // the row's vehicle's: status, id, reply_id, reloads, local_time, directive
	Setpoint             // a setpoint of beamng.quality's loops, after the ports: setpoint:out1.groundspeed
	Model                // a variable of the model's own, after the setpoints: model.der(h)
)

// ModelPrefix starts the column of a model's variable that drives no
// field: model.der(h) is the model's der(h).
const ModelPrefix = "model."

// The comments of the columns every recording has.
var ownComments = map[string]string{
	"time":       "BeamNG's simulation time of the message (its id × the send period; after BeamNG restarted its coupling it goes on from where it was), s",
	"local_time": "local time of the message, on the run's time base (the summary's): from the start of the run, or BeamNG's time when BeamNG is the time master, s",
	"status":     "connection status (port 0 out): 1 unconnected, 2 connecting, 3 connected, 4 error, 5 disconnecting",
	"id":         "BeamNG's message id",
	"reply_id":   "the id of beamconnect's reply to the message",
	"reloads":    "config reloads applied so far",
	"directive":  "connection directive (port 0 in): 0 disconnect, otherwise connect",
}

// Several reports whether the rows are of several vehicles (a vehicle
// column).
func (l *Layout) Several() bool { return len(l.Vehicles) > 1 }

// Names lists the column names, as a CSV header row.
func (l *Layout) Names() []string {
	names := make([]string, len(l.Columns))
	for i, c := range l.Columns {
		names[i] = c.Name
	}
	return names
}

// Equal reports whether two layouts have the same columns (names, units,
// vehicles) for the same vehicles.
func (l *Layout) Equal(o *Layout) bool {
	return slices.Equal(l.Vehicles, o.Vehicles) && slices.EqualFunc(l.Columns, o.Columns, func(a, b Column) bool {
		return a.Name == b.Name && a.Unit == b.Unit && a.Role == b.Role && a.Vehicle == b.Vehicle && a.Out == b.Out
	})
}

// ImpliedUnit is the unit a column's name implies (BeamNG's catalogues,
// by the field's name), "" for none; a column whose Unit differs (a
// model's variable) carries its unit in a CSV header: "in1.h [m]".
func (l *Layout) ImpliedUnit(c *Column) string {
	switch c.Role {
	case Time:
		return "s"
	case Vehicle:
		return ""
	case Own:
		if c.Name == "local_time" {
			return "s"
		}
		return ""
	}
	if n, ok := ParseName(c.Name, l.Several()); ok {
		return n.Unit()
	}
	return ""
}

// VehicleIndex is the index of a vehicle's name, -1 when it has none.
func (l *Layout) VehicleIndex(name string) int { return slices.Index(l.Vehicles, name) }

// LayoutOf is the layout of a run of plan with a model whose own
// variables are vars (models.Sampler; nil for none): the ports' columns
// named by port and field (out3.wheelspeed, in2.throttle, and with several
// vehicles out3.lead.wheelspeed), each with its unit and what it is, from
// BeamNG's catalogue or the Gen 2 CSV; a field a model's variable drives
// named after the variable, with its unit and description (in1.h, m); the
// variables that drive no field in columns of their own (model.der(h)).
func LayoutOf(plan *ports.Plan, vars []models.Variable) *Layout {
	l := &Layout{}
	for _, v := range plan.Vehicles {
		l.Vehicles = append(l.Vehicles, v.Name)
	}
	l.own("time", Time, false)
	if l.Several() {
		l.Columns = append(l.Columns, Column{Name: "vehicle", Role: Vehicle, Vehicle: -1, Comment: "the vehicle whose message the row is"})
	}
	l.own("status", Own, true)
	l.own("id", Own, true)
	l.own("reply_id", Own, false)
	l.own("reloads", Own, true)
	l.own("local_time", Own, true)
	l.fields(plan, beamng.FromBeamNG)
	l.own("directive", Own, false)
	l.fields(plan, beamng.ToBeamNG)
	l.setpoints(plan)
	l.variables(plan, vars)
	return l
}

// variables names the fields the model's variables drive after them, and
// adds a column for each of the others.
func (l *Layout) variables(plan *ports.Plan, vars []models.Variable) {
	taken := map[string]bool{}
	for _, c := range l.Columns {
		taken[c.Name] = true
	}
	unique := func(name string) string {
		for k := 2; taken[name]; k++ {
			name = strings.TrimSuffix(name, "#"+strconv.Itoa(k-1)) + "#" + strconv.Itoa(k)
		}
		taken[name] = true
		return name
	}
	renamed := map[models.Ref]bool{}
	for i, v := range vars {
		desc := v.Description
		what := "the model's " + v.Kind + " " + strconv.Quote(v.Name)
		if v.Kind == "" {
			what = "the model's " + strconv.Quote(v.Name)
		}
		if v.Drives {
			c := l.fieldAt(v.At)
			if c == nil || renamed[v.At] {
				continue // no such field (not expected), or another variable's
			}
			renamed[v.At] = true
			prefix := "in" + strconv.Itoa(c.Port) + "."
			if l.Several() {
				prefix += plan.Vehicles[c.Vehicle].Name + "."
			}
			delete(taken, c.Name)
			sent := c.Comment
			c.Name = unique(prefix + v.Name)
			if v.Unit != "" {
				c.Unit = v.Unit
			}
			c.Comment = joinComment(desc, what+", sent to BeamNG as "+sent)
			continue
		}
		name := ModelPrefix + v.Name
		if v.Component != "" {
			name, what = v.Component+"."+v.Name, "the "+v.Kind+" "+strconv.Quote(v.Name)+" of the system's component "+strconv.Quote(v.Component)
		}
		l.Columns = append(l.Columns, Column{Name: unique(name), Unit: v.Unit, Role: Model, Vehicle: -1,
			Elem: -1, Comment: joinComment(desc, what), Component: v.Component})
		l.Sampled = append(l.Sampled, i)
	}
}

// fieldAt is the column of input port element at, nil for none.
func (l *Layout) fieldAt(at models.Ref) *Column {
	for i := range l.Columns {
		c := &l.Columns[i]
		if c.Role == Field && !c.Out && c.Port == at.Port && c.Elem == at.Elem {
			return c
		}
	}
	return nil
}

func joinComment(a, b string) string {
	if a == "" {
		return b
	}
	return a + " (" + b + ")"
}

// setpoints adds a column per loop of beamng.quality, in its order, named
// after the value it measures (a second loop on one value gets #2).
func (l *Layout) setpoints(plan *ports.Plan) {
	seen := map[string]int{}
	for _, q := range plan.Quality {
		var m *Column
		for i := range l.Columns {
			c := &l.Columns[i]
			if c.Role == Field && c.Out && c.Port == q.Measured.Port && c.Elem == q.Measured.Elem && c.Vehicle == q.Measured.Vehicle {
				m = c
			}
		}
		if m == nil {
			continue // Compile found the measured field: not expected
		}
		name := SetpointPrefix + m.Name
		if seen[name]++; seen[name] > 1 {
			name += "#" + strconv.Itoa(seen[name])
		}
		l.Columns = append(l.Columns, Column{Name: name, Unit: m.Unit, Role: Setpoint, Vehicle: m.Vehicle, Out: true,
			Port: m.Port, Elem: m.Elem, Comment: "the setpoint of " + m.Name + " (beamng.quality's loop " + strconv.Quote(q.Name) + ")"})
	}
}

func (l *Layout) own(name string, role Role, out bool) {
	unit := ""
	if role == Time || name == "local_time" {
		unit = "s"
	}
	l.Columns = append(l.Columns, Column{Name: name, Unit: unit, Comment: ownComments[name], Role: role, Vehicle: -1, Out: out, Elem: -1})
}

// fields adds the values of the ports after port 0 in one direction.
func (l *Layout) fields(plan *ports.Plan, dir beamng.Direction) {
	prefix, list := "out", plan.Outputs
	if dir == beamng.ToBeamNG {
		prefix, list = "in", plan.Inputs
	}
	several := l.Several()
	var h []byte
	for pi := range list[1:] {
		p := &list[pi+1]
		for i := range p.Fields {
			f := &p.Fields[i]
			for k := range f.Width {
				h = append(h[:0], prefix...)
				h = strconv.AppendInt(h, int64(p.Number), 10)
				h = append(h, '.')
				if several {
					h = append(h, plan.Vehicles[f.Vehicle].Name...)
					h = append(h, '.')
				}
				c := Column{Role: Field, Vehicle: f.Vehicle, Out: dir == beamng.FromBeamNG, Port: p.Number, Elem: f.Offset + k}
				switch f.Source {
				case ports.Slot:
					s := f.Signal(dir, k)
					h = append(h, s.Name...)
					c.Unit, c.Comment = s.Unit, signalComment(s)
				default:
					h = append(h, f.Label(plan)...)
					if f.Width > 1 {
						h = strconv.AppendInt(append(h, '_'), int64(k), 10)
					}
					c.Unit, c.Comment = derivedMeaning(plan, p, f)
				}
				c.Name = string(h)
				if c.Unit == "" {
					// A signal the catalogue gives no unit (a powertrain
					// device's field): as a reader of the name finds it.
					if n, ok := ParseName(c.Name, several); ok {
						c.Unit = n.Unit()
					}
				}
				l.Columns = append(l.Columns, c)
			}
		}
	}
}

// signalComment says what a signal of BeamNG's is: its meaning, and
// where it comes from (the bank reference, the CSV's group and line).
func signalComment(s beamng.Signal) string {
	var b strings.Builder
	if s.Group != "" {
		b.WriteString(s.Group + "/" + s.Name)
	} else {
		b.WriteString(s.Name)
	}
	if s.Desc != "" {
		b.WriteString(": " + s.Desc)
	}
	if s.Ref != "" {
		b.WriteString(" [" + s.Ref + "]")
	}
	return b.String()
}

// derivedMeaning is the unit and meaning of a field beamconnect computes: a
// contract's meta value or a property relating two vehicles.
func derivedMeaning(plan *ports.Plan, p *ports.Port, f *ports.Field) (unit, comment string) {
	if f.Source == ports.Relative {
		return f.Relative.Unit(), f.Relative.String() + " from " + name(plan, f.Vehicle) + " to " + name(plan, f.Other) + ", computed by beamconnect"
	}
	group := ""
	if p.Contract >= 0 && p.Contract < len(plan.Contracts) {
		group = " of " + plan.Contracts[p.Contract].Name
	}
	switch f.Meta {
	case contracts.Time:
		return "s", "remote (BeamNG's) simulation time of the message" + group
	case contracts.ReceiveTimeOffset:
		return "s", "local minus remote time of the message" + group
	case contracts.SerialNumber:
		return "", "serial number of the update" + group
	case contracts.PingResults:
		return "", "round-trip statistics" + group
	}
	return "", ""
}

func name(plan *ports.Plan, v int) string {
	if v >= 0 && v < len(plan.Vehicles) && plan.Vehicles[v].Name != "" {
		return plan.Vehicles[v].Name
	}
	return "the vehicle"
}

// LayoutOfHeader is the layout of a CSV header row's columns: the
// vehicles from the names, units as the header gives them ("in1.h [m]")
// or Name.Unit finds them, meanings from BeamNG's catalogue where the name
// is there.
func LayoutOfHeader(h *Header) *Layout {
	l := &Layout{}
	several := h.Vehicle >= 0
	for i, col := range h.Columns {
		c := Column{Name: col, Vehicle: -1, Elem: -1, Comment: ownComments[col]}
		switch {
		case i == 0:
			c.Role, c.Unit = Time, "s"
		case i == h.Vehicle:
			c.Role = Vehicle
		case ownComments[col] != "":
			c.Role, c.Out = Own, col == "status" || col == "id" || col == "reloads" || col == "local_time"
			if col == "local_time" {
				c.Unit = "s"
			}
		default:
			n, ok := ParseName(col, several)
			if !ok {
				c.Role = Own // a column of no port: kept, as the row's
				break
			}
			if n.Port == ModelPort || n.Component {
				c.Role = Model
				if n.Component {
					c.Component = n.Port
				}
				break
			}
			c.Role, c.Unit, c.Out = Field, n.Unit(), strings.HasPrefix(n.Port, "out")
			if n.Setpoint {
				c.Role = Setpoint
			}
			c.Vehicle = 0
			if several {
				if c.Vehicle = l.VehicleIndex(n.Vehicle); c.Vehicle < 0 {
					c.Vehicle = len(l.Vehicles)
					l.Vehicles = append(l.Vehicles, n.Vehicle)
				}
			}
			dir := beamng.FromBeamNG
			if !c.Out {
				dir = beamng.ToBeamNG
			}
			if s, m := beamng.Lookup(dir, n.Field); m == beamng.Exact {
				c.Comment = signalComment(s)
			}
		}
		if i < len(h.Units) && h.Units[i] != "" {
			c.Unit = h.Units[i]
		}
		l.Columns = append(l.Columns, c)
	}
	if !several {
		l.Vehicles = []string{""}
	}
	return l
}

// Entry is what one message's row is made of.
type Entry struct {
	Time      float64 // BeamNG's simulation time of the message, s
	LocalTime float64 // its local time, s
	Vehicle   int     // whose message it is: an index into the layout's Vehicles
	Status    int     // the connection status (ports.Status)
	ID        float64 // BeamNG's message id
	ReplyID   float64
	Reloads   int64
	// Outputs and Inputs are the port vectors (port 0 first), Setpoints
	// the setpoints of beamng.quality's loops, Model the values of the
	// model's variables that have columns of their own (Layout.Sampled's
	// order).
	Outputs, Inputs [][]float64
	Setpoints       []float64
	Model           []float64
	// VariablesPending says the model has not named its variables yet (a
	// program that has not spoken): a recorder may hold the row back until
	// it has (models.LateSampler).
	VariablesPending bool
}

// Flatten appends a row's values in the layout's order: the time, the
// vehicle column (NaN), status, id, reply_id, reloads, local_time, the
// output ports after port 0, the input ports (port 0, the directive,
// first), the setpoints, the model's variables. It allocates nothing once
// vals has room.
func (l *Layout) Flatten(vals []float64, e *Entry) []float64 {
	vals = append(vals[:0], e.Time)
	if l.Several() {
		vals = append(vals, math.NaN())
	}
	vals = append(vals, float64(e.Status), e.ID, e.ReplyID, float64(e.Reloads), e.LocalTime)
	for _, p := range e.Outputs[1:] {
		vals = append(vals, p...)
	}
	for _, p := range e.Inputs {
		vals = append(vals, p...)
	}
	vals = append(vals, e.Setpoints...)
	return append(vals, e.Model...)
}
