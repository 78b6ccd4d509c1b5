package models

import (
	"time"

	"beamconnect/beamng"
	"beamconnect/ports"
)

// What every kind of model is built from: where a bound signal is, whose
// data a model reads, how often a complaint is logged, how long a program
// may take to start.

// Ref is a bound port element.
type Ref struct{ Port, Elem int }

// Get is the element's value in the port vectors v.
func (r Ref) Get(v [][]float64) float64 { return v[r.Port][r.Elem] }

// Set writes the element's value into the port vectors v.
func (r Ref) Set(v [][]float64, x float64) { v[r.Port][r.Elem] = x }

// Vehicles are the vehicles whose data a model's bound outputs carry.
type Vehicles []bool

// Reads reports whether vehicle v's data are read.
func (r Vehicles) Reads(v int) bool { return v >= 0 && v < len(r) && r[v] }

// Add notes the vehicles output element e of plan carries data of: its
// field's vehicle, and for a cross-vehicle property the other one too.
func (r Vehicles) Add(plan *ports.Plan, e Ref) Vehicles {
	if r == nil {
		r = make(Vehicles, len(plan.Vehicles))
	}
	if f := plan.FieldAt(beamng.FromBeamNG, e.Port, e.Elem); f != nil {
		r[f.Vehicle] = true
		if f.Source == ports.Relative {
			r[f.Other] = true
		}
	}
	return r
}

// Limiter lets a message through at once, then at most once per its
// period, counting what it held back.
type Limiter struct {
	every time.Duration
	last  time.Time
	held  int
}

// NewLimiter lets a message through at most once per every.
func NewLimiter(every time.Duration) *Limiter { return &Limiter{every: every} }

// Allow reports whether a message may go now, and how many came since the
// last that went (this one included).
func (l *Limiter) Allow(now time.Time) (int, bool) {
	l.held++
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		return 0, false
	}
	n := l.held
	l.last, l.held = now, 0
	return n, true
}

// StartGrace is how long a (re)started program may take to answer its
// first request (an interpreter starting, an FMU initializing).
const StartGrace = 10 * time.Second
