// Package mdf writes and reads ASAM MDF 4 files (.mf4), the measurement
// format of CANape, INCA, MATLAB's Vehicle Network Toolbox, asammdf and
// DIAdem, written here from the standard's block layout: the ID block, then
// linked blocks (HD header, FH file history, DG/CG/CN data, channel groups
// and channels, CC conversions, TX/MD texts, EV events, AT attachments, DT
// data and DL data lists), every one 8-byte aligned, little-endian.
//
// The writer streams: data goes out in DT blocks chained by DL blocks as it
// comes, the file is marked unfinalized ("UnFinMF ") while it grows and
// finalized by Close, so a writer killed at any moment leaves a file the
// readers open with everything linked up to its last Flush. The Reader
// walks a file strictly, so a broken file is an error that says where.
package mdf

import (
	"encoding/binary"
	"math"
)

// Block ids and sizes, as the standard lays them out (MDF 4.1).
const (
	idSize     = 64  // the ID block, at offset 0, without a block header
	headerSize = 24  // "##XX", 4 reserved bytes, block length, link count
	hdAt       = 64  // the HD block follows the ID block
	hdLinks    = 6   // dg_first, fh_first, ch_first, at_first, ev_first, md_comment
	hdSize     = 104 // header, 6 links, 32 bytes of data
	fhSize     = 56  // header, 2 links, 16 bytes of data
	dgLinks    = 4   // dg_next, cg_first, data, md_comment
	dgSize     = 64
	cgLinks    = 6 // cg_next, cn_first, tx_acq_name, si_acq_source, sr_first, md_comment
	cgSize     = 104
	cnLinks    = 8 // cn_next, composition, tx_name, si_source, cc_conversion, data, md_unit, md_comment
	cnSize     = 160
	ccLinks    = 4 // tx_name, md_unit, md_comment, cc_inverse, then cc_ref[]
	evLinks    = 5 // ev_next, ev_parent, ev_range, tx_name, md_comment, then scope[] and at_reference[]
	atLinks    = 4 // at_next, tx_filename, tx_mimetype, md_comment

	// Offsets of the fields the writer patches in place.
	hdDGFirst   = hdAt + headerSize + 0*8
	hdATFirst   = hdAt + headerSize + 3*8
	hdEVFirst   = hdAt + headerSize + 4*8
	dgNextLink  = headerSize + 0*8
	dgDataLink  = headerSize + 2*8
	cgCycles    = headerSize + cgLinks*8 + 8 // after cg_record_id
	dlNextLink  = headerSize
	evNextLink  = headerSize
	atNextLink  = headerSize
	idUnfinAt   = 60
	versionText = "4.10    "
	version     = 410
)

// Unfinalized flags of the ID block (id_unfin_flags): what a reader must
// work out itself in a file its writer did not finish.
const (
	unfinCycleCounts = 1 << 0 // cg_cycle_count of CG blocks may be behind
	unfinLastDT      = 1 << 2 // the last DT block's length may be wrong
)

// dataType is a channel's value encoding (cn_data_type with its bit count).
type dataType uint8

const (
	typeFloat64 dataType = iota // IEEE 754 double, little-endian
	typeUint8
	typeUint32
)

// Size is the type's width in bytes.
func (t dataType) Size() int {
	switch t {
	case typeUint8:
		return 1
	case typeUint32:
		return 4
	}
	return 8
}

// cn_data_type codes.
const (
	cnUintLE  = 0
	cnIntLE   = 2
	cnFloatLE = 4
)

func (t dataType) code() uint8 {
	if t == typeFloat64 {
		return cnFloatLE
	}
	return cnUintLE
}

// Channel types and sync types (cn_type, cn_sync_type).
const (
	cnFixed  = 0
	cnMaster = 2
	syncNone = 0
	syncTime = 1
)

// builder lays blocks out one after another from file offset base.
type builder struct {
	base int64
	buf  []byte
}

// block appends a block with n links and size bytes in all (links and data
// included), and returns its file offset; the links are zero until set.
func (b *builder) block(id string, n int, size int) int64 {
	at := b.base + int64(len(b.buf))
	start := len(b.buf)
	size = align(size)
	b.buf = append(b.buf, make([]byte, size)...)
	h := b.buf[start:]
	copy(h, "##"+id)
	binary.LittleEndian.PutUint64(h[8:], uint64(size))
	binary.LittleEndian.PutUint64(h[16:], uint64(n))
	return at
}

// grow appends a block header for a block of size bytes without links
// and without zeroing the rest (DT data written right after it), and
// returns its offset.
func (b *builder) header(id string, size int) int64 {
	at := b.base + int64(len(b.buf))
	var h [headerSize]byte
	copy(h[:], "##"+id)
	binary.LittleEndian.PutUint64(h[8:], uint64(size))
	b.buf = append(b.buf, h[:]...)
	return at
}

// pad appends zeros up to the next multiple of 8.
func (b *builder) pad() {
	for len(b.buf)%8 != 0 {
		b.buf = append(b.buf, 0)
	}
}

// at is the bytes of the block at file offset off, from off on.
func (b *builder) at(off int64) []byte { return b.buf[off-b.base:] }

// link sets link i of the block at off.
func (b *builder) link(off int64, i int, to int64) {
	binary.LittleEndian.PutUint64(b.at(off)[headerSize+8*i:], uint64(to))
}

// data is the data section of the block at off, which has n links.
func (b *builder) data(off int64, n int) []byte { return b.at(off)[headerSize+8*n:] }

// text appends a TX block (or an MD block for XML) holding s, zero
// terminated; "" adds nothing and returns 0 (no link).
func (b *builder) text(id, s string) int64 {
	if s == "" {
		return 0
	}
	at := b.block(id, 0, headerSize+len(s)+1)
	copy(b.data(at, 0), s)
	return at
}

func align(n int) int { return (n + 7) &^ 7 }

func putF64(b []byte, v float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(v)) }
