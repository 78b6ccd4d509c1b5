package mdf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"beamconnect/recording"
)

// A recording in MDF 4: per vehicle two channel groups, "from BeamNG"
// (time, status, BeamNG's message id, the reload count, the local time,
// the output ports' values) and "to BeamNG" (time, the reply id, the
// directive, the input ports' values, the model's variables), each channel
// named as the CSV's column, with its unit and what it is; several
// vehicles' groups are named "ego: from BeamNG". The master channel "time"
// is BeamNG's simulation time of the message.
// A reload that changes the columns starts new groups. Reloads, model
// faults, status changes and live diagnoses are events; the config run is
// attached.

// programID is the ID block's program identifier of beamconnect's files.
const programID = "beamconn"

// Group names: "from BeamNG", or "ego: from BeamNG" with several vehicles.
const (
	fromName = "from BeamNG"
	toName   = "to BeamNG"
)

// Format is MDF 4 as a recording format: register it with
// recording.Register to record, convert and plot MDF files.
var Format = &recording.Format{
	Name:     "mdf",
	Exts:     []string{".mf4", ".mdf"},
	Is:       isRecording,
	Seekable: true,
	Create: func(f *os.File, o recording.Options) (recording.Writer, error) {
		return NewRecording(f, o)
	},
	Open:   openSource,
	Events: Events,
}

// Event names beamconnect gives the events whose kind is not in their
// name alone.
const (
	lostName   = "recording lost rows"
	faultsName = "run ended with faults"
)

// Events reads the events of a recording beamconnect wrote, each with its
// kind as the recorder gave it.
func Events(path string) ([]recording.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	mf, err := Read(f, st.Size(), path)
	if err != nil {
		return nil, err
	}
	var out []recording.Event
	for _, e := range mf.Events {
		ev := recording.Event{Time: e.Time, Vehicle: -1, Name: e.Name, Text: e.Comment}
		switch {
		case e.Name == "reload":
			ev.Kind = recording.Reload
		case e.Name == lostName:
			ev.Kind = recording.Lost
		case e.Name == faultsName:
			ev.Kind = recording.Faults
		case e.Cause == causeError && e.Range == End:
			ev.Kind = recording.FaultEnd
		case e.Cause == causeError && e.Range == Begin:
			ev.Kind = recording.FaultBegin
		case e.Cause == causeError:
			ev.Kind = recording.Diagnosis
		default:
			ev.Kind = recording.StatusChange
		}
		out = append(out, ev)
	}
	return out, nil
}

// isRecording reports whether a file starting with head is an MDF 4 file
// beamconnect wrote.
func isRecording(head []byte) bool {
	return len(head) >= 24 && (bytes.HasPrefix(head, []byte("MDF     ")) || bytes.HasPrefix(head, []byte("UnFinMF "))) &&
		string(head[16:24]) == programID
}

// Recording writes a recording as MDF 4 (recording.Writer).
type Recording struct {
	w *writer

	// The message path's side: the layout rows are encoded for.
	cur *layout
	// Layouts handed from the message path to the writer's side.
	mu      sync.Mutex
	handed  map[uint32]*layout
	nextID  uint32
	written *layout // the writer's side: the layout whose groups rows go to

	faults  *event // the model fault in force (its Begin event)
	lost    *event // the event saying rows were lost: written at Close whatever the disk says
	configs map[string]*attachment
}

// layout is where a row's values go: per vehicle a record of each group.
type layout struct {
	cols   *recording.Layout
	groups []vehicleGroups
	first  int // the writer's index of the first group (writer side)
}

type vehicleGroups struct {
	from, to groupSpec
	fromCols []cell // the row's columns each channel takes, in order
	toCols   []cell
}

type cell struct {
	col int
	typ dataType
}

// Buffer entries: a header (a layout's id) or a row (the vehicle, then
// its records).
const (
	tagHeader = 'H'
	tagRow    = 'R'
)

