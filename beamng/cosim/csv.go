// Package cosim reads and writes the CSV that defines a Gen 2
// (cosimulationCoupling) coupling: BeamNG's editor writes it, BeamNG's
// controller and the client both lay out their messages from it (spec §3).
package cosim

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"beamconnect/beamng"
	"beamconnect/internal/suggest"
)

// Header is the first row BeamNG's editor writes; BeamNG skips row 1 whatever it holds.
var Header = []string{"Section", "Subsection", "Parameter Name", "Parameter Value", "Type", "Description", "Units", "Notes"}

// Diag is one finding about a CSV, placed in it.
type Diag struct {
	File      string
	Line, Col int
	Warning   bool
	Msg       string
	// Cut marks the warning about the row where BeamNG stops building its
	// message (File.Cut): a reader that knows which rows are read may
	// replace it with an error.
	Cut bool
}

func (d Diag) String() string {
	sev := ""
	if d.Warning {
		sev = "warning: "
	}
	return fmt.Sprintf("%s:%d:%d: %s%s", d.File, d.Line, d.Col, sev, d.Msg)
}

// Diags is every finding about one CSV; as an error, a CSV that cannot be used.
type Diags []Diag

func (ds Diags) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Errors counts the findings that are not warnings.
func (ds Diags) Errors() int {
	n := 0
	for _, d := range ds {
		if !d.Warning {
			n++
		}
	}
	return n
}

// Row is one data row, with where each of its columns starts.
type Row struct {
	Line    int
	Section string
	Group   string // Subsection
	Name    string // Parameter Name
	Value   string // Parameter Value: a From row's kind, a number, an address…
	Type    string
	Desc    string
	Cols    [8]int // the column each field starts at (1-based); 0 when absent
}

// Col is where column i (0-based) of the row starts, or the row's end.
func (r Row) Col(i int) int {
	for ; i >= 0; i-- {
		if r.Cols[i] > 0 {
			return r.Cols[i]
		}
	}
	return 1
}

// Param is one number of the connection section.
type Param struct {
	Value float64
	Line  int // 0 when the CSV does not set it
	Col   int
}

// File is a parsed CSV.
type File struct {
	Path     string
	To       []Row // signalTo rows in file order: BeamNG → client
	From     []Row // signalFrom rows in file order: client → BeamNG
	Vehicle  []Row
	Sensors  []Row
	Time     Param // 3rd Party Computation Time, seconds
	Ping     Param // Ping Time, seconds
	Other    netip.AddrPort
	BeamNG   netip.AddrPort
	OtherAt  [2]Param // where the otherUDP IP and port are (Value unused)
	BeamNGAt [2]Param
	Warnings Diags
}

// Module defaults of BeamNG's controller, used for rows a CSV leaves out.
var (
	DefaultOther  = netip.MustParseAddrPort("127.0.0.1:64890")
	DefaultBeamNG = netip.MustParseAddrPort("127.0.0.1:64891")
)

const (
	DefaultTime = 0.0005
	DefaultPing = 1e-5
)

