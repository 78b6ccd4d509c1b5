package recording

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// Writer writes a recording in one format, in two halves. The message
// path encodes (Header, Row) into a buffer: Row allocates nothing and never
// blocks. The recorder's writer goroutine writes the buffers (Write) and
// ends the file (Close). A reload calls Header again.
type Writer interface {
	// Header starts the rows of a layout: the run's first, and one after
	// every reload.
	Header(buf []byte, l *Layout) []byte
	// Row appends one message's row: a value per column of the layout
	// (see Layout.Flatten), for vehicle (an index into its Vehicles).
	Row(buf []byte, vehicle int, values []float64) []byte
	// Write writes what Header and Row encoded, and the events since the
	// last Write, and says how many rows it wrote and how many it lost (a
	// full disk); the file keeps whole rows only.
	Write(buf []byte, events []Event) (written, lost int64, err error)
	// Close ends the file (MDF 4: finalizes it); it does not close the
	// destination.
	Close() error
}

// Event is something that happened during a run, recorded at its time
// (MDF 4 keeps them as events; a CSV recording has no place for them).
// Times are on the rows' time base: BeamNG's simulation time; an event
// between two messages has the latest message's time.
type Event struct {
	Time    float64 // on the rows' time base
	Vehicle int     // the vehicle it concerns, -1 for the run as a whole
	Kind    EventKind
	Name    string // short: "reload", "model fault", "status connected"
	Text    string // what happened, in a sentence or a list
	// Config, for a reload, is the config's text it applied (nil when
	// unknown).
	Config []byte
}

// EventKind says what an event is.
type EventKind uint8

const (
	Reload     EventKind = iota // a config reload applied
	FaultBegin                  // a model fault began (or changed)
	FaultEnd                    // the model recovered
	StatusChange
	Diagnosis // a live diagnosis: a classic mistake of a rig, with its fix
	Lost      // rows the recording lost (a full disk): how many, and why
	Faults    // the run ended with faults: the summary's list
)

// truncater is a file a CSV recording can cut back to its last whole row.
type truncater interface {
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
}

// CSV writes recordings as CSV: a header row of column names (see
// Layout), then a row per message. A reload that keeps the columns writes
// nothing; one that changes them starts a new file (Next), so each file has
// one header row and reads as it is in any CSV reader; without Next (a
// pipe) a new header row follows in the same stream. Times have microsecond
// resolution, ids and counts are written whole, values in the shortest form
// that reads back exactly.
type CSV struct {
	w      io.Writer
	file   truncater // when w can: cut back to whole rows after a failed write
	offset int64     // bytes of whole rows in the file (writer goroutine)
	// Next, when set, opens the file of the recording's nth layout (n ≥ 2),
	// where the rows go once the columns changed (writer goroutine).
	Next  func(n int) (io.Writer, error)
	files int       // files written so far (writer goroutine)
	owned io.Closer // the file Next made that rows go to now, closed when done

	// loop side: the current layout's names and how each column is written
	vehicles []string
	kinds    []byte
	layout   *Layout
}

// sectionMark starts a new layout's header in the buffer: the writer
// goroutine starts a new file there. No CSV text holds it.
const sectionMark = 0

// Column kinds, for formatting.
const (
	kindValue   = iota
	kindTime    // microseconds
	kindVehicle // the vehicle's name
	kindWhole   // status, reloads
	kindID      // ids: whole, as long as they are
)

// NewCSV writes a CSV recording to w.
func NewCSV(w io.Writer) *CSV {
	c := &CSV{w: w, files: 1}
	if f, ok := w.(truncater); ok {
		c.file = f
	}
	return c
}

