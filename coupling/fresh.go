package coupling

import (
	"math"

	"beamconnect/models"
	"beamconnect/ports"
)

// staleAfter is how much simulation time a vehicle may go on without
// another vehicle's data before that vehicle's data are stale for it (at
// least 10 periods): as long as a silent BeamNG port may take before a new
// one is BeamNG's.
const staleAfter = 0.1

// freshness keeps, for each pair of vehicles, how far one has gone on in
// its simulation time since the other's last whole message. The model is
// stepped on a vehicle's message only while every other vehicle it reads
// has sent within staleAfter of that vehicle's time: a model is never
// stepped on the data of a vehicle whose BeamNG went silent (its last
// values would be taken for now). Simulation time, not the wall clock: a
// pause of BeamNG pauses every vehicle, and makes nobody's data stale.
type freshness struct {
	reads []bool      // the vehicles the model reads
	seen  []bool      // the vehicle has sent a whole message
	last  []float64   // each vehicle's latest whole message id
	mark  [][]float64 // mark[a][b]: a's latest id when b's latest whole message came
	limit float64     // in message ids
}

func (f *freshness) init(p *ports.Plan, reads []bool) {
	n := len(p.Vehicles)
	f.reads, f.seen, f.last = reads, make([]bool, n), make([]float64, n)
	f.mark = make([][]float64, n)
	for a := range n {
		f.last[a] = math.NaN()
		f.mark[a] = make([]float64, n)
		for b := range n {
			f.mark[a][b] = math.NaN()
		}
	}
	f.limit = max(10, staleAfter/p.Period)
}

// check notes vehicle v's whole message id and reports whether the data
// of every other vehicle the model reads are fresh for it; otherwise why
// not: Waiting (one has not sent yet) or StaleData (one stopped sending).
func (f *freshness) check(v int, id float64) (Counter, bool) {
	f.last[v], f.seen[v] = id, true
	for a := range f.mark {
		f.mark[a][v] = f.last[a] // NaN for a vehicle yet to send
	}
	for b, reads := range f.reads {
		if b == v || !reads {
			continue
		}
		if !f.seen[b] {
			return Waiting, false
		}
		m := f.mark[v][b]
		if m != m || id < m {
			// v's first message since b's, or v's ids started again (its
			// controller restarted): count from here.
			m = id
			f.mark[v][b] = id
		}
		if id-m > f.limit {
			return StaleData, false
		}
	}
	return 0, true
}

// modelReads are the vehicles whose data model m reads in plan p: what it
// says, if it is a models.Reader, otherwise every vehicle the plan maps
// data of.
func modelReads(m models.Model, p *ports.Plan) []bool {
	reads := make([]bool, len(p.Vehicles))
	if r, ok := m.(models.Reader); ok {
		for v := range reads {
			reads[v] = r.Reads(v)
		}
		return reads
	}
	for _, pt := range p.Outputs[1:] {
		for i := range pt.Fields {
			f := &pt.Fields[i]
			reads[f.Vehicle] = true
			if f.Source == ports.Relative {
				reads[f.Other] = true
			}
		}
	}
	return reads
}
