package mdf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// File is an MDF 4 file's structure as read: the header, every channel
// group with its channels, the events and the attachments. Records are
// read on demand (records), so a file of any length is read in constant
// memory.
type File struct {
	Name      string
	Version   int // 410 for 4.10
	Program   string
	Finalized bool
	Start     time.Time
	Comment   string // the header's comment as written (TX text or MD XML)
	Groups    []*GroupInfo
	Events    []*EventInfo
	// Attachments lists the embedded and referenced files.
	Attachments []*AttachmentInfo

	r    io.ReaderAt
	size int64
	seen map[int64]bool // the DG, CG, CN, EV and AT blocks met: each once
}

// GroupInfo is a channel group (in a sorted data group of its own).
type GroupInfo struct {
	Name, Comment string
	Channels      []*ChannelInfo // the master channel first when it has one
	RecordSize    int
	Cycles        uint64 // records
	at            int64  // the CG block
	data          int64  // the DG's data link
}

// ChannelInfo is one channel.
type ChannelInfo struct {
	Name, Unit, Comment string
	Master              bool
	Offset, Bits        int
	dataType            uint8
	Texts               []ValueText // a value-to-text conversion
	Default             string
	a, b                float64 // a linear conversion: a + b·raw (b 0: none)
	// Unsupported says why the channel's values cannot be read ("" when
	// they can): strings, byte arrays, other conversions.
	Unsupported string
}

// EventInfo is one event.
type EventInfo struct {
	Name, Comment string
	Time          float64 // seconds (for an event synced to time)
	Type          EventType
	Cause         EventCause
	Range         EventRange
	RangeOf       int   // for an End event, the index of its Begin event; -1 when none
	Scope         []int // group indices
	Attachments   []int // attachment indices
	at            int64
}

// AttachmentInfo is one attachment.
type AttachmentInfo struct {
	Name, MIME, Comment string
	Data                []byte // embedded data (nil for a file referenced only)
	at                  int64
}

// readError is a problem at a place in a file.
type readError struct {
	File string
	At   int64 // the offset of the block
	Msg  string
}

func (e *readError) Error() string {
	if e.At < 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s: block at 0x%x: %s", e.File, e.At, e.Msg)
}

// block is one block's header, links and data as read.
type block struct {
	at    int64
	id    string
	links []int64
	data  []byte
}

// maxMeta bounds a metadata block read whole (everything but DT data and
// attachments): a crafted length must not make the reader allocate.
const maxMeta = 16 << 20

// Read reads the structure of an MDF 4 file: strictly, so a broken file is
// an error naming the block and what was expected. Only sorted data groups
// (one channel group each) of uncompressed data are read.
func Read(r io.ReaderAt, size int64, name string) (*File, error) {
	f := &File{Name: name, r: r, size: size, seen: map[int64]bool{}}
	id := make([]byte, idSize)
	if size < idSize+hdSize {
		return nil, &readError{name, -1, fmt.Sprintf("%d bytes: too short for an MDF 4 file (an ID and a header block)", size)}
	}
	if _, err := r.ReadAt(id, 0); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	switch string(id[:8]) {
	case "MDF     ":
		f.Finalized = true
	case "UnFinMF ":
	default:
		return nil, &readError{name, -1, fmt.Sprintf("not an MDF file: it starts %q, expected \"MDF     \" or \"UnFinMF \"", id[:8])}
	}
	f.Version = int(binary.LittleEndian.Uint16(id[28:]))
	if f.Version < 400 || f.Version >= 500 {
		return nil, &readError{name, -1, fmt.Sprintf("MDF version %d: only MDF 4 is read", f.Version)}
	}
	f.Program = strings.TrimRight(string(id[16:24]), " \x00")
	unfin := binary.LittleEndian.Uint16(id[idUnfinAt:])
	if f.Finalized && unfin != 0 {
		return nil, &readError{name, 0, fmt.Sprintf("a finalized file (\"MDF\") with unfinalized flags 0x%x", unfin)}
	}
	if unfin&^(unfinCycleCounts|unfinLastDT) != 0 {
		return nil, &readError{name, 0, fmt.Sprintf("unfinalized flags 0x%x: only the cycle counts and the last DT block's length can be worked out here", unfin)}
	}
	hd, err := f.block(hdAt, "HD", hdLinks, 32)
	if err != nil {
		return nil, err
	}
	f.Start = time.Unix(0, int64(binary.LittleEndian.Uint64(hd.data))).UTC()
	if f.Comment, err = f.text(hd.links[5]); err != nil {
		return nil, err
	}
	if err := f.readGroups(hd.links[0], unfin); err != nil {
		return nil, err
	}
	if err := f.readAttachments(hd.links[3]); err != nil {
		return nil, err
	}
	if err := f.readEvents(hd.links[4]); err != nil {
		return nil, err
	}
	return f, nil
}

