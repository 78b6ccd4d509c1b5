package mdf

import (
	"fmt"
	"math"
	"os"
	"slices"

	"strconv"
	"strings"

	"beamconnect/recording"
)

// openSource reads a recording beamconnect wrote as MDF 4 the way a CSV
// recording is read: a header per layout (and one more at every reload, as
// the CSV writes), then a row per message, in time order. With several
// vehicles each row is one vehicle's message; the other vehicles' columns
// hold their latest values (NaN before their first message).
func openSource(path string) (recording.Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if _, err := Read(f, st.Size(), path); err != nil {
		return nil, err
	}
	return func(onHeader func(*recording.Header) error, onRow func(*recording.Header, *recording.Row) error) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		mf, err := Read(f, st.Size(), path)
		if err != nil {
			return err
		}
		return scan(mf, onHeader, onRow)
	}, nil
}

// segment is the groups of one layout: a vehicle's pair of groups each.
type segment struct {
	vehicles []string
	from, to []*GroupInfo
}

// segments splits a file's groups into layouts: a layout's groups come
// together, each vehicle's "from BeamNG" then "to BeamNG"; the next
// layout starts where a vehicle's group comes again.
func segments(f *File) ([]*segment, error) {
	var segs []*segment
	var cur *segment
	for _, g := range f.Groups {
		v, from, ok := groupName(g.Name)
		if !ok {
			return nil, &readError{f.Name, g.at, fmt.Sprintf("channel group %q: not a beamconnect recording's (expected %q or %q, with several vehicles %q)", g.Name, fromName, toName, "ego: "+fromName)}
		}
		i := -1
		if cur != nil {
			i = slices.Index(cur.vehicles, v)
		}
		if cur == nil || i >= 0 && (from && cur.from[i] != nil || !from && cur.to[i] != nil) {
			cur = &segment{}
			segs = append(segs, cur)
			i = -1
		}
		if i < 0 {
			cur.vehicles = append(cur.vehicles, v)
			cur.from, cur.to = append(cur.from, nil), append(cur.to, nil)
			i = len(cur.vehicles) - 1
		}
		if from {
			cur.from[i] = g
		} else {
			cur.to[i] = g
		}
	}
	for _, s := range segs {
		for i, v := range s.vehicles {
			if s.from[i] == nil || s.to[i] == nil {
				return nil, &readError{f.Name, -1, fmt.Sprintf("vehicle %q has a channel group %q but not %q", v, pick(s.from[i] == nil, toName, fromName), pick(s.from[i] == nil, fromName, toName))}
			}
		}
	}
	return segs, nil
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

// groupName takes a group's name apart: "ego: from BeamNG" is vehicle
// ego, from BeamNG.
func groupName(name string) (vehicle string, from bool, ok bool) {
	for _, dir := range []string{fromName, toName} {
		if name == dir {
			return "", dir == fromName, true
		}
		if v, ok := strings.CutSuffix(name, ": "+dir); ok {
			return v, dir == fromName, true
		}
	}
	return "", false, false
}

// source is where a column's value comes from: a channel of a vehicle's
// group; for a row's own columns (status, id…), the channel of each
// vehicle's group (own).
type source struct {
	vehicle int
	from    bool
	ch      *ChannelInfo
	own     []*ChannelInfo
}

func scan(f *File, onHeader func(*recording.Header) error, onRow func(*recording.Header, *recording.Row) error) error {
	segs, err := segments(f)
	if err != nil {
		return err
	}
	line := 0
	for _, s := range segs {
		cols, units, srcs := columns(s)
		h := recording.NewHeader(cols, units)
		if err := onHeader(h); err != nil {
			return err
		}
		// The cursors, and each vehicle's next row time.
		type next struct {
			from, to *recordCursor
			time     *ChannelInfo
			t        float64
			rf, rt   []byte
		}
		vs := make([]*next, len(s.vehicles))
		for i := range s.vehicles {
			g := s.from[i]
			if len(g.Channels) == 0 || !g.Channels[0].Master || g.Channels[0].Unsupported != "" {
				return &readError{f.Name, g.at, fmt.Sprintf("channel group %q has no time channel", g.Name)}
			}
			vs[i] = &next{from: f.cursor(g), to: f.cursor(s.to[i]), time: g.Channels[0]}
		}
		advance := func(n *next) error {
			rf, err := n.from.Next()
			if err != nil {
				return err
			}
			rt, err := n.to.Next()
			if err != nil {
				return err
			}
			n.rf, n.rt = rf, rt
			n.t = math.Inf(1)
			if rf != nil && rt != nil {
				n.t = n.time.Value(rf)
			}
			return nil
		}
		for _, n := range vs {
			if err := advance(n); err != nil {
				return err
			}
		}
		row := &recording.Row{Values: make([]float64, len(cols))}
		for i := range row.Values {
			row.Values[i] = math.NaN()
		}
		for {
			best := -1
			for i, n := range vs {
				if n.rf != nil && n.rt != nil && (best < 0 || n.t < vs[best].t) {
					best = i
				}
			}
			if best < 0 {
				break
			}
			n := vs[best]
			row.Values[0] = n.t
			for i, src := range srcs {
				ch := src.ch
				if src.own != nil {
					ch = src.own[best]
				} else if src.vehicle != best {
					continue
				}
				if ch == nil {
					continue
				}
				rec := n.rt
				if src.from {
					rec = n.rf
				}
				row.Values[i] = ch.Value(rec)
			}
			if len(s.vehicles) > 1 {
				row.Vehicle = s.vehicles[best]
			}
			line++
			row.Line = line
			if err := onRow(h, row); err != nil {
				return err
			}
			if err := advance(n); err != nil {
				return err
			}
		}
	}
	if len(segs) == 0 {
		return &readError{f.Name, -1, "no channel groups: expected a recording's"}
	}
	return nil
}

// columns lays a segment's channels out as a CSV recording's columns, with
// their units: time, the vehicle (several), status, id, reply_id, reloads,
// local_time (a file from before it was recorded has none), the output
// ports' values (by port, then vehicle), the directive, the input ports',
// the setpoints of beamng.quality's loops, then the model's variables.
// A row's own columns come from the row's vehicle's groups (vehicle -1).
func columns(s *segment) ([]string, []string, []source) {
	several := len(s.vehicles) > 1
	cols := []string{"time"}
	units := []string{""}
	srcs := []source{{vehicle: -1}}
	if several {
		cols = append(cols, "vehicle")
		units = append(units, "")
		srcs = append(srcs, source{vehicle: -1})
	}
	// own adds a column of the row's vehicle's groups; optional ones only
	// when a group has it.
	own := func(name string, from, optional bool) {
		src := source{vehicle: -1, from: from, own: make([]*ChannelInfo, len(s.vehicles))}
		unit, found := "", false
		for v := range s.vehicles {
			g := s.to[v]
			if from {
				g = s.from[v]
			}
			for _, c := range g.Channels {
				if c.Name == name && !c.Master {
					src.own[v], unit, found = c, c.Unit, true
				}
			}
		}
		if optional && !found {
			return
		}
		cols = append(cols, name)
		units = append(units, unit)
		srcs = append(srcs, src)
	}
	own("status", true, false)
	own("id", true, false)
	own("reply_id", false, false)
	own("reloads", true, false)
	own("local_time", true, true)
	type field struct {
		port, vehicle, order int
		src                  source
		name                 string
	}
	fields := func(from, setpoints bool) {
		var list []field
		for v := range s.vehicles {
			g := s.to[v]
			if from {
				g = s.from[v]
			}
			for i, c := range g.Channels {
				if c.Master || isOwn(c.Name) || strings.HasPrefix(c.Name, recording.ModelPrefix) || strings.HasPrefix(c.Name, recording.SetpointPrefix) != setpoints {
					continue
				}
				list = append(list, field{port: portNumber(c.Name), vehicle: v, order: i, src: source{vehicle: v, from: from, ch: c}, name: c.Name})
			}
		}
		slices.SortStableFunc(list, func(a, b field) int {
			if a.port != b.port {
				return a.port - b.port
			}
			if a.vehicle != b.vehicle {
				return a.vehicle - b.vehicle
			}
			return a.order - b.order
		})
		for _, f := range list {
			cols = append(cols, f.name)
			units = append(units, f.src.ch.Unit)
			srcs = append(srcs, f.src)
		}
	}
	fields(true, false)
	own("directive", false, false)
	fields(false, false)
	fields(true, true)
	// The model's variables: in every vehicle's group to BeamNG, in the
	// first vehicle's order.
	var model []string
	for v := range s.vehicles {
		for _, c := range s.to[v].Channels {
			if strings.HasPrefix(c.Name, recording.ModelPrefix) && !slices.Contains(model, c.Name) {
				model = append(model, c.Name)
			}
		}
	}
	for _, name := range model {
		own(name, false, false)
	}
	// The units a column's name implies are not repeated.
	h := recording.NewHeader(cols, nil)
	l := recording.LayoutOfHeader(h)
	for i := range units {
		if units[i] == l.ImpliedUnit(&l.Columns[i]) {
			units[i] = ""
		}
	}
	return cols, units, srcs
}

func isOwn(name string) bool {
	switch name {
	case "status", "id", "reply_id", "reloads", "local_time", "directive":
		return true
	}
	return false
}

// portNumber is the number of a column's port: 3 for out3.rpm.
func portNumber(name string) int {
	p, _, _ := strings.Cut(name, ".")
	p = strings.TrimPrefix(strings.TrimPrefix(p, "out"), "in")
	n, err := strconv.Atoi(p)
	if err != nil {
		return math.MaxInt
	}
	return n
}
