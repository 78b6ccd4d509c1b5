// Package recording reads the CSV files `run --record` writes: a header row
// (starting "time,") followed by a row per BeamNG message; a config reload
// that changed the columns starts a new file beside the first (run-2.csv),
// or, written to a pipe, a new header row; several-vehicle runs have a
// vehicle column after the time. A column whose unit its name does not
// imply (a model's variable) says it in the header: "in1.h [m]"; a name
// with a comma or a quote is quoted as RFC 4180 has it. Reading streams the
// file, so a long recording need not fit in memory.
package recording

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Header is one header row: the columns of the rows that follow it.
type Header struct {
	Line    int      // its line in the file, from 1
	Columns []string // the names, "time" first ("in1.h" of "in1.h [m]")
	// Units are the units the header gives ("m" of "in1.h [m]"), one per
	// column ("" where it gives none); nil when it gives none at all.
	Units   []string
	Vehicle int // the index of the vehicle column, or -1
	// vehicles are the names met in the vehicle column, so that a row of
	// a known vehicle reuses its string instead of making one.
	vehicles []string
}

// vehicle is the vehicle column's text as a string, made once per name
// (for the first few names: a fleet has a handful, and a file with a new
// name on every row must not make each row search them all).
func (h *Header) vehicle(field []byte) string {
	for _, v := range h.vehicles {
		if v == string(field) { // compared without a copy
			return v
		}
	}
	v := string(field)
	if len(h.vehicles) < 64 {
		h.vehicles = append(h.vehicles, v)
	}
	return v
}

// Row is one row: its line, and a value per column (NaN for the vehicle
// column, whose text is Vehicle).
type Row struct {
	Line    int
	Values  []float64
	Vehicle string
}

// Time is the row's time.
func (r *Row) Time() float64 { return r.Values[0] }

// Error is a problem at a place in the file.
type Error struct {
	File         string
	Line, Column int
	Msg          string
}

func (e *Error) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Scan reads a recording, calling onHeader for each header row and onRow
// for each row, in file order. The row's Values are reused between calls.
// Errors name the file, line and column and say what was expected. Lines
// may be of any length (a recording of 200 000 ports has lines of
// megabytes).
func Scan(r io.Reader, file string, onHeader func(*Header) error, onRow func(*Header, *Row) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var h *Header
	var row Row
	var long []byte
	line := 0
	for {
		text, err := readLine(br, &long)
		if len(text) == 0 && err != nil {
			if err != io.EOF {
				return fmt.Errorf("%s:%d: %w", file, line+1, err)
			}
			break
		}
		line++
		text = bytes.TrimSuffix(text, []byte("\r"))
		if len(text) == 0 {
			continue
		}
		if bytes.HasPrefix(text, []byte("time,")) || string(text) == "time" {
			var err error
			if h, err = parseHeader(file, line, string(text)); err != nil {
				return err
			}
			if err := onHeader(h); err != nil {
				return err
			}
			continue
		}
		if h == nil {
			return &Error{file, line, 1, `expected a recording's header row starting "time," (is this a file from run --record?)`}
		}
		if err := parseRow(file, line, text, h, &row); err != nil {
			return err
		}
		if err := onRow(h, &row); err != nil {
			return err
		}
	}
	if h == nil {
		return &Error{file, 1, 0, "empty: expected a recording's header row"}
	}
	return nil
}

// readLine returns the next line without its newline: a slice of br's
// buffer when the line fits (valid until the next read), else gathered in
// *long.
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	chunk, err := br.ReadSlice('\n')
	if err == nil {
		return chunk[:len(chunk)-1], nil
	}
	if err != bufio.ErrBufferFull {
		return chunk, err // the last line, without a newline, and io.EOF
	}
	*long = append((*long)[:0], chunk...)
	for {
		chunk, err = br.ReadSlice('\n')
		*long = append(*long, chunk...)
		switch {
		case err == nil:
			return (*long)[:len(*long)-1], nil
		case err != bufio.ErrBufferFull:
			return *long, err
		}
	}
}

// NewHeader is the header of a recording's columns (as a CSV header row
// names them) and their units (nil, or "" where a name implies its unit),
// for a reader of another format.
func NewHeader(columns, units []string) *Header {
	h := &Header{Columns: columns, Units: units, Vehicle: -1}
	if len(columns) > 1 && columns[1] == "vehicle" {
		h.Vehicle = 1
	}
	return h
}