// block reads the block at at, which must be a want block with at least
// links links and min bytes of data.
func (f *File) block(at int64, want string, links, min int) (*block, error) {
	if at <= 0 || at%8 != 0 || at+headerSize > f.size {
		return nil, &readError{f.Name, at, fmt.Sprintf("a link to a %s block points outside the file or is not 8-byte aligned", want)}
	}
	var h [headerSize]byte
	if _, err := f.r.ReadAt(h[:], at); err != nil {
		return nil, fmt.Errorf("%s: 0x%x: %w", f.Name, at, err)
	}
	id := string(h[:4])
	if id != "##"+want {
		return nil, &readError{f.Name, at, fmt.Sprintf("expected a %s block, found %q", want, id)}
	}
	length := binary.LittleEndian.Uint64(h[8:])
	n := binary.LittleEndian.Uint64(h[16:])
	if n < uint64(links) || n > maxMeta/8 || length < headerSize+8*n+uint64(min) {
		return nil, &readError{f.Name, at, fmt.Sprintf("%s block of %d bytes with %d links: expected at least %d links and %d bytes of data", want, length, n, links, min)}
	}
	if length > uint64(f.size-at) {
		return nil, &readError{f.Name, at, fmt.Sprintf("%s block of %d bytes ends past the end of the file (%d bytes)", want, length, f.size)}
	}
	if want != "DT" && length > maxMeta && want != "AT" {
		return nil, &readError{f.Name, at, fmt.Sprintf("%s block of %d bytes: larger than any this reader takes", want, length)}
	}
	b := &block{at: at, id: want}
	if want == "DT" {
		b.data = make([]byte, 0) // data read by the record cursor
		b.links = []int64{int64(length - headerSize)}
		return b, nil
	}
	buf := make([]byte, length-headerSize)
	if _, err := f.r.ReadAt(buf, at+headerSize); err != nil {
		return nil, fmt.Errorf("%s: 0x%x: %w", f.Name, at, err)
	}
	for i := range int(n) {
		b.links = append(b.links, int64(binary.LittleEndian.Uint64(buf[8*i:])))
	}
	b.data = buf[8*n:]
	return b, nil
}

// text reads the TX or MD block at at ("" for no link).
func (f *File) text(at int64) (string, error) {
	if at == 0 {
		return "", nil
	}
	if at < 0 || at+4 > f.size {
		return "", &readError{f.Name, at, "a link to a text points outside the file"}
	}
	var id [4]byte
	if _, err := f.r.ReadAt(id[:], at); err != nil {
		return "", fmt.Errorf("%s: 0x%x: %w", f.Name, at, err)
	}
	kind := "TX"
	if string(id[:]) == "##MD" {
		kind = "MD"
	}
	b, err := f.block(at, kind, 0, 0)
	if err != nil {
		return "", err
	}
	if i := bytes.IndexByte(b.data, 0); i >= 0 {
		return string(b.data[:i]), nil
	}
	return "", &readError{f.Name, at, kind + " block without its terminating zero byte"}
}

// chain guards a linked list: a block of the file's structure is met
// once (a list that loops, or two that share a block, would make a reader
// read forever or read the same data twice), and no list is longer than
// the file's blocks can be many.
func (f *File) chain(what string) func(at int64) error {
	limit, n := f.size/headerSize+1, int64(0)
	return func(at int64) error {
		if n++; n > limit {
			return &readError{f.Name, at, "the " + what + " list loops"}
		}
		if what == "DL" {
			return nil // data lists are bounded by their bytes (checkData)
		}
		if f.seen[at] {
			return &readError{f.Name, at, "a " + what + " block linked twice: the " + what + " list loops or shares a block with another"}
		}
		f.seen[at] = true
		return nil
	}
}