// Load reads and parses a CSV file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse reads a CSV as BeamNG and its editor write it. It returns the file
// with its warnings, or Diags holding every error and warning.
func Parse(path string, data []byte) (*File, error) {
	var d Diags
	f := &File{Path: path, Other: DefaultOther, BeamNG: DefaultBeamNG,
		Time: Param{Value: DefaultTime}, Ping: Param{Value: DefaultPing}}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	recs := records(data, &d, path)
	at := func(warn bool, line, col int, format string, args ...any) {
		d = append(d, Diag{File: path, Line: line, Col: col, Warning: warn, Msg: fmt.Sprintf(format, args...)})
	}
	if len(recs) == 0 || len(recs) == 1 && len(recs[0]) == 1 && recs[0][0].text == "" {
		at(false, 1, 1, "the file is empty: expected the header row %s, then signalTo, signalFrom and connection rows", strings.Join(Header, ","))
		return nil, d
	}
	if h := recs[0]; len(h) == 0 || h[0].text != Header[0] {
		at(false, 1, 1, "BeamNG skips line 1 as the header, whatever it holds: expected %q, got %q", strings.Join(Header, ","), joinFields(h))
	}
	for _, rec := range recs[1:] {
		if len(rec) == 1 && strings.TrimSpace(rec[0].text) == "" {
			continue // a blank line
		}
		var r Row
		r.Line = rec[0].line
		cols := []*string{&r.Section, &r.Group, &r.Name, &r.Value, &r.Type, &r.Desc}
		for k, fl := range rec {
			if k < len(r.Cols) {
				r.Cols[k] = fl.col
			}
			if k < len(cols) {
				*cols[k] = fl.text
			}
		}
		switch r.Section {
		case "signalTo":
			if r.Name == "" {
				at(false, r.Line, r.Col(2), "a signalTo row needs a signal name in column 3 (Parameter Name)")
				continue
			}
			f.To = append(f.To, r)
		case "signalFrom":
			if r.Name == "" {
				at(false, r.Line, r.Col(2), "a signalFrom row needs a signal name in column 3 (Parameter Name)")
				continue
			}
			if !contains(Kinds, r.Value) {
				at(false, r.Line, r.Col(3), "%q is not a kind of signalFrom row: expected value, multiply, add or freeze", r.Value)
				continue
			}
			f.From = append(f.From, r)
		case "vehicle":
			f.Vehicle = append(f.Vehicle, r)
		case "sensors":
			f.Sensors = append(f.Sensors, r)
		case "connection":
			f.connection(r, at)
		default:
			msg := fmt.Sprintf("%q is not a section BeamNG reads: the row is ignored (expected signalTo, signalFrom, vehicle, connection or sensors)", r.Section)
			if s := suggest.Closest(r.Section, []string{"signalTo", "signalFrom", "vehicle", "connection", "sensors"}); s != "" {
				msg = fmt.Sprintf("%q is not a section BeamNG reads (did you mean %q?): the row is ignored", r.Section, s)
			}
			at(true, r.Line, r.Col(0), "%s", msg)
		}
	}
	f.fit(at)
	// The warning at the row where BeamNG's message is cut is marked as it
	// is made, for a reader that replaces it (Diag.Cut).
	cut := func(warn bool, line, col int, format string, args ...any) {
		at(warn, line, col, format, args...)
		d[len(d)-1].Cut = true
	}
	f.check(at, cut)
	if d.Errors() > 0 {
		return nil, d
	}
	f.Warnings = d
	return f, nil
}

func joinFields(fs []field) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.text
	}
	return strings.Join(s, ",")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type atFunc func(warn bool, line, col int, format string, args ...any)

// connection reads one connection row: the times and the two addresses.
func (f *File) connection(r Row, at atFunc) {
	num := func(p *Param, what string, positive bool) {
		v, err := strconv.ParseFloat(strings.TrimSpace(r.Value), 64)
		switch {
		case err != nil:
			at(false, r.Line, r.Col(3), "%s %q is not a number: expected seconds such as 0.0005", what, r.Value)
		case positive && !(v > 0 && v <= 10):
			at(false, r.Line, r.Col(3), "%s %v is out of range: expected seconds, above 0 and at most 10", what, v)
		default:
			*p = Param{Value: v, Line: r.Line, Col: r.Col(3)}
		}
	}
	switch {
	case r.Group == "" && r.Name == "3rd Party Computation Time":
		num(&f.Time, "3rd Party Computation Time", true)
	case r.Group == "" && r.Name == "Ping Time":
		num(&f.Ping, "Ping Time", true)
	case r.Group == "otherUDP" || r.Group == "beamngUDP":
		ap, pos := &f.Other, &f.OtherAt
		if r.Group == "beamngUDP" {
			ap, pos = &f.BeamNG, &f.BeamNGAt
		}
		switch r.Name {
		case "IP":
			a, err := netip.ParseAddr(strings.TrimSpace(r.Value))
			if err != nil || !a.Is4() {
				at(false, r.Line, r.Col(3), "%q is not an IPv4 address: expected one such as 127.0.0.1", r.Value)
				return
			}
			*ap = netip.AddrPortFrom(a, ap.Port())
			pos[0] = Param{Line: r.Line, Col: r.Col(3)}
		case "port":
			n, err := strconv.ParseFloat(strings.TrimSpace(r.Value), 64)
			if err != nil || n < 1 || n > 65535 || n != float64(int(n)) {
				at(false, r.Line, r.Col(3), "%q is not a port: expected a whole number from 1 to 65535", r.Value)
				return
			}
			*ap = netip.AddrPortFrom(ap.Addr(), uint16(n))
			pos[1] = Param{Line: r.Line, Col: r.Col(3)}
		default:
			at(true, r.Line, r.Col(2), "%q is not a connection parameter: the row is ignored (expected IP or port)", r.Name)
		}
	default:
		at(true, r.Line, r.Col(1), "connection row %q/%q is not one BeamNG reads: the row is ignored", r.Group, r.Name)
	}
}