// Header writes the header row, unless the columns are the ones already
// written.
func (c *CSV) Header(buf []byte, l *Layout) []byte {
	if c.layout != nil && c.layout.Equal(l) {
		c.layout = l
		return buf
	}
	if c.layout != nil {
		buf = append(buf, sectionMark)
	}
	c.layout = l
	c.vehicles = l.Vehicles
	c.kinds = c.kinds[:0]
	for i := range l.Columns {
		col := &l.Columns[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		unit := ""
		if col.Unit != l.ImpliedUnit(col) {
			unit = col.Unit
		}
		buf = headerCell(buf, col.Name, unit)
		k := byte(kindValue)
		switch {
		case col.Role == Time, col.Role == Own && col.Name == "local_time":
			k = kindTime
		case col.Role == Vehicle:
			k = kindVehicle
		case col.Role == Own && (col.Name == "status" || col.Name == "reloads"):
			k = kindWhole
		case col.Role == Own && (col.Name == "id" || col.Name == "reply_id"):
			k = kindID
		}
		c.kinds = append(c.kinds, k)
	}
	return append(buf, '\n')
}

// Row writes a row. It allocates nothing.
func (c *CSV) Row(b []byte, vehicle int, values []float64) []byte {
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		switch c.kinds[i] {
		case kindTime:
			b = strconv.AppendFloat(b, v, 'f', 6, 64)
		case kindVehicle:
			b = append(b, c.vehicles[vehicle]...)
		case kindWhole:
			b = strconv.AppendInt(b, int64(v), 10)
		case kindID:
			b = strconv.AppendFloat(b, v, 'f', -1, 64)
		default:
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
		}
	}
	return append(b, '\n')
}

// Write writes whole rows; after a failed write (a full disk) the part of
// a row that made it is cut off the file again, so it holds whole rows
// only, and the rows that did not make it are counted lost. A new layout's
// header starts the next file (Next), or follows in the same one.
func (c *CSV) Write(buf []byte, _ []Event) (written, lost int64, err error) {
	for {
		i := bytes.IndexByte(buf, sectionMark)
		if i < 0 {
			return c.write(buf, written, lost)
		}
		if written, lost, err = c.write(buf[:i], written, lost); err != nil {
			return written, lost + dataRows(buf[i+1:]), err
		}
		buf = buf[i+1:]
		if c.Next == nil {
			continue // the header row follows in the same stream
		}
		w, err := c.Next(c.files + 1)
		if err != nil {
			return written, lost, fmt.Errorf("the columns changed, and the file for them could not be made (%w): they follow a new header row in the same file", err)
		}
		c.files++
		// A file Next made is this writer's own: closed as the rows move
		// on, or at Close. (Left to the garbage collector, it stayed open,
		// and on Windows a file open anywhere cannot be removed.)
		c.closeOwned()
		if f, ok := w.(io.Closer); ok {
			c.owned = f
		}
		c.w, c.offset, c.file = w, 0, nil
		if f, ok := w.(truncater); ok {
			c.file = f
		}
	}
}

func (c *CSV) write(buf []byte, written, lost int64) (int64, int64, error) {
	n, err := c.w.Write(buf)
	if err == nil && n < len(buf) {
		err = io.ErrShortWrite
	}
	whole := 0
	if err == nil {
		whole = n
	} else if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
		whole = i + 1
	}
	c.offset += int64(whole)
	if err != nil && n > whole && c.file != nil {
		if c.file.Truncate(c.offset) == nil {
			c.file.Seek(c.offset, io.SeekStart)
		}
	}
	return written + dataRows(buf[:whole]), lost + dataRows(buf[whole:]), err
}

// Close closes the file the rows went to last when Next made it (the
// destination given stays open: its owner closes it); a CSV file is
// complete after every row, so there is nothing else to end.
func (c *CSV) Close() error { return c.closeOwned() }

func (c *CSV) closeOwned() error {
	if c.owned == nil {
		return nil
	}
	err := c.owned.Close()
	c.owned = nil
	return err
}

// dataRows counts the rows in b that are not header rows.
func dataRows(b []byte) int64 {
	// A data row starts with a number; a header row with "time,".
	n := int64(bytes.Count(b, []byte{'\n'}))
	n -= int64(bytes.Count(b, []byte("\ntime,")))
	if bytes.HasPrefix(b, []byte("time,")) {
		n--
	}
	return n
}