func (f *File) readGroups(at int64, unfin uint16) error {
	step := f.chain("DG")
	for at != 0 {
		if err := step(at); err != nil {
			return err
		}
		dg, err := f.block(at, "DG", dgLinks, 1)
		if err != nil {
			return err
		}
		if dg.data[0] != 0 {
			return &readError{f.Name, at, fmt.Sprintf("an unsorted data group (record ids of %d bytes): sort the file first (asammdf, MATLAB's mdfSort)", dg.data[0])}
		}
		if dg.links[1] != 0 {
			g, err := f.readGroup(dg.links[1])
			if err != nil {
				return err
			}
			g.data = dg.links[2]
			if err := f.checkData(g, unfin); err != nil {
				return err
			}
			f.Groups = append(f.Groups, g)
		}
		at = dg.links[0]
	}
	return nil
}

func (f *File) readGroup(at int64) (*GroupInfo, error) {
	if f.seen[at] {
		return nil, &readError{f.Name, at, "a CG block linked twice"}
	}
	f.seen[at] = true
	cg, err := f.block(at, "CG", cgLinks, 32)
	if err != nil {
		return nil, err
	}
	if cg.links[0] != 0 {
		return nil, &readError{f.Name, at, "a data group with several channel groups (unsorted): sort the file first"}
	}
	g := &GroupInfo{at: at, Cycles: binary.LittleEndian.Uint64(cg.data[8:])}
	flags := binary.LittleEndian.Uint16(cg.data[16:])
	if flags&1 != 0 {
		return nil, &readError{f.Name, at, "a channel group of variable-length signal data: not read here"}
	}
	g.RecordSize = int(binary.LittleEndian.Uint32(cg.data[24:])) + int(binary.LittleEndian.Uint32(cg.data[28:]))
	if int64(g.RecordSize) > f.size {
		return nil, &readError{f.Name, at, fmt.Sprintf("records of %d bytes in a file of %d bytes", g.RecordSize, f.size)}
	}
	if g.Name, err = f.text(cg.links[2]); err != nil {
		return nil, err
	}
	if g.Comment, err = f.text(cg.links[5]); err != nil {
		return nil, err
	}
	step := f.chain("CN")
	for cn := cg.links[1]; cn != 0; {
		if err := step(cn); err != nil {
			return nil, err
		}
		c, next, err := f.readChannel(cn, g.RecordSize)
		if err != nil {
			return nil, err
		}
		if c.Master {
			g.Channels = append([]*ChannelInfo{c}, g.Channels...)
		} else {
			g.Channels = append(g.Channels, c)
		}
		cn = next
	}
	return g, nil
}

func (f *File) readChannel(at int64, record int) (*ChannelInfo, int64, error) {
	cn, err := f.block(at, "CN", cnLinks, 72)
	if err != nil {
		return nil, 0, err
	}
	d := cn.data
	c := &ChannelInfo{Master: d[0] == cnMaster || d[0] == 3, dataType: d[2],
		Offset: int(binary.LittleEndian.Uint32(d[4:])), Bits: int(binary.LittleEndian.Uint32(d[8:]))}
	if c.Name, err = f.text(cn.links[2]); err != nil {
		return nil, 0, err
	}
	if c.Unit, err = f.text(cn.links[6]); err != nil {
		return nil, 0, err
	}
	if c.Comment, err = f.text(cn.links[7]); err != nil {
		return nil, 0, err
	}
	switch {
	case d[0] != cnFixed && d[0] != cnMaster:
		c.Unsupported = fmt.Sprintf("channel type %d", d[0])
	case d[3] != 0 || c.Bits%8 != 0:
		c.Unsupported = "values not byte-aligned"
	case !numeric(c.dataType, c.Bits):
		c.Unsupported = fmt.Sprintf("data type %d of %d bits", c.dataType, c.Bits)
	case c.Offset+c.Bits/8 > record:
		return nil, 0, &readError{f.Name, at, fmt.Sprintf("channel %q: bytes %d to %d of a record of %d bytes", c.Name, c.Offset, c.Offset+c.Bits/8, record)}
	}
	if cc := cn.links[4]; cc != 0 {
		if err := f.readConversion(cc, c); err != nil {
			return nil, 0, err
		}
	}
	return c, cn.links[0], nil
}

