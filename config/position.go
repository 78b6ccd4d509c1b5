package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Pos is a place in a config file: 1-based line and column, the column
// counted in characters as editors count them.
type Pos struct {
	Line, Col int
}

func (p Pos) String() string { return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col) }

// node is where one JSON value sits in the source.
type node struct {
	off    int    // first byte of the value
	keyOff int    // first byte of its member name, -1 for array elements and the root
	path   string // display path, e.g. outputs[0].ports[2][0].propertyName
}

// index maps JSON Pointers to source positions. The schema validator and
// encoding/json know nothing of lines (santhosh-tekuri/jsonschema#203), so the
// document is walked once, token by token, recording where each value starts.
type index struct {
	src        []byte
	base       int // bytes before the JSON text (a byte order mark)
	lineStarts []int
	// wide marks the lines holding a byte beyond ASCII: only there does a
	// column need counting runes, so a config written on one long line
	// (machine-made) is not counted again for every position in it.
	wide []bool
	// cur is the last position counted on a wide line: the checks ask for
	// positions mostly in file order, so counting on from it keeps a
	// machine-made one-line config with one "ë" linear, not quadratic.
	cur       cursor
	nodes     map[string]node
	dups      []dupKey
	overflows []overflow
}

// overflow is a number too large for a double (1e400): valid JSON, but
// encoding/json refuses it, so it must be reported with its position
// before anything decodes the file.
type overflow struct {
	off        int
	text, path string
}

// dupKey is a member name that appears twice in one object: encoding/json
// would silently keep the last, hiding an edit the user thinks is live.
type dupKey struct {
	ptr        string // pointer of the repeated member
	first, off int    // offsets of the first and the repeated name
}

// syntaxError is malformed JSON at a byte offset.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// newIndex walks src, whose JSON text starts at byte base.
func newIndex(src []byte, base int) (*index, error) {
	ix := &index{src: src, base: base, nodes: map[string]node{}, lineStarts: []int{0}, wide: []bool{false}}
	for i, c := range src {
		switch {
		case c == '\n':
			ix.lineStarts = append(ix.lineStarts, i+1)
			ix.wide = append(ix.wide, false)
		case c >= utf8.RuneSelf:
			ix.wide[len(ix.wide)-1] = true
		}
	}
	// Check validity first: json.Unmarshal scans byte by byte, so its
	// SyntaxError.Offset reliably points just past the offending byte, which
	// the streaming decoder's does not.
	var raw json.RawMessage
	if err := json.Unmarshal(src[base:], &raw); err != nil {
		return ix, ix.syntax(err)
	}
	dec := json.NewDecoder(bytes.NewReader(src[base:]))
	dec.UseNumber()
	if err := ix.walk(dec, "", "", -1); err != nil {
		return ix, ix.syntax(err) // not expected once Unmarshal accepted the text
	}
	return ix, nil
}

