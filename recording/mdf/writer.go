package mdf

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// channelSpec is one channel of a group, after the group's master channel.
type channelSpec struct {
	Name    string
	Unit    string
	Comment string
	Type    dataType
	// Texts, when set, is a value-to-text conversion (VTAB): a reader shows
	// Default (may be "") for values not listed.
	Texts   []ValueText
	Default string
}

// ValueText names one value of a channel.
type ValueText struct {
	Value float64
	Text  string
}

// groupSpec is a channel group in a data group of its own (a sorted file):
// its master channel "time" (seconds, float64, sync type time) comes first
// in every record, then Channels in order.
type groupSpec struct {
	Name     string // the acquisition name readers show
	Comment  string
	Channels []channelSpec
}

// RecordSize is the bytes of one record of the group: the time and every
// channel's value, packed.
func (g *groupSpec) RecordSize() int {
	n := 8
	for _, c := range g.Channels {
		n += c.Type.Size()
	}
	return n
}

// attachment is a file embedded in the MDF file (an AT block).
type attachment struct {
	Name    string // the file name it had
	MIME    string // "application/json"
	Comment string
	Data    []byte
	at      int64
}

// Event types, causes and ranges, with the standard's codes.
type (
	EventType  uint8
	EventCause uint8
	EventRange uint8
)

const (
	eventTrigger EventType = 5
	eventMarker  EventType = 6

	causeOther EventCause = 0
	causeError EventCause = 1
	causeTool  EventCause = 2
	causeUser  EventCause = 4

	rangePoint EventRange = 0
	Begin      EventRange = 1
	End        EventRange = 2
)

// event is an EV block: something that happened at Time (seconds on the
// groups' time base), with a scope (groups it concerns; none: the whole
// file), a range (a begin and its end), and attachments it refers to.
type event struct {
	Name    string
	Comment string
	Time    float64
	Type    EventType
	Cause   EventCause
	Range   EventRange
	// BeginOf is, for an End event, the Begin event it closes.
	BeginOf     *event
	Scope       []int // group indices
	Attachments []*attachment
	at          int64
}

// writeOptions describe the file as a whole.
type writeOptions struct {
	Start   time.Time // the absolute time of time 0, written as UTC
	Program string    // id_prog: the writing program in 8 characters
	Tool    string    // the file history's tool_id, tool_vendor
	Version string    // the file history's tool_version
	Comment string    // the header's comment (plain text)
	// Properties are name/value pairs in the header's comment.
	Properties [][2]string
}

// Output is what a recording is written to: a regular file, written in place.
type Output interface {
	io.WriterAt
	Truncate(size int64) error
}

// writer streams an MDF 4.1 file: groups, records, events and attachments
// are queued and written by Flush, the data in a DT block per group per
// Flush chained by DL blocks; the file is unfinalized until Close.
//
// The file is consistent after every Flush: new blocks are written past
// its end in one write, then linked in, one link at a time, each link
// reachable only when everything it points at is on disk; the cycle counts
// are raised after the data they count is linked. A write that fails (a
// full disk) is cut off the file again; what it held is lost and said so.
// A writer is not safe for concurrent use.
type writer struct {
	f       Output
	end     int64 // bytes of the file
	groups  []*group
	lastDG  int64 // the last DG in the file's chain (0: none)
	lastEV  int64
	lastAT  int64
	events  []*event
	attach  []*attachment
	out     builder
	patches []patch
	texts   map[string]int64 // TX and CC blocks in the file, by content
	program string
	closed  bool
	// spare is where the room kept after the header starts (0: used):
	// zeros no block links to, for the one event a full disk must not keep
	// out of the file, the one saying that rows were lost (Salvage).
	spare int64
}

// spareSize is the room kept for Salvage: an event, its name and a
// comment of up to about 1.8 KiB.
const spareSize = 2048

type group struct {
	groupSpec
	size    int
	dg, cg  int64  // the blocks in the file (0: not yet)
	pending []byte // records waiting for Flush
	lastDL  int64  // the last DL of the group's chain (0: none yet)
	bytes   uint64 // data bytes linked
	cycles  uint64 // records linked
	lost    int64  // records lost to failed writes
}

