package coupling

import (
	"bufio"
	"io"
	"strconv"
	"time"

	"beamconnect/beamng"
	"beamconnect/ports"
)

// Recorder writes one CSV row per BeamNG message: local time, status,
// BeamNG's id, the reply id, then every output and input port element. Rows
// go through a buffer without allocating; the coupling flushes it every
// second, so a crash loses at most the last second.
type Recorder struct {
	w         *bufio.Writer
	line      []byte
	lastFlush time.Time
	err       error
}

// NewRecorder writes the header for plan's ports to w.
func NewRecorder(w io.Writer, plan *ports.Plan) *Recorder {
	r := &Recorder{w: bufio.NewWriterSize(w, 256<<10), line: make([]byte, 0, 8192)}
	r.Header(plan)
	return r
}

// Header writes a header row for plan's ports. A config reload that
// changes the ports writes a new one, so a reader splits the file at rows
// starting with "time,".
func (r *Recorder) Header(plan *ports.Plan) {
	h := []byte("time,status,id,reply_id,reloads")
	name := func(prefix string, dir beamng.Direction, list []ports.Port) {
		for _, p := range list[1:] {
			for i := range p.Fields {
				f := &p.Fields[i]
				for k := range f.Width {
					h = append(h, ',')
					h = append(h, prefix...)
					h = strconv.AppendInt(h, int64(p.Number), 10)
					h = append(h, '.')
					switch f.Source {
					case ports.Slot:
						h = append(h, f.Signal(dir, k).Name...)
					default:
						h = append(h, f.Meta.String()...)
						if f.Width > 1 {
							h = strconv.AppendInt(append(h, '_'), int64(k), 10)
						}
					}
				}
			}
		}
	}
	name("out", beamng.FromBeamNG, plan.Outputs)
	h = append(h, ",directive"...)
	name("in", beamng.ToBeamNG, plan.Inputs)
	h = append(h, '\n')
	if _, err := r.w.Write(h); err != nil && r.err == nil {
		r.err = err
	}
}

// Row records one message.
func (r *Recorder) Row(t float64, s Status, id, replyID float64, reloads int64, outs, ins [][]float64) {
	b := strconv.AppendFloat(r.line[:0], t, 'f', 6, 64)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(s), 10)
	b = append(b, ',')
	b = strconv.AppendFloat(b, id, 'f', -1, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, replyID, 'f', -1, 64)
	b = strconv.AppendInt(append(b, ','), reloads, 10)
	for _, p := range outs[1:] {
		for _, v := range p {
			b = strconv.AppendFloat(append(b, ','), v, 'g', -1, 64)
		}
	}
	for _, p := range ins {
		for _, v := range p {
			b = strconv.AppendFloat(append(b, ','), v, 'g', -1, 64)
		}
	}
	r.line = append(b, '\n')
	if _, err := r.w.Write(r.line); err != nil && r.err == nil {
		r.err = err
	}
}

// FlushEvery flushes when the last flush is older than every.
func (r *Recorder) FlushEvery(now time.Time, every time.Duration) {
	if now.Sub(r.lastFlush) >= every {
		r.lastFlush = now
		r.Flush()
	}
}

// Flush writes buffered rows out; it returns the first write error seen.
func (r *Recorder) Flush() error {
	if err := r.w.Flush(); err != nil && r.err == nil {
		r.err = err
	}
	return r.err
}
