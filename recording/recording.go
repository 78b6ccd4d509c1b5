// Package recording reads the CSV files `run --record` writes: header rows
// (starting "time,") followed by a row per BeamNG message; a config reload
// that changed the ports starts a new header row, and several-vehicle runs
// have a vehicle column after the time. Reading streams the file, so a long
// recording need not fit in memory.
package recording

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Header is one header row: the columns of the rows that follow it.
type Header struct {
	Line    int      // its line in the file, from 1
	Columns []string // as written, "time" first
	Vehicle int      // the index of the vehicle column, or -1
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
// Errors name the file, line and column and say what was expected.
func Scan(r io.Reader, file string, onHeader func(*Header) error, onRow func(*Header, *Row) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var h *Header
	var row Row
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if text == "" {
			continue
		}
		if strings.HasPrefix(text, "time,") || text == "time" {
			h = &Header{Line: line, Columns: strings.Split(text, ","), Vehicle: -1}
			for i, c := range h.Columns {
				if c == "" {
					return &Error{file, line, column(text, i), "expected a column name, got an empty one"}
				}
				if c == "vehicle" && i == 1 {
					h.Vehicle = 1
				}
			}
			if err := onHeader(h); err != nil {
				return err
			}
			continue
		}
		if h == nil {
			return &Error{file, line, 1, `expected a recording's header row starting "time," (is this a file from run --record?)`}
		}
		row.Line, row.Vehicle = line, ""
		row.Values = row.Values[:0]
		i, start := 0, 0
		for {
			end := strings.IndexByte(text[start:], ',')
			field := text[start:]
			if end >= 0 {
				field = text[start : start+end]
			}
			if i >= len(h.Columns) {
				return &Error{file, line, start + 1, fmt.Sprintf("more values than the %d columns of the header at line %d", len(h.Columns), h.Line)}
			}
			if i == h.Vehicle {
				row.Vehicle = field
				row.Values = append(row.Values, math.NaN())
			} else {
				v, err := strconv.ParseFloat(field, 64)
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
		if err := onRow(h, &row); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", file, line+1, err)
	}
	if h == nil {
		return &Error{file, 1, 0, "empty: expected a recording's header row"}
	}
	return nil
}

// column is the 1-based column where field i of a line starts.
func column(text string, field int) int {
	col := 1
	for i := 0; i < field; i++ {
		col += strings.IndexByte(text[col-1:], ',') + 1
	}
	return col
}