// patch is a link or a count written in place once new blocks are on
// disk: done when it was, fail when it could not be.
type patch struct {
	at         int64
	val        uint64
	done, fail func()
}

// newWriter writes the ID, header and file history blocks to f, and the
// attachments given, and marks the file unfinalized.
func newWriter(f Output, o writeOptions, attachments ...*attachment) (*writer, error) {
	if len(o.Program) > 8 {
		o.Program = o.Program[:8]
	}
	w := &writer{f: f, texts: map[string]int64{}, program: o.Program}
	b := &w.out
	b.buf = append(b.buf[:0], w.id(false)...)
	hd := b.block("HD", hdLinks, hdSize)
	d := b.data(hd, hdLinks)
	if o.Start.IsZero() {
		o.Start = time.Now()
	}
	binary.LittleEndian.PutUint64(d, uint64(o.Start.UnixNano())) // hd_start_time_ns, UTC (hd_time_flags 0)
	fh := b.block("FH", 2, fhSize)
	binary.LittleEndian.PutUint64(b.data(fh, 2), uint64(o.Start.UnixNano()))
	tool := xmlText(o.Tool)
	b.link(fh, 1, b.text("MD", "<FHcomment><TX>created</TX><tool_id>"+tool+"</tool_id><tool_vendor>"+tool+
		"</tool_vendor><tool_version>"+xmlText(o.Version)+"</tool_version></FHcomment>"))
	b.link(hd, 1, fh)
	var props strings.Builder
	for _, p := range o.Properties {
		fmt.Fprintf(&props, `<e name="%s">%s</e>`, xmlText(p[0]), xmlText(p[1]))
	}
	comment := "<HDcomment><TX>" + xmlText(o.Comment) + "</TX>"
	if props.Len() > 0 {
		comment += "<common_properties>" + props.String() + "</common_properties>"
	}
	b.link(hd, 5, b.text("MD", comment+"</HDcomment>"))
	b.pad()
	w.spare = int64(len(b.buf))
	b.buf = append(b.buf, make([]byte, spareSize)...)
	if _, err := f.WriteAt(b.buf, 0); err != nil {
		return nil, fmt.Errorf("mdf: writing the header: %w", err)
	}
	w.end = int64(len(b.buf))
	if err := f.Truncate(w.end); err != nil { // an earlier file's tail
		return nil, fmt.Errorf("mdf: %w", err)
	}
	w.attach = attachments
	return w, nil
}

// id is the ID block, unfinalized or finalized.
func (w *writer) id(final bool) []byte {
	b := make([]byte, idSize)
	copy(b, "UnFinMF ")
	binary.LittleEndian.PutUint16(b[idUnfinAt:], unfinCycleCounts)
	if final {
		copy(b, "MDF     ")
		binary.LittleEndian.PutUint16(b[idUnfinAt:], 0)
	}
	copy(b[8:], versionText)
	copy(b[16:24], w.program+"        ")
	binary.LittleEndian.PutUint16(b[28:], version)
	return b
}

// AddGroups adds channel groups, each in a data group of its own, written
// at the next Flush, and returns the index of the first.
func (w *writer) AddGroups(gs ...groupSpec) int {
	first := len(w.groups)
	for _, g := range gs {
		w.groups = append(w.groups, &group{groupSpec: g, size: g.RecordSize()})
	}
	return first
}

// Group is group i as added.
func (w *writer) Group(i int) *groupSpec { return &w.groups[i].groupSpec }

// RecordSize is the bytes of a record of group i.
func (w *writer) RecordSize(i int) int { return w.groups[i].size }

// Append queues a record of group g: RecordSize bytes, the time first.
func (w *writer) Append(g int, record []byte) {
	gr := w.groups[g]
	gr.pending = append(gr.pending, record...)
}

// Records is how many records of group g are in the file, and how many
// were lost to failed writes.
func (w *writer) Records(g int) (linked uint64, lost int64) {
	return w.groups[g].cycles, w.groups[g].lost
}

// AddEvent queues an event, written at the next Flush.
func (w *writer) AddEvent(e *event) { w.events = append(w.events, e) }

