package cosim

import (
	"fmt"
	"strconv"
	"strings"
)

// field is one CSV field and where it starts.
type field struct {
	text      string
	line, col int
}

// reader walks CSV text one byte at a time, keeping the line and column.
type reader struct {
	data      []byte
	i         int
	line, col int
	file      string
	d         *Diags
}

// records splits CSV text into rows of fields, RFC 4180 style as BeamNG's
// csvlib reads it: comma separator, LF, CRLF or CR line ends, double quotes
// around a field, "" for a quote inside one, a missing final newline.
func records(data []byte, d *Diags, file string) [][]field {
	r := &reader{data: data, line: 1, col: 1, file: file, d: d}
	var rows [][]field
	var row []field
	var b strings.Builder
	for r.i <= len(data) {
		fl, fc := r.line, r.col
		if r.i < len(data) && data[r.i] == '"' {
			if !r.quoted(&b) {
				row = append(row, field{b.String(), fl, fc})
				return append(rows, row)
			}
		} else {
			for r.i < len(data) && !endOfField(data[r.i]) {
				b.WriteByte(data[r.i])
				r.i, r.col = r.i+1, r.col+1
			}
		}
		row = append(row, field{b.String(), fl, fc})
		b.Reset()
		if r.i >= len(data) {
			break
		}
		switch data[r.i] {
		case ',':
			r.i, r.col = r.i+1, r.col+1
			continue
		case '\r':
			r.i++
			if r.i < len(data) && data[r.i] == '\n' {
				r.i++
			}
		case '\n':
			r.i++
		}
		rows = append(rows, row)
		row = nil
		r.line, r.col = r.line+1, 1
		if r.i == len(data) {
			return rows
		}
	}
	if row != nil {
		rows = append(rows, row)
	}
	return rows
}

func endOfField(c byte) bool { return c == ',' || c == '\n' || c == '\r' }

// quoted reads a quoted field into b, from its opening quote up to the
// closing one ("" is a quote), and reports false when the file ends first.
// A quoted field may hold line breaks, so one stray quote takes every line
// after it into a single field: wherever that shows, the finding names the
// line and column of the opening quote and the lines taken in.
func (r *reader) quoted(b *strings.Builder) bool {
	ol, oc := r.line, r.col
	r.i, r.col = r.i+1, r.col+1
	for r.i < len(r.data) {
		c := r.data[r.i]
		if c == '"' {
			if r.i+1 < len(r.data) && r.data[r.i+1] == '"' {
				b.WriteByte('"')
				r.i, r.col = r.i+2, r.col+2
				continue
			}
			r.i, r.col = r.i+1, r.col+1
			r.closed(ol, oc)
			return true
		}
		b.WriteByte(c)
		r.i++
		switch {
		case c == '\r' && r.i < len(r.data) && r.data[r.i] == '\n':
			b.WriteByte('\n')
			r.i++
			fallthrough
		case c == '\n' || c == '\r':
			r.line, r.col = r.line+1, 1
		default:
			r.col++
		}
	}
	msg := "a quoted field is never closed: expected a \" before the end of the file"
	if r.line > ol {
		msg = fmt.Sprintf("a quoted field opens here and is never closed, so %s read into it instead of as rows: expected a \" to close the field on line %d",
			lineSpan(ol+1, r.line), ol)
	}
	*r.d = append(*r.d, Diag{File: r.file, Line: ol, Col: oc, Msg: msg})
	return false
}

// closed checks what follows the closing quote of a field opened at ol:oc:
// a comma or a line end. A field that ran over line ends is reported too,
// since the lines it took in are text, not rows.
func (r *reader) closed(ol, oc int) {
	cl, cc := r.line, r.col-1 // the closing quote
	span := ""
	if cl > ol {
		span = fmt.Sprintf("a quoted field opens here and is closed only at %d:%d, so %s read into it instead of as rows",
			cl, cc, lineSpan(ol+1, cl))
	}
	if r.i < len(r.data) && !endOfField(r.data[r.i]) {
		after := r.data[r.i]
		if span != "" {
			*r.d = append(*r.d, Diag{File: r.file, Line: ol, Col: oc,
				Msg: fmt.Sprintf("%s, and %q follows the closing quote: expected a \" to close the field on line %d", span, after, ol)})
		} else {
			*r.d = append(*r.d, Diag{File: r.file, Line: r.line, Col: r.col, Msg: fmt.Sprintf("%q after a closing quote: expected a comma or the end of the line", after)})
		}
		for r.i < len(r.data) && !endOfField(r.data[r.i]) {
			r.i, r.col = r.i+1, r.col+1
		}
		return
	}
	if span != "" {
		*r.d = append(*r.d, Diag{File: r.file, Line: ol, Col: oc, Warning: true,
			Msg: span + " (BeamNG reads the file so too): if that is not meant, close the quote on line " + strconv.Itoa(ol)})
	}
}

// lineSpan names lines a to b as the subject of a sentence: "line 5 was"
// or "lines 5–8 were".
func lineSpan(a, b int) string {
	if a >= b {
		return fmt.Sprintf("line %d was", a)
	}
	return fmt.Sprintf("lines %d–%d were", a, b)
}