// MaxRows is how many rows of one section a message can carry: BeamNG
// reads at most beamng.MaxDatagram bytes of a datagram (LuaSocket's
// limit), 1024 doubles with the message id.
const MaxRows = beamng.MaxDatagram/8 - 1

// fit refuses a section with more rows than a datagram carries, at the
// first row that does not fit. beamconnect does not split a message over
// datagrams: BeamNG's controller has no way to put one together again.
func (f *File) fit(at atFunc) {
	for _, sec := range []struct {
		name, what string
		rows       []Row
	}{{"signalTo", "message BeamNG sends", f.To}, {"signalFrom", "reply BeamNG reads", f.From}} {
		if len(sec.rows) <= MaxRows {
			continue
		}
		r := sec.rows[MaxRows]
		at(false, r.Line, r.Col(0), "%s row %d of %d does not fit: a %s holds at most %d bytes, %d doubles with the message id, so at most %d %s rows: expected %d fewer rows",
			sec.name, MaxRows+1, len(sec.rows), sec.what, beamng.MaxDatagram, MaxRows+1, MaxRows, sec.name, len(sec.rows)-MaxRows)
	}
}

// Cut is the first signalTo row whose group BeamNG does not know, and the
// message slot it would have had: BeamNG's controller stops building its
// message at such a row, so neither it nor any later row ever arrives. ok
// is false when BeamNG knows every group.
func (f *File) Cut() (r Row, slot int, ok bool) {
	for i, r := range f.To {
		if Class(r.Group) == "" {
			return r, i + 1, true
		}
	}
	return Row{}, 0, false
}