// numeric reports whether a data type is a little-endian number this
// reader decodes.
func numeric(t uint8, bits int) bool {
	switch t {
	case cnUintLE, cnIntLE:
		return bits == 8 || bits == 16 || bits == 32 || bits == 64
	case cnFloatLE:
		return bits == 32 || bits == 64
	}
	return false
}

func (f *File) readConversion(at int64, c *ChannelInfo) error {
	cc, err := f.block(at, "CC", ccLinks, 24)
	if err != nil {
		return err
	}
	d := cc.data
	refs, vals := int(binary.LittleEndian.Uint16(d[4:])), int(binary.LittleEndian.Uint16(d[6:]))
	if len(cc.links) != ccLinks+refs || len(d) < 24+8*vals {
		return &readError{f.Name, at, fmt.Sprintf("conversion with %d references and %d values in a block of %d links and %d bytes of data", refs, vals, len(cc.links), len(d))}
	}
	val := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(d[24+8*i:])) }
	switch d[0] {
	case 0:
	case 1: // linear
		if vals != 2 {
			return &readError{f.Name, at, fmt.Sprintf("linear conversion with %d values, expected 2", vals)}
		}
		c.a, c.b = val(0), val(1)
	case 7: // value to text
		if refs != vals+1 {
			return &readError{f.Name, at, fmt.Sprintf("value-to-text conversion with %d values and %d references, expected one more reference (the default)", vals, refs)}
		}
		for i := range vals {
			t, err := f.ref(cc.links[ccLinks+i])
			if err != nil {
				return err
			}
			c.Texts = append(c.Texts, ValueText{Value: val(i), Text: t})
		}
		if c.Default, err = f.ref(cc.links[ccLinks+vals]); err != nil {
			return err
		}
	default:
		if c.Unsupported == "" {
			c.Unsupported = fmt.Sprintf("conversion type %d", d[0])
		}
	}
	return nil
}

// ref reads a conversion's reference: a text, or nothing.
func (f *File) ref(at int64) (string, error) {
	if at == 0 {
		return "", nil
	}
	var id [4]byte
	if at < 0 || at+4 > f.size {
		return "", &readError{f.Name, at, "a conversion's reference points outside the file"}
	}
	f.r.ReadAt(id[:], at)
	if string(id[:]) == "##CC" {
		return "", nil // a nested conversion: shown as the number
	}
	return f.text(at)
}

// checkData walks a group's data blocks once and checks that they hold
// its records: as many as cg_cycle_count says in a finalized file; in an
// unfinalized one the count is worked out from the data, as the ID
// block's flags ask.
func (f *File) checkData(g *GroupInfo, unfin uint16) error {
	var total uint64
	blocks := f.dataBlocks(g)
	for {
		_, n, ok, err := blocks()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if total += uint64(n); total > uint64(f.size) {
			// Every block holds bytes of its own: a list that refers to a
			// block twice, or loops, must not make a reader read forever.
			return &readError{f.Name, g.at, fmt.Sprintf("channel group %q: its data blocks hold more bytes than the file: a data list refers to a block twice", g.Name)}
		}
	}
	if g.RecordSize == 0 {
		if total != 0 {
			return &readError{f.Name, g.at, "records of 0 bytes with data"}
		}
		return nil
	}
	if unfin&unfinCycleCounts != 0 {
		if total%uint64(g.RecordSize) != 0 {
			return &readError{f.Name, g.at, fmt.Sprintf("%d bytes of data: not whole records of %d bytes", total, g.RecordSize)}
		}
		g.Cycles = total / uint64(g.RecordSize)
		return nil
	}
	if g.Cycles > total/uint64(g.RecordSize) || total != g.Cycles*uint64(g.RecordSize) {
		return &readError{f.Name, g.at, fmt.Sprintf("channel group %q: %d records of %d bytes, but its data blocks hold %d bytes", g.Name, g.Cycles, g.RecordSize, total)}
	}
	return nil
}