func (ix *index) walk(dec *json.Decoder, ptr, path string, keyOff int) error {
	start := ix.skip(ix.offset(dec))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	ix.nodes[ptr] = node{off: start, keyOff: keyOff, path: path}
	if n, ok := tok.(json.Number); ok {
		if _, err := strconv.ParseFloat(string(n), 64); err != nil {
			ix.overflows = append(ix.overflows, overflow{start, string(n), path})
		}
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]int{}
		for dec.More() {
			koff := ix.skip(ix.offset(dec))
			ktok, err := dec.Token()
			if err != nil {
				return err
			}
			key, ok := ktok.(string)
			if !ok {
				return &syntaxError{koff, "expected a member name in double quotes"}
			}
			child := ptr + "/" + escapePointer(key)
			if first, dup := seen[key]; dup {
				ix.dups = append(ix.dups, dupKey{ptr: child, first: first, off: koff})
			} else {
				seen[key] = koff
			}
			if err := ix.walk(dec, child, memberPath(path, key), koff); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			is := strconv.Itoa(i)
			if err := ix.walk(dec, ptr+"/"+is, path+"["+is+"]", -1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}

// syntax turns a decoder error into a positioned, readable one.
func (ix *index) syntax(err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &syntaxError{ix.base, "invalid JSON: " + err.Error()}
	}
	msg := se.Error()
	if msg == "unexpected end of JSON input" {
		end := len(bytes.TrimRight(ix.src, " \t\r\n"))
		if end <= ix.base {
			return &syntaxError{ix.base, "the file is empty: expected a JSON object"}
		}
		return &syntaxError{end, "invalid JSON: the file ends before the document does (a missing } or ]?)"}
	}
	// Offset counts the bytes read, the offending one included.
	off := ix.base + max(0, int(se.Offset)-1)
	switch {
	case strings.HasSuffix(msg, "after top-level value"):
		msg = "unexpected content after the end of the top-level object: expected one JSON document per file"
	case off < len(ix.src) && (ix.src[off] == '}' || ix.src[off] == ']') && ix.prevByte(off) == ',':
		msg = "invalid JSON: " + msg + " (a comma before a closing bracket is not allowed in JSON)"
	default:
		msg = "invalid JSON: " + msg
	}
	return &syntaxError{off, msg}
}

// prevByte is the last byte before off that is not white space.
func (ix *index) prevByte(off int) byte {
	for i := off - 1; i >= 0; i-- {
		switch c := ix.src[i]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

// offset is the decoder's position in src.
func (ix *index) offset(dec *json.Decoder) int { return ix.base + int(dec.InputOffset()) }

// skip moves past white space and the separators ',' and ':', to where the
// next token really starts.
func (ix *index) skip(off int) int {
	for off < len(ix.src) {
		switch ix.src[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// cursor is a counted position: byte offset off is at column col of line
// (0-based); col 0 is no position yet.
type cursor struct{ line, off, col int }

// pos converts a byte offset to a line and column.
func (ix *index) pos(off int) Pos {
	off = min(max(off, 0), len(ix.src))
	line := sort.Search(len(ix.lineStarts), func(i int) bool { return ix.lineStarts[i] > off }) - 1
	start := ix.lineStarts[line]
	if line == 0 {
		start = min(ix.base, off) // editors do not count a byte order mark
	}
	if !ix.wide[line] {
		return Pos{Line: line + 1, Col: off - start + 1}
	}
	from, col := start, 1
	if c := ix.cur; c.col > 0 && c.line == line && c.off >= start && c.off <= off {
		from, col = c.off, c.col
	}
	col += utf8.RuneCount(ix.src[from:off])
	// Counting on from off gives the same count only if no character
	// straddles it (off is not inside a multi-byte sequence).
	if off == len(ix.src) || utf8.RuneStart(ix.src[off]) {
		ix.cur = cursor{line, off, col}
	}
	return Pos{Line: line + 1, Col: col}
}

// value is the position of the value at ptr, and its display path.
func (ix *index) value(ptr string) (Pos, string) {
	n, ok := ix.nodes[ptr]
	if !ok {
		return ix.parent(ptr)
	}
	return ix.pos(n.off), n.path
}

// key is the position of the member name of the value at ptr (the value's
// own position for array elements), and its display path.
func (ix *index) key(ptr string) (Pos, string) {
	n, ok := ix.nodes[ptr]
	if !ok {
		return ix.parent(ptr)
	}
	if n.keyOff >= 0 {
		return ix.pos(n.keyOff), n.path
	}
	return ix.pos(n.off), n.path
}

// parent answers for a pointer that is not in the document (a missing member)
// with the nearest ancestor that is.
func (ix *index) parent(ptr string) (Pos, string) {
	for ptr != "" {
		ptr = ptr[:strings.LastIndexByte(ptr, '/')]
		if n, ok := ix.nodes[ptr]; ok {
			return ix.pos(n.off), n.path
		}
	}
	return Pos{1, 1}, ""
}

func escapePointer(key string) string { return pointerEscaper.Replace(key) }

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// memberPath appends a member to a display path: .name for plain names,
// ["any name"] for the rest (vehicle names such as "VS Vehicle 0").
func memberPath(path, key string) string {
	plain := key != ""
	for i, r := range key {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}