// Attach queues an attachment, written at the next Flush.
// An attachment in the file or queued already is not added again.
func (w *writer) Attach(a *attachment) {
	if a.at == 0 && !slices.Contains(w.attach, a) {
		w.attach = append(w.attach, a)
	}
}

// Flush writes what is queued and links it into the file.
func (w *writer) Flush() error {
	if w.closed {
		return errors.New("mdf: the writer is closed")
	}
	b := &w.out
	b.base, b.buf = w.end, b.buf[:0]
	w.patches = w.patches[:0]
	w.attachments()
	w.metadata()
	w.data()
	w.eventBlocks()
	if len(b.buf) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(b.buf, w.end); err != nil {
		w.f.Truncate(w.end)
		for k, at := range w.texts {
			if at >= w.end {
				delete(w.texts, k)
			}
		}
		w.unlinked(w.patches)
		return err
	}
	w.end += int64(len(b.buf))
	var tmp [8]byte
	for i, p := range w.patches {
		binary.LittleEndian.PutUint64(tmp[:], p.val)
		if _, err := w.f.WriteAt(tmp[:], p.at); err != nil {
			// The blocks past this link stay unreachable: the file is as
			// the links before it made it.
			w.unlinked(w.patches[i:])
			return err
		}
		p.done()
	}
	return nil
}

// unlinked forgets what the patches not applied would have linked.
func (w *writer) unlinked(rest []patch) {
	for _, p := range rest {
		if p.fail != nil {
			p.fail()
		}
	}
}

// link chains the new blocks (laid out in this Flush) one to the next at
// link index next, and patches the first in after prev (or at first, the
// header's link, when prev is 0).
func (w *writer) link(blocks []int64, next int, prev, first int64, done, fail func()) {
	if len(blocks) == 0 {
		return
	}
	for i := 1; i < len(blocks); i++ {
		w.out.link(blocks[i-1], next, blocks[i])
	}
	at := first
	if prev != 0 {
		at = prev + headerSize + 8*int64(next)
	}
	w.patches = append(w.patches, patch{at: at, val: uint64(blocks[0]), done: done, fail: fail})
}

// attachments lays out the queued attachments.
func (w *writer) attachments() {
	b := &w.out
	var new []int64
	list := w.attach
	for _, a := range list {
		at := b.block("AT", atLinks, headerSize+atLinks*8+40+len(a.Data))
		d := b.data(at, atLinks)
		binary.LittleEndian.PutUint16(d, 1|4) // embedded, MD5 valid
		sum := md5.Sum(a.Data)
		copy(d[8:24], sum[:])
		binary.LittleEndian.PutUint64(d[24:], uint64(len(a.Data)))
		binary.LittleEndian.PutUint64(d[32:], uint64(len(a.Data)))
		copy(d[40:], a.Data)
		b.link(at, 1, b.text("TX", a.Name))
		b.link(at, 2, b.text("TX", a.MIME))
		b.link(at, 3, b.text("TX", a.Comment))
		a.at = at
		new = append(new, at)
	}
	w.attach = nil
	if len(new) > 0 {
		last := new[len(new)-1]
		w.link(new, 0, w.lastAT, hdATFirst, func() { w.lastAT = last }, func() {
			for _, a := range list {
				a.at = 0
			}
		})
	}
}

// metadata lays out the groups not yet in the file.
func (w *writer) metadata() {
	b := &w.out
	var new []int64
	var added []*group
	for _, g := range w.groups {
		if g.dg != 0 {
			continue
		}
		dg := b.block("DG", dgLinks, dgSize)
		cg := b.block("CG", cgLinks, cgSize)
		b.link(dg, 1, cg)
		b.link(cg, 2, w.tx(g.Name))
		b.link(cg, 5, w.tx(g.Comment))
		d := b.data(cg, cgLinks)
		binary.LittleEndian.PutUint32(d[24:], uint32(g.size)) // cg_data_bytes
		cns := make([]int64, 0, len(g.Channels)+1)
		cns = append(cns, w.channel(channelSpec{Name: "time", Unit: "s", Comment: "time on the run's time base, from the header's start time", Type: typeFloat64}, 0, true))
		off := 8
		for _, c := range g.Channels {
			cns = append(cns, w.channel(c, off, false))
			off += c.Type.Size()
		}
		b.link(cg, 1, cns[0])
		for i := 1; i < len(cns); i++ {
			b.link(cns[i-1], 0, cns[i])
		}
		g.dg, g.cg = dg, cg // laid out; linked once the chain's patch is written
		new = append(new, dg)
		added = append(added, g)
	}
	if len(new) > 0 {
		last := new[len(new)-1]
		w.link(new, 0, w.lastDG, hdDGFirst, func() { w.lastDG = last }, func() {
			for _, g := range added {
				g.dg, g.cg = 0, 0 // laid out again at the next Flush
			}
		})
	}
}