func parseHeader(file string, line int, text string) (*Header, error) {
	cells, cols, err := splitHeader(text)
	if err != nil {
		return nil, &Error{file, line, err.col, err.msg}
	}
	h := &Header{Line: line, Columns: cells, Vehicle: -1}
	for i, c := range cells {
		if c == "" {
			return nil, &Error{file, line, cols[i], "expected a column name, got an empty one"}
		}
		if c == "vehicle" && i == 1 {
			h.Vehicle = 1
		}
		if name, unit, ok := cutUnit(c); ok {
			if h.Units == nil {
				h.Units = make([]string, len(cells))
			}
			h.Columns[i], h.Units[i] = name, unit
		}
	}
	return h, nil
}

// cutUnit takes a header cell "in1.h [m]" apart.
func cutUnit(cell string) (name, unit string, ok bool) {
	if !strings.HasSuffix(cell, "]") {
		return "", "", false
	}
	i := strings.LastIndex(cell, " [")
	if i <= 0 {
		return "", "", false
	}
	return cell[:i], cell[i+2 : len(cell)-1], true
}

type headerError struct {
	col int
	msg string
}

// splitHeader splits a header row into its cells, unquoting those quoted
// as RFC 4180 has it ("u[1,2]"), with the column each starts at.
func splitHeader(text string) ([]string, []int, *headerError) {
	var cells []string
	var cols []int
	for i := 0; ; {
		cols = append(cols, i+1)
		if i < len(text) && text[i] == '"' {
			var b strings.Builder
			j := i + 1
			for {
				k := strings.IndexByte(text[j:], '"')
				if k < 0 {
					return nil, nil, &headerError{i + 1, "a quoted column name without its closing quote"}
				}
				b.WriteString(text[j : j+k])
				j += k + 1
				if j < len(text) && text[j] == '"' { // "" is a quote
					b.WriteByte('"')
					j++
					continue
				}
				break
			}
			cells = append(cells, b.String())
			if j == len(text) {
				return cells, cols, nil
			}
			if text[j] != ',' {
				return nil, nil, &headerError{j + 1, "expected a comma after a quoted column name"}
			}
			i = j + 1
			continue
		}
		k := strings.IndexByte(text[i:], ',')
		if k < 0 {
			return append(cells, text[i:]), cols, nil
		}
		cells = append(cells, text[i:i+k])
		i += k + 1
	}
}

// headerCell writes a column's header cell: its name, its unit where the
// name does not imply it, quoted where a comma or a quote needs it (a line
// break, which a line-by-line reader cannot take, becomes a space).
func headerCell(b []byte, name, unit string) []byte {
	cell := name
	if unit != "" {
		cell += " [" + unit + "]"
	}
	if strings.ContainsAny(cell, "\r\n") {
		cell = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(cell)
	}
	if !strings.ContainsAny(cell, ",\"") {
		return append(b, cell...)
	}
	b = append(b, '"')
	b = append(b, strings.ReplaceAll(cell, `"`, `""`)...)
	return append(b, '"')
}

// parseRow reads a row's values into row, one per column of h.
func parseRow(file string, line int, text []byte, h *Header, row *Row) error {
	row.Line, row.Vehicle = line, ""
	row.Values = row.Values[:0]
	i, start := 0, 0
	for {
		end := bytes.IndexByte(text[start:], ',')
		field := text[start:]
		if end >= 0 {
			field = text[start : start+end]
		}
		if i >= len(h.Columns) {
			return &Error{file, line, start + 1, fmt.Sprintf("more values than the %d columns of the header at line %d", len(h.Columns), h.Line)}
		}
		if i == h.Vehicle {
			row.Vehicle = h.vehicle(field)
			row.Values = append(row.Values, math.NaN())
		} else {
			v, err := strconv.ParseFloat(string(field), 64)
			if err != nil {
				return &Error{file, line, start + 1, fmt.Sprintf("expected a number for column %q, got %q", h.Columns[i], field)}
			}
			row.Values = append(row.Values, v)
		}
		i++
		if end < 0 {
			break
		}
		start += end + 1
	}
	if i < len(h.Columns) {
		return &Error{file, line, len(text) + 1, fmt.Sprintf("%d values, the header at line %d has %d columns", i, h.Line, len(h.Columns))}
	}
	return nil
}