// dataBlocks iterates over the DT blocks of a group: the file offset of
// each one's data and its length.
func (f *File) dataBlocks(g *GroupInfo) func() (at int64, n int64, ok bool, err error) {
	next := g.data
	var list []int64 // the current DL's data links left
	step := f.chain("DL")
	single := false
	return func() (int64, int64, bool, error) {
		for {
			if len(list) > 0 {
				at := list[0]
				list = list[1:]
				if at == 0 {
					continue
				}
				return f.dt(at)
			}
			if next == 0 || single {
				return 0, 0, false, nil
			}
			if err := step(next); err != nil {
				return 0, 0, false, err
			}
			var id [4]byte
			if next < 0 || next+4 > f.size {
				return 0, 0, false, &readError{f.Name, next, "a data link points outside the file"}
			}
			f.r.ReadAt(id[:], next)
			switch string(id[:]) {
			case "##DT":
				single = true
				return f.dt(next)
			case "##DL":
				dl, err := f.block(next, "DL", 1, 8)
				if err != nil {
					return 0, 0, false, err
				}
				count := binary.LittleEndian.Uint32(dl.data[4:])
				if int(count) != len(dl.links)-1 {
					return 0, 0, false, &readError{f.Name, next, fmt.Sprintf("DL block of %d data links says it has %d", len(dl.links)-1, count)}
				}
				list, next = dl.links[1:], dl.links[0]
			case "##DZ":
				return 0, 0, false, &readError{f.Name, next, "compressed data (DZ blocks) is not read here"}
			default:
				return 0, 0, false, &readError{f.Name, next, fmt.Sprintf("expected a DT or DL block for a group's data, found %q", id[:])}
			}
		}
	}
}

// dt is the data of the DT block at at.
func (f *File) dt(at int64) (int64, int64, bool, error) {
	b, err := f.block(at, "DT", 0, 0)
	if err != nil {
		return 0, 0, false, err
	}
	return at + headerSize, b.links[0], true, nil
}

func (f *File) readEvents(at int64) error {
	step := f.chain("EV")
	index := map[int64]int{}
	for at != 0 {
		if err := step(at); err != nil {
			return err
		}
		ev, err := f.block(at, "EV", evLinks, 32)
		if err != nil {
			return err
		}
		d := ev.data
		scope, atts := int(binary.LittleEndian.Uint32(d[8:])), int(binary.LittleEndian.Uint16(d[12:]))
		if len(ev.links) < evLinks+scope+atts {
			return &readError{f.Name, at, fmt.Sprintf("event with %d scope and %d attachment links in a block of %d links", scope, atts, len(ev.links))}
		}
		e := &EventInfo{Type: EventType(d[0]), Range: EventRange(d[2]), Cause: EventCause(d[3]), RangeOf: -1, at: at}
		if d[1] == syncTime {
			e.Time = float64(int64(binary.LittleEndian.Uint64(d[16:]))) * math.Float64frombits(binary.LittleEndian.Uint64(d[24:]))
		}
		if e.Name, err = f.text(ev.links[3]); err != nil {
			return err
		}
		if e.Comment, err = f.text(ev.links[4]); err != nil {
			return err
		}
		for _, s := range ev.links[evLinks : evLinks+scope] {
			for i, g := range f.Groups {
				if g.at == s {
					e.Scope = append(e.Scope, i)
				}
			}
		}
		for _, a := range ev.links[evLinks+scope : evLinks+scope+atts] {
			for i, att := range f.Attachments {
				if att.at == a {
					e.Attachments = append(e.Attachments, i)
				}
			}
		}
		if i, ok := index[ev.links[2]]; ok && ev.links[2] != 0 {
			e.RangeOf = i
		}
		index[at] = len(f.Events)
		f.Events = append(f.Events, e)
		at = ev.links[0]
	}
	return nil
}