// channel lays out a CN block with its texts and conversion.
func (w *writer) channel(c channelSpec, off int, master bool) int64 {
	b := &w.out
	cn := b.block("CN", cnLinks, cnSize)
	d := b.data(cn, cnLinks)
	if master {
		d[0], d[1] = cnMaster, syncTime
	}
	d[2] = c.Type.code()
	binary.LittleEndian.PutUint32(d[4:], uint32(off))
	binary.LittleEndian.PutUint32(d[8:], uint32(8*c.Type.Size()))
	b.link(cn, 2, b.text("TX", c.Name))
	if len(c.Texts) > 0 {
		b.link(cn, 4, w.vtab(c.Texts, c.Default))
	}
	b.link(cn, 6, w.tx(c.Unit))
	b.link(cn, 7, w.tx(c.Comment))
	return cn
}

// tx is a TX block holding s, shared with any other of the same text.
func (w *writer) tx(s string) int64 {
	if s == "" {
		return 0
	}
	if at, ok := w.texts[s]; ok {
		return at
	}
	at := w.out.text("TX", s)
	w.texts[s] = at
	return at
}

// vtab is a value-to-text conversion block, shared by channels alike.
func (w *writer) vtab(texts []ValueText, def string) int64 {
	key := "\x00cc"
	for _, t := range texts {
		key += fmt.Sprintf("\x00%g=%s", t.Value, t.Text)
	}
	key += "\x00" + def
	if at, ok := w.texts[key]; ok {
		return at
	}
	b := &w.out
	n := len(texts)
	cc := b.block("CC", ccLinks+n+1, headerSize+8*(ccLinks+n+1)+24+8*n)
	d := b.data(cc, ccLinks+n+1)
	d[0] = 7 // value to text
	binary.LittleEndian.PutUint16(d[4:], uint16(n+1))
	binary.LittleEndian.PutUint16(d[6:], uint16(n))
	for i, t := range texts {
		putF64(d[24+8*i:], t.Value)
	}
	for i, t := range texts {
		b.link(cc, ccLinks+i, w.tx(t.Text))
	}
	b.link(cc, ccLinks+n, w.tx(def))
	w.texts[key] = cc
	return cc
}

// data lays out each group's queued records: a DT block, and a DL block
// of one entry linked after the group's last; then the group's cycle count
// is raised.
func (w *writer) data() {
	b := &w.out
	for _, g := range w.groups {
		if len(g.pending) == 0 {
			continue
		}
		n := uint64(len(g.pending) / g.size)
		size := uint64(len(g.pending))
		dt := b.header("DT", headerSize+len(g.pending))
		b.buf = append(b.buf, g.pending...)
		b.pad()
		g.pending = g.pending[:0]
		dl := b.block("DL", 2, headerSize+2*8+8+8)
		b.link(dl, 1, dt)
		d := b.data(dl, 2)
		binary.LittleEndian.PutUint32(d[4:], 1) // dl_count; dl_flags 0: offsets follow
		binary.LittleEndian.PutUint64(d[8:], g.bytes)
		lost := func() { g.lost += int64(n) }
		prev, first := g.lastDL, g.dg+dgDataLink
		w.link([]int64{dl}, 0, prev, first, func() { g.lastDL, g.bytes = dl, g.bytes+size }, lost)
		w.patches = append(w.patches, patch{at: g.cg + cgCycles, val: g.cycles + n, done: func() { g.cycles += n }})
	}
}