// NewRecording starts an MDF 4 recording in f: the header, with the
// config attached.
func NewRecording(f Output, o recording.Options) (*Recording, error) {
	var atts []*attachment
	r := &Recording{handed: map[uint32]*layout{}, configs: map[string]*attachment{}}
	if o.Config != nil {
		atts = append(atts, r.config(o.ConfigName, o.Config, "the config the run started with"))
	}
	for _, nf := range o.Files {
		atts = append(atts, &attachment{Name: nf.Name, MIME: mimeOf(nf.Name), Comment: "a file the config names", Data: nf.Data})
	}
	comment := "beamconnect recording"
	var props [][2]string
	if o.ConfigName != "" {
		comment += " of " + o.ConfigName
		props = append(props, [2]string{"config", o.ConfigName})
	}
	comment += ": per vehicle a channel group from BeamNG and one to BeamNG, a sample per message; reloads, faults, status changes and diagnoses as events"
	if o.Config != nil {
		comment += "; the config attached"
	}
	w, err := newWriter(f, writeOptions{Start: o.Start, Program: programID, Tool: "beamconnect", Version: o.Version,
		Comment: comment, Properties: props}, atts...)
	if err != nil {
		return nil, err
	}
	r.w = w
	return r, nil
}

// config is the attachment of a config's text, one per text.
func (r *Recording) config(name string, data []byte, comment string) *attachment {
	if a, ok := r.configs[string(data)]; ok {
		return a
	}
	if name == "" {
		name = "config.json"
	}
	a := &attachment{Name: filepath.Base(name), MIME: "application/json", Comment: comment, Data: data}
	r.configs[string(data)] = a
	return a
}

func mimeOf(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return "application/json"
	case ".csv":
		return "text/csv"
	}
	return "application/octet-stream"
}

// Header lays out the groups of l's columns and hands them to the
// writer's side.
func (r *Recording) Header(buf []byte, l *recording.Layout) []byte {
	lay := newLayout(l)
	r.cur = lay
	r.mu.Lock()
	id := r.nextID
	r.nextID++
	r.handed[id] = lay
	r.mu.Unlock()
	return binary.LittleEndian.AppendUint32(append(buf, tagHeader), id)
}

func newLayout(l *recording.Layout) *layout {
	lay := &layout{cols: l}
	n := max(1, len(l.Vehicles))
	for v := range n {
		prefix := ""
		if l.Several() {
			prefix = l.Vehicles[v] + ": "
		}
		g := vehicleGroups{
			from: groupSpec{Name: prefix + fromName, Comment: "what BeamNG sent, and the connection status, a sample per message"},
			to:   groupSpec{Name: prefix + toName, Comment: "what beamconnect replied, and the model's own variables, a sample per message"},
		}
		for i, c := range l.Columns {
			mine := c.Role == recording.Own || c.Role == recording.Model || (c.Role == recording.Field || c.Role == recording.Setpoint) && (c.Vehicle == v || !l.Several())
			if !mine {
				continue
			}
			ch := channelSpec{Name: c.Name, Unit: c.Unit, Comment: c.Comment, Type: typeFloat64}
			switch c.Name {
			case "status":
				if c.Role == recording.Own {
					ch.Type, ch.Texts = typeUint8, statusTexts
				}
			case "reloads":
				if c.Role == recording.Own {
					ch.Type = typeUint32
				}
			case "directive":
				if c.Role == recording.Own {
					ch.Texts, ch.Default = []ValueText{{0, "disconnect"}}, "connect"
				}
			}
			if c.Out {
				g.from.Channels = append(g.from.Channels, ch)
				g.fromCols = append(g.fromCols, cell{i, ch.Type})
			} else {
				g.to.Channels = append(g.to.Channels, ch)
				g.toCols = append(g.toCols, cell{i, ch.Type})
			}
		}
		lay.groups = append(lay.groups, g)
	}
	return lay
}

var statusTexts = []ValueText{{0, "unknown"}, {1, "unconnected"}, {2, "connecting"}, {3, "connected"}, {4, "error"}, {5, "disconnecting"}}

// Row encodes a row's two records. It allocates nothing.
func (r *Recording) Row(buf []byte, vehicle int, values []float64) []byte {
	g := &r.cur.groups[vehicle]
	buf = append(buf, tagRow, byte(vehicle), byte(vehicle>>8))
	buf = record(buf, values[0], g.fromCols, values)
	return record(buf, values[0], g.toCols, values)
}

func record(b []byte, t float64, cells []cell, values []float64) []byte {
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(t))
	for _, c := range cells {
		v := values[c.col]
		switch c.typ {
		case typeUint8:
			b = append(b, byte(clamp(v, math.MaxUint8)))
		case typeUint32:
			b = binary.LittleEndian.AppendUint32(b, uint32(clamp(v, math.MaxUint32)))
		default:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	}
	return b
}

