package monitor

import (
	"beamconnect/ports"
	"encoding/json"
	"time"

	"beamconnect/coupling"
	"beamconnect/quality"
)

// state is what the page shows besides the scope, refreshed by sample.
type state struct {
	Uptime     float64 `json:"uptime_s"`
	Config     string  `json:"config"`
	Protocol   string  `json:"protocol"`
	Model      string  `json:"model"`
	PeriodMs   float64 `json:"period_ms"`
	TimeSync   string  `json:"time_sync"`
	Status     int     `json:"status"`
	StatusText string  `json:"status_text"`
	Healthy    bool    `json:"healthy"`
	// Ended is set in the last state of a run that is over: the page then
	// says so, and that its figures are the run's last.
	Ended        bool           `json:"ended"`
	Problems     []string       `json:"problems"`
	Vehicles     []vehicleState `json:"vehicles"`
	Reloads      int64          `json:"reloads"`
	ReloadErrors int64          `json:"reload_errors"`
	History      []change       `json:"history"`
	Events       []event        `json:"events"`
	ScopeDropped int64          `json:"scope_dropped"`
	// Control is how well the model controls: a verdict per loop.
	Control []quality.Report `json:"control,omitempty"`
}

type vehicleState struct {
	Name            string  `json:"name"`
	Status          int     `json:"status"`
	StatusText      string  `json:"status_text"`
	Time            float64 `json:"time_s"` // local time (the run's time base)
	Messages        int64   `json:"messages"`
	Replies         int64   `json:"replies"`
	Rate            float64 `json:"messages_per_s"`
	TurnaroundP50   float64 `json:"turnaround_p50_us"`
	TurnaroundP99   float64 `json:"turnaround_p99_us"`
	StallsRecovered int64   `json:"stalls_recovered"`
	Overdue         int64   `json:"overdue"`
	Dropped         int64   `json:"dropped"`
	Late            int64   `json:"late_replies"`
	Silences        int64   `json:"silences"`
	ModelFaults     int64   `json:"model_faults"`
	LockstepLost    int64   `json:"lockstep_lost"`
	OutOfLockstep   bool    `json:"out_of_lockstep"`
}

// sample reads the counters and publishes a new state.
func (s *Server) sample(now time.Time) {
	s.sampleMu.Lock()
	defer s.sampleMu.Unlock()
	p := s.opt.Plan
	st := state{
		Uptime: now.Sub(s.start).Seconds(), Config: p.Source, Protocol: p.Protocol.String(), Model: p.Model,
		PeriodMs: p.Period * 1000, TimeSync: p.TimeSync.String(), ScopeDropped: s.opt.Ring.Dropped(),
	}
	sess := s.opt.Session
	overall := sess.Status()
	st.Status, st.StatusText = int(overall), overall.String()
	st.Ended = s.ended.Load()
	if overall != ports.Connected && !st.Ended {
		// Not connected at the end is how a run ends, not a problem.
		st.Problems = append(st.Problems, "not connected: "+overall.String())
	}
	run := sess.Values()
	st.Reloads, st.ReloadErrors = run[coupling.Reloads], run[coupling.ReloadErrors]
	links := sess.Links()
	for i, c := range links {
		cs := c.Stats()
		v := cs.Snapshot()
		n := v[coupling.Messages]
		r := &s.rates[i]
		if dt := now.Sub(r.at).Seconds(); dt > 0.1 || r.at.IsZero() {
			if !r.at.IsZero() {
				r.v = float64(n-r.n) / dt
			}
			r.n, r.at = n, now
		}
		lost, _ := cs.LockstepLostNow()
		vs := vehicleState{
			Name: c.Name(), Status: int(c.Status()), StatusText: c.Status().String(),
			Time:     cs.LocalTime(),
			Messages: n, Replies: v[coupling.Replies], Rate: r.v,
			TurnaroundP50: us(cs.Turnaround.Quantile(0.5)), TurnaroundP99: us(cs.Turnaround.Quantile(0.99)),
			StallsRecovered: v[coupling.StallsRecovered], Overdue: v[coupling.Overdue], Dropped: v.Dropped(),
			Late: v[coupling.Late], Silences: v[coupling.Silences], ModelFaults: run[coupling.ModelFaults],
			LockstepLost: v[coupling.LockstepLost], OutOfLockstep: lost,
		}
		if lost {
			who := ""
			if len(links) > 1 {
				who = vs.Name + ": "
			}
			st.Problems = append(st.Problems, who+"BeamNG is out of lockstep now")
		}
		st.Vehicles = append(st.Vehicles, vs)
	}
	faults := sess.Problems()
	st.Problems = append(st.Problems, faults...)
	st.Control = sess.Control()
	if st.Ended {
		st.Control = sess.FinalControl()
	}
	if len(faults) > 0 {
		// The page never calls a loop good in a run with faults.
		for i := range st.Control {
			st.Control[i] = st.Control[i].InFaultedRun(faults[0])
		}
	}
	st.Healthy = len(st.Problems) == 0
	s.mu.Lock()
	st.History, st.Events = s.history, s.events
	b, err := json.Marshal(st)
	if err == nil {
		s.state = b
		s.seq++
	}
	s.mu.Unlock()
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