// check warns about rows BeamNG's controller mishandles (spec §3.3–3.5),
// the row of File.Cut through cut.
func (f *File) check(at, cut atFunc) {
	if f.Other == f.BeamNG {
		at(false, f.BeamNGAt[1].Line, max(f.BeamNGAt[1].Col, 1), "beamngUDP and otherUDP are both %v: expected two addresses (BeamNG's default pair is 64891 and 64890)", f.Other)
	}
	firstSensor := map[string]string{}
	seenTo := map[string]int{}
	cutFound := false
	for _, r := range f.To {
		key := r.Group + "/" + r.Name
		if l, dup := seenTo[key]; dup {
			at(true, r.Line, r.Col(2), "%s is listed twice (also on line %d): both slots carry it", key, l)
		} else {
			seenTo[key] = r.Line
		}
		class := Class(r.Group)
		if class == "" {
			report := cut // the first such row is where the message is cut
			if cutFound {
				report = at
			}
			cutFound = true
			report(true, r.Line, r.Col(1), "BeamNG does not know the group %q: it stops building its message at this row, so every later signalTo row is missing from what it sends", r.Group)
			continue
		}
		if class == "IMU" || class == "GPS" {
			if first, ok := firstSensor[class]; ok && first != r.Group {
				at(true, r.Line, r.Col(1), "a second %s (%q after %q): BeamNG's controller only ever reads the first %s of a kind, so this row carries %q's value", class, r.Group, first, class, first)
			} else {
				firstSensor[class] = r.Group
			}
		}
		def, _, ok := Lookup(r.Group, r.Name)
		switch {
		case !ok:
			msg := fmt.Sprintf("BeamNG has no signal %q in %s: its value is nil, and BeamNG 0.32 then fails every send", r.Name, r.Group)
			if s := suggestIn(class, r.Name); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			at(true, r.Line, r.Col(2), "%s", msg)
		case def.Trap != "":
			at(true, r.Line, r.Col(2), "%s: %s", r.Name, def.Trap)
		}
	}
	seenFrom := map[string]int{}
	// The signals that have a value row: a multiply, add or freeze row
	// without one multiplies, adds to or freezes 0. A set, so the check is
	// one pass however many rows a CSV has.
	valued := map[string]bool{}
	for _, r := range f.From {
		if r.Value == "value" {
			valued[r.Group+"/"+r.Name] = true
		}
	}
	for _, r := range f.From {
		key := r.Group + "/" + r.Name + " " + r.Value
		if l, dup := seenFrom[key]; dup {
			at(true, r.Line, r.Col(2), "%s is listed twice (also on line %d): BeamNG uses the last", key, l)
		} else {
			seenFrom[key] = r.Line
		}
		def, _, ok := Lookup(r.Group, r.Name)
		switch {
		case !ok || !def.From:
			msg := fmt.Sprintf("BeamNG applies only Driver and Wheels controls; %s/%s takes a slot but nothing is applied", r.Group, r.Name)
			if s := suggestFrom(r.Name); s != "" && !ok {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			at(true, r.Line, r.Col(2), "%s", msg)
		case def.Trap != "":
			at(true, r.Line, r.Col(2), "%s: %s", r.Name, def.Trap)
		}
		if r.Value != "value" && !valued[r.Group+"/"+r.Name] {
			at(true, r.Line, r.Col(3), "a %s row of %s without its value row: BeamNG reads the value as 0", r.Value, r.Name)
		}
	}
}

// suggestIn is the catalogue name of a class closest to name.
func suggestIn(class, name string) string { return suggest.Closest(name, classNames[class]) }

// suggestFrom is the name BeamNG applies closest to name.
func suggestFrom(name string) string { return suggest.Closest(name, fromNames) }

// The names suggestions are made from, listed once rather than for every
// row that needs one.
var (
	fromNames  = Names("", true)
	classNames = func() map[string][]string {
		m := map[string][]string{}
		for _, d := range defs {
			if _, ok := m[d.Group]; !ok {
				m[d.Group] = Names(d.Group, false)
			}
		}
		return m
	}()
)

// Names lists the catalogue's names as CSV rows write them (a wheel signal
// once per wheel: wheelSpeedFL…RR), of one class or all (""), and only
// those BeamNG applies as signalFrom rows when from is set.
func Names(class string, from bool) []string {
	var names []string
	for _, d := range defs {
		if class != "" && d.Group != class || from && !d.From {
			continue
		}
		if d.Group == "Wheels" {
			for _, w := range beamng.Wheels {
				names = append(names, d.Name+w)
			}
			continue
		}
		names = append(names, d.Name)
	}
	return names
}

// SendSkips is the physics steps BeamNG skips between sends for this CSV.
func (f *File) SendSkips(physicsDt float64) int { return SendSkips(f.Time.Value, physicsDt) }

// Period is the send period BeamNG will really use for this CSV.
func (f *File) Period(physicsDt float64) float64 { return Period(f.Time.Value, physicsDt) }

// Unanswered is how many messages BeamNG lets be in flight for this CSV.
func (f *File) Unanswered() int { return Unanswered(f.Ping.Value, f.Time.Value) }

// Layout is the message layout the CSV defines: 1 + signalTo rows from
// BeamNG, 1 + signalFrom rows to it, in file order.
func (f *File) Layout() *beamng.Layout {
	sig := func(r Row) beamng.Signal {
		s := beamng.Signal{Group: r.Group, Name: r.Name, Line: r.Line, Ref: fmt.Sprintf("line %d", r.Line), Desc: r.Desc}
		if def, wheel, ok := Lookup(r.Group, r.Name); ok {
			s.Unit, s.Meaning = def.Unit, def.meaning(wheel)
			if s.Desc == "" {
				s.Desc = def.Desc
			}
		}
		return s
	}
	to := make([]beamng.Signal, len(f.To))
	for i, r := range f.To {
		to[i] = sig(r)
	}
	from := make([]beamng.Signal, len(f.From))
	for i, r := range f.From {
		from[i] = sig(r)
		from[i].Kind = r.Value
		if r.Value != "value" {
			from[i].Meaning = "" // a multiply row is not the quantity itself
		}
	}
	// BeamNG's signalTo rows travel from BeamNG; its signalFrom rows to it.
	return beamng.NewLayout(f.Path, to, from)
}