func (f *File) readAttachments(at int64) error {
	step := f.chain("AT")
	for at != 0 {
		if err := step(at); err != nil {
			return err
		}
		b, err := f.block(at, "AT", atLinks, 40)
		if err != nil {
			return err
		}
		a := &AttachmentInfo{at: at}
		d := b.data
		flags := binary.LittleEndian.Uint16(d)
		size := binary.LittleEndian.Uint64(d[32:])
		if flags&1 != 0 {
			if size > uint64(len(d)-40) {
				return &readError{f.Name, at, fmt.Sprintf("attachment of %d bytes in a block of %d", size, len(d))}
			}
			if flags&2 != 0 {
				return &readError{f.Name, at, "compressed attachments are not read here"}
			}
			a.Data = d[40 : 40+size]
		}
		for i, p := range []*string{&a.Name, &a.MIME, &a.Comment} {
			if *p, err = f.text(b.links[1+i]); err != nil {
				return err
			}
		}
		f.Attachments = append(f.Attachments, a)
		at = b.links[0]
	}
	return nil
}

// records calls fn with each record of group g in order; rec is reused
// between calls.
func (f *File) records(g *GroupInfo, fn func(rec []byte) error) error {
	c := f.cursor(g)
	for {
		rec, err := c.Next()
		if err != nil || rec == nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// recordCursor reads a group's records one at a time.
type recordCursor struct {
	f      *File
	g      *GroupInfo
	blocks func() (int64, int64, bool, error)
	buf    []byte
	pos    int   // in buf
	at     int64 // where the rest of the current block is
	left   int64 // its bytes not yet in buf
	read   uint64
	rec    []byte
}

// cursor starts reading group g's records.
func (f *File) cursor(g *GroupInfo) *recordCursor {
	return &recordCursor{f: f, g: g, blocks: f.dataBlocks(g), rec: make([]byte, g.RecordSize)}
}

// Next is the next record (valid until the next call), nil after the last.
func (c *recordCursor) Next() ([]byte, error) {
	if c.read >= c.g.Cycles || c.g.RecordSize == 0 {
		return nil, nil
	}
	for filled := 0; filled < len(c.rec); {
		if c.pos == len(c.buf) {
			if c.left == 0 {
				at, n, ok, err := c.blocks()
				if err != nil {
					return nil, err
				}
				if !ok {
					return nil, &readError{c.f.Name, c.g.at, fmt.Sprintf("channel group %q: the data ends after %d of %d records", c.g.Name, c.read, c.g.Cycles)}
				}
				c.at, c.left = at, n
				continue
			}
			n := min(c.left, 64<<10)
			if cap(c.buf) < int(n) {
				c.buf = make([]byte, 64<<10)
			}
			c.buf = c.buf[:n]
			if _, err := c.f.r.ReadAt(c.buf, c.at); err != nil {
				return nil, fmt.Errorf("%s: 0x%x: %w", c.f.Name, c.at, err)
			}
			c.at += n
			c.left -= n
			c.pos = 0
		}
		k := copy(c.rec[filled:], c.buf[c.pos:])
		c.pos += k
		filled += k
	}
	c.read++
	return c.rec, nil
}

// Value is the channel's physical value in rec (NaN when it cannot be
// read).
func (c *ChannelInfo) Value(rec []byte) float64 {
	if c.Unsupported != "" {
		return math.NaN()
	}
	b := rec[c.Offset : c.Offset+c.Bits/8]
	var v float64
	switch c.dataType {
	case cnFloatLE:
		if c.Bits == 32 {
			v = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		} else {
			v = math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
	case cnUintLE:
		v = float64(uint64le(b))
	case cnIntLE:
		u := uint64le(b)
		shift := 64 - uint(c.Bits)
		v = float64(int64(u<<shift) >> shift)
	}
	if c.b != 0 {
		v = c.a + c.b*v
	}
	return v
}

// Text is the value's text under a value-to-text conversion ("" without
// one).
func (c *ChannelInfo) Text(v float64) string {
	if c.Texts == nil {
		return ""
	}
	for _, t := range c.Texts {
		if t.Value == v {
			return t.Text
		}
	}
	return c.Default
}

func uint64le(b []byte) uint64 {
	var u uint64
	for i := len(b) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	return u
}