// clamp is v as a whole number from 0 to most (NaN: 0).
func clamp(v float64, most float64) float64 {
	if !(v >= 0) {
		return 0
	}
	return min(v, most)
}

// Write writes the rows and events encoded since the last Write, and
// flushes: on return what it wrote is linked into the file.
func (r *Recording) Write(buf []byte, events []recording.Event) (written, lost int64, err error) {
	var rows int64
	before := r.linked()
	for len(buf) > 0 {
		switch buf[0] {
		case tagHeader:
			id := binary.LittleEndian.Uint32(buf[1:])
			buf = buf[5:]
			r.mu.Lock()
			lay := r.handed[id]
			delete(r.handed, id)
			r.mu.Unlock()
			r.switchTo(lay)
		case tagRow:
			v := int(buf[1]) | int(buf[2])<<8
			buf = buf[3:]
			g := r.written.first + 2*v
			n := r.w.RecordSize(g)
			r.w.Append(g, buf[:n])
			buf = buf[n:]
			m := r.w.RecordSize(g + 1)
			r.w.Append(g+1, buf[:m])
			buf = buf[m:]
			rows++
		default:
			return 0, rows, fmt.Errorf("mdf: recording buffer damaged (entry %q)", buf[0])
		}
	}
	for i := range events {
		r.event(&events[i])
	}
	err = r.w.Flush()
	written = r.linked() - before
	return written, rows - written, err
}

// linked counts the rows in the file: the records of the groups from
// BeamNG.
func (r *Recording) linked() int64 {
	var n int64
	for g := 0; g < len(r.w.groups); g += 2 {
		c, _ := r.w.Records(g)
		n += int64(c)
	}
	return n
}

// switchTo sends the rows that follow to lay's groups: the current ones
// when its columns are the same, new ones when a reload changed them.
func (r *Recording) switchTo(lay *layout) {
	if r.written != nil && r.written.cols.Equal(lay.cols) {
		lay.first = r.written.first
		r.written = lay
		return
	}
	for i, g := range lay.groups {
		first := r.w.AddGroups(g.from, g.to)
		if i == 0 {
			lay.first = first
		}
	}
	r.written = lay
}

// event queues a run's event as an EV block: scoped to its vehicle's
// groups, a fault as a range from its beginning to the model's recovery,
// a reload referring to the config it applied.
func (r *Recording) event(e *recording.Event) {
	ev := &event{Name: e.Name, Comment: e.Text, Time: e.Time, Type: eventMarker, Cause: causeTool}
	if e.Vehicle >= 0 && r.written != nil && e.Vehicle < len(r.written.groups) {
		ev.Scope = []int{r.written.first + 2*e.Vehicle, r.written.first + 2*e.Vehicle + 1}
	}
	switch e.Kind {
	case recording.Reload:
		ev.Cause = causeUser
		if e.Config != nil {
			a := r.config("", e.Config, "the config applied by a reload")
			if a.at == 0 {
				r.w.Attach(a)
			}
			ev.Attachments = []*attachment{a}
		}
	case recording.FaultBegin:
		if r.faults != nil { // a fault that changed: the first one's range ends
			r.w.AddEvent(&event{Name: r.faults.Name, Comment: "the fault changed", Time: e.Time, Type: eventMarker, Cause: causeError, Range: End, BeginOf: r.faults})
		}
		ev.Cause, ev.Range = causeError, Begin
		r.faults = ev
	case recording.FaultEnd:
		ev.Cause, ev.Range = causeError, End
		if r.faults != nil {
			ev.Name, ev.BeginOf = r.faults.Name, r.faults
		}
		r.faults = nil
	case recording.Diagnosis:
		ev.Cause = causeError
	case recording.Lost:
		ev.Cause, ev.Name = causeError, lostName
		r.lost = ev
	case recording.Faults:
		ev.Cause, ev.Name = causeError, faultsName
	}
	r.w.AddEvent(ev)
}

// Close finalizes the file. When the event saying rows were lost could not
// be written (the disk is still full), it goes into the room kept for it:
// the file says it is not the whole run.
func (r *Recording) Close() error {
	err := r.w.Close()
	if r.lost != nil && r.lost.at == 0 {
		if serr := r.w.Salvage(r.lost); serr != nil {
			err = errors.Join(err, fmt.Errorf("mdf: the event saying rows were lost: %w", serr))
		}
	}
	return err
}