// eventBlocks lays out the queued events.
func (w *writer) eventBlocks() {
	b := &w.out
	var new []int64
	list := w.events
	for _, e := range list {
		var scope []int64
		for _, g := range e.Scope {
			if g >= 0 && g < len(w.groups) && w.groups[g].cg != 0 {
				scope = append(scope, w.groups[g].cg)
			}
		}
		var refs []int64
		for _, a := range e.Attachments {
			if a.at != 0 {
				refs = append(refs, a.at)
			}
		}
		n := evLinks + len(scope) + len(refs)
		ev := b.block("EV", n, headerSize+8*n+32)
		if e.BeginOf != nil && e.BeginOf.at != 0 {
			b.link(ev, 2, e.BeginOf.at)
		}
		b.link(ev, 3, w.tx(e.Name))
		b.link(ev, 4, b.text("TX", e.Comment))
		for i, s := range scope {
			b.link(ev, evLinks+i, s)
		}
		for i, r := range refs {
			b.link(ev, evLinks+len(scope)+i, r)
		}
		rng := e.Range
		if rng == End && (e.BeginOf == nil || e.BeginOf.at == 0) {
			rng = rangePoint // its beginning was lost (a failed write): no range to end
		}
		d := b.data(ev, n)
		d[0], d[1], d[2], d[3] = byte(e.Type), syncTime, byte(rng), byte(e.Cause)
		binary.LittleEndian.PutUint32(d[8:], uint32(len(scope)))
		binary.LittleEndian.PutUint16(d[12:], uint16(len(refs)))
		binary.LittleEndian.PutUint64(d[16:], uint64(int64(math.Round(e.Time*1e9))))
		putF64(d[24:], 1e-9)
		e.at = ev
		new = append(new, ev)
	}
	w.events = nil
	if len(new) > 0 {
		last := new[len(new)-1]
		w.link(new, 0, w.lastEV, hdEVFirst, func() { w.lastEV = last }, func() {
			for _, e := range list {
				e.at = 0
			}
		})
	}
}

// Salvage writes event e into the room kept after the header, which a
// full disk cannot take, and links it in: for the event that says rows were
// lost when no other write goes through. It works once; e has no scope,
// range or attachments, and a long comment is cut to fit.
func (w *writer) Salvage(e *event) error {
	if w.spare == 0 {
		return errors.New("mdf: the room kept for an event is used")
	}
	b := &w.out
	var ev int64
	for comment := e.Comment; ; comment = comment[:len(comment)*3/4] + "…" {
		b.base, b.buf = w.spare, b.buf[:0]
		ev = b.block("EV", evLinks, headerSize+8*evLinks+32)
		b.link(ev, 3, b.text("TX", e.Name))
		b.link(ev, 4, b.text("TX", comment))
		d := b.data(ev, evLinks)
		d[0], d[1], d[2], d[3] = byte(e.Type), syncTime, byte(rangePoint), byte(e.Cause)
		binary.LittleEndian.PutUint64(d[16:], uint64(int64(math.Round(e.Time*1e9))))
		putF64(d[24:], 1e-9)
		if len(b.buf) <= spareSize || len(comment) < 16 {
			break
		}
	}
	if len(b.buf) > spareSize {
		return errors.New("mdf: the event does not fit the room kept for it")
	}
	if _, err := w.f.WriteAt(b.buf, w.spare); err != nil {
		return err
	}
	at := int64(hdEVFirst)
	if w.lastEV != 0 {
		at = w.lastEV + headerSize // its ev_next
	}
	var tmp [8]byte
	binary.LittleEndian.PutUint64(tmp[:], uint64(ev))
	if _, err := w.f.WriteAt(tmp[:], at); err != nil {
		return err
	}
	w.lastEV, w.spare, e.at = ev, 0, ev
	return nil
}

// Close writes what is queued and finalizes the file: the ID block says
// "MDF" and no update is left to a reader. The File is not closed.
func (w *writer) Close() error {
	if w.closed {
		return nil
	}
	err := w.Flush()
	w.closed = true
	if _, ferr := w.f.WriteAt(w.id(true), 0); ferr != nil {
		return errors.Join(err, fmt.Errorf("mdf: finalizing: %w", ferr))
	}
	return err
}

// xmlText escapes s for an MD block's XML.
func xmlText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		default:
			if r < 0x20 && r != '\n' && r != '\t' {
				continue // XML 1.0 has no other control characters
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
