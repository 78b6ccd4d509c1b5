package recording

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Span is what a first reading of a recording finds: how many rows and
// headers, the time of its first and last rows, and the vehicles of each
// header's rows in the order they come (a vehicle may have rows and no
// field of its own).
type Span struct {
	Rows, Headers int
	First, Last   float64
	vehicles      [][]string
}

// Measure reads src once, checking it whole.
func Measure(src Source) (Span, error) {
	s := Span{First: math.Inf(1), Last: math.Inf(-1)}
	err := src(func(h *Header) error {
		s.Headers++
		s.vehicles = append(s.vehicles, nil)
		return nil
	}, func(h *Header, r *Row) error {
		s.Rows++
		s.First, s.Last = min(s.First, r.Time()), max(s.Last, r.Time())
		if h.Vehicle >= 0 {
			vs := &s.vehicles[len(s.vehicles)-1]
			if !containsString(*vs, r.Vehicle) {
				*vs = append(*vs, r.Vehicle)
			}
		}
		return nil
	})
	return s, err
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Copy writes src's rows with dst, as measured by span: a header as
// src's, a row per row; a row whose reloads column counts more than the
// row before is a reload (an event for formats that keep them), and so are
// src's events (Events, for formats that keep them). It writes every flush
// bytes and at the end, and closes dst.
func Copy(dst Writer, src Source, span Span, flush int, given []Event) (rows int64, err error) {
	var buf []byte
	events := append([]Event(nil), given...)
	var lay *Layout
	headers := 0
	reloadsCol, lastReloads := -1, math.NaN()
	write := func() error {
		n, lost, err := dst.Write(buf, events)
		rows += n
		buf, events = buf[:0], events[:0]
		if err == nil && lost > 0 {
			err = fmt.Errorf("%d rows not written", lost)
		}
		return err
	}
	err = src(func(h *Header) error {
		lay = LayoutOfHeader(h)
		if h.Vehicle >= 0 && len(lay.Vehicles) == 1 && lay.Vehicles[0] == "" {
			lay.Vehicles = nil // named by the rows
		}
		if headers < len(span.vehicles) {
			for _, v := range span.vehicles[headers] {
				if h.Vehicle >= 0 && lay.VehicleIndex(v) < 0 {
					lay.Vehicles = append(lay.Vehicles, v)
				}
			}
		}
		reloadsCol = slices.Index(h.Columns, "reloads")
		headers++
		buf = dst.Header(buf, lay)
		return nil
	}, func(h *Header, r *Row) error {
		if reloadsCol >= 0 {
			n := r.Values[reloadsCol]
			if n > lastReloads && len(given) == 0 {
				events = append(events, Event{Time: r.Time(), Vehicle: -1, Kind: Reload, Name: "reload", Text: "the reloads column counts " + strconv.FormatFloat(n, 'f', -1, 64)})
			}
			lastReloads = n
		}
		v := 0
		if lay.Several() {
			if v = lay.VehicleIndex(r.Vehicle); v < 0 {
				return fmt.Errorf("line %d: vehicle %q was not in the first reading", r.Line, r.Vehicle)
			}
		}
		buf = dst.Row(buf, v, r.Values)
		if len(buf) >= flush {
			return write()
		}
		return nil
	})
	if err == nil {
		err = write()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return rows, err
}
