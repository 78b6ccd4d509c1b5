package builtin

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"beamconnect/beamng"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/quality"
	"beamconnect/relative"
)

// Follow is adaptive cruise control for two vehicles: the lead drives a
// speed profile (modelParams.leadProfile), the ego follows it keeping a
// time gap. The ego's speed target is the lead's speed plus a correction
// that closes the gap error,
//
//	v* = v_lead + kGap·(gap − max(standstill, timeGap·v_ego)), clamped to [0, maxSpeed],
//
// and a PI controller on the pedals tracks v*, as cruise-pedals does. The
// gap is the config's "gap" field of the ego to the lead (a cross-vehicle
// property, centre to centre along the ego's heading).
type Follow struct {
	egoName, leadName                   string // restart-only: the binding
	timeGap, standstill, kGap, maxSpeed float64
	profile                             []profilePoint

	refs      followRefs
	ego, lead pi
	lastT, t0 float64
	quality   *quality.Tracker
	gapNow    atomic.Uint64 // float64 bits
	minTTC    atomic.Uint64
	signals
}

// followRefs are what follow is bound to in a plan.
type followRefs struct {
	egoSpeed, leadSpeed                            ref
	gap                                            ref
	egoThrottle, egoBrake, leadThrottle, leadBrake ref
	vehicles
}

var followParams = numbers{names: []string{"timeGap", "standstill", "kGap", "maxSpeed", "kp", "ki"}, defs: []float64{1.8, 5, 0.3, 35, 0.3, 0.05}}

// timeGapBand is where follow counts as settled: its time gap within
// 0.2 s (a lead that changes its speed moves the gap a little all along).
const timeGapBand = 0.2

type profilePoint struct{ t, v float64 }

// DefaultLeadProfile drives the lead at 20 m/s, slows it to 12 m/s at 20 s
// and speeds it up to 25 m/s at 40 s.
var DefaultLeadProfile = []string{"0:20", "20:12", "40:25"}

func newFollow(b *binder, params models.Params) (models.Model, error) {
	v, err := followParams.read(params)
	if err != nil {
		return nil, err
	}
	profile, err := parseProfile(params["leadProfile"])
	if err != nil {
		return nil, err
	}
	m := &Follow{ego: pi{lo: -1, hi: 1}, lead: pi{lo: -1, hi: 1}, lastT: math.NaN(), t0: math.NaN(), timeGap: math.NaN(),
		quality: quality.New(quality.Options{Band: timeGapBand, Name: "time gap", Unit: "s"}), signals: newSignals(followSignals)}
	m.egoName, _ = params["ego"].(string)
	m.leadName, _ = params["lead"].(string)
	m.tune(v, profile)
	m.gapNow.Store(math.Float64bits(math.NaN()))
	m.minTTC.Store(math.Float64bits(math.Inf(1)))
	m.refs = m.bind(b)
	return m, nil
}

// Rebind moves follow to a reloaded plan (its ego and lead stay: they are
// restart-only) and parameters; its controllers keep their integrators.
func (m *Follow) Rebind(p *ports.Plan, running, params models.Params) (func(), error) {
	r, v, err := prepare("follow", p, running, params, followParams, m.bind)
	if err != nil {
		return nil, err
	}
	profile, err := parseProfile(params["leadProfile"])
	if err != nil {
		return nil, err
	}
	return func() { m.refs = r; m.tune(v, profile) }, nil
}

func (m *Follow) tune(v []float64, profile []profilePoint) {
	m.timeGap, m.standstill, m.kGap, m.maxSpeed, m.profile = v[0], v[1], v[2], v[3], profile
	m.ego.retune(v[4], v[5])
	m.lead.retune(v[4], v[5])
}

// Reads reports whether follow reads vehicle v's data.
func (m *Follow) Reads(v int) bool { return m.refs.Reads(v) }

// parseProfile reads "t:speed" points (s, m/s); the speed holds from each
// point to the next.
func parseProfile(v any) ([]profilePoint, error) {
	list := DefaultLeadProfile
	if v != nil {
		l, ok := v.([]string)
		if !ok || len(l) == 0 {
			return nil, fmt.Errorf("modelParams.leadProfile: expected an array of \"seconds:speed\" strings such as [\"0:20\", \"20:12\"]")
		}
		list = l
	}
	var out []profilePoint
	for _, s := range list {
		ts, vs, ok := strings.Cut(s, ":")
		t, err1 := strconv.ParseFloat(ts, 64)
		sp, err2 := strconv.ParseFloat(vs, 64)
		if !ok || err1 != nil || err2 != nil || t < 0 || sp < 0 {
			return nil, fmt.Errorf("modelParams.leadProfile: %q: expected \"seconds:speed\" with both ≥ 0, e.g. \"20:12\"", s)
		}
		out = append(out, profilePoint{t, sp})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].t < out[j].t })
	return out, nil
}

// vehicleIndex finds a vehicle by name; def when the name is empty.
func vehicleIndex(p *ports.Plan, name string, def int) int {
	if name == "" {
		return def
	}
	for i, v := range p.Vehicles {
		if v.Name == name {
			return i
		}
	}
	return -1
}

func (m *Follow) bind(b *binder) followRefs {
	var r followRefs
	ego := vehicleIndex(b.plan, m.egoName, 0)
	lead := vehicleIndex(b.plan, m.leadName, 1)
	switch {
	case len(b.plan.Vehicles) < 2:
		b.missing = append(b.missing, "two vehicles in beamng.vehicles (follow couples an ego and a lead)")
		return r
	case ego < 0 || lead < 0 || ego == lead:
		b.missing = append(b.missing, fmt.Sprintf("two different vehicles named by modelParams.ego and .lead (got %q and %q)", m.egoName, m.leadName))
		return r
	}
	r.egoSpeed = b.needFor(beamng.FromBeamNG, "groundspeed", ego)
	r.leadSpeed = b.needFor(beamng.FromBeamNG, "groundspeed", lead)
	r.egoThrottle = b.needFor(beamng.ToBeamNG, "throttle", ego)
	r.egoBrake = b.needFor(beamng.ToBeamNG, "brake", ego)
	r.leadThrottle = b.needFor(beamng.ToBeamNG, "throttle", lead)
	r.leadBrake = b.needFor(beamng.ToBeamNG, "brake", lead)
	r.gap = b.needRelative(relative.Gap, ego, lead)
	r.vehicles = b.reads
	return r
}

func (m *Follow) leadTarget(t float64) float64 {
	v := m.profile[0].v
	for _, p := range m.profile {
		if t >= p.t {
			v = p.v
		}
	}
	return v
}

func (m *Follow) Step(t float64, out, in [][]float64) bool {
	dt := stepDt(&m.lastT, t)
	r := &m.refs
	ve, vl, gap := r.egoSpeed.Get(out), r.leadSpeed.Get(out), r.gap.Get(out)
	if ve != ve || vl != vl {
		return false // no speeds to act on
	}
	if math.IsNaN(m.t0) {
		m.t0 = t
	}
	lead := m.lead.step(m.leadTarget(t-m.t0)-vl, dt)
	r.leadThrottle.Set(in, math.Max(0, lead))
	r.leadBrake.Set(in, math.Max(0, -lead))

	target, gapErr, tg := m.maxSpeed, math.NaN(), math.NaN()
	if gap == gap { // the gap is invalid until both vehicles have reported
		gapErr = gap - math.Max(m.standstill, m.timeGap*ve)
		target = vl + m.kGap*gapErr
		m.observe(t, gap, ve, vl)
		if ve > 0.5 {
			tg = gap / ve
		}
	}
	target = math.Min(m.maxSpeed, math.Max(0, target))
	u := m.ego.step(target-ve, dt)
	r.egoThrottle.Set(in, math.Max(0, u))
	r.egoBrake.Set(in, math.Max(0, -u))
	m.values[0], m.values[1], m.values[2], m.values[3] = m.leadTarget(t-m.t0), target, gapErr, tg
	return true
}

// observe keeps the follow model's figures: the time gap now and its
// error, and the smallest time to collision (while the ego closes in).
func (m *Follow) observe(t, gap, ve, vl float64) {
	if ve > 0.5 {
		tg := gap / ve
		m.gapNow.Store(math.Float64bits(tg))
		m.quality.Observe(t, tg, m.timeGap)
	}
	if ve > vl {
		if ttc := gap / (ve - vl); ttc < math.Float64frombits(m.minTTC.Load()) {
			m.minTTC.Store(math.Float64bits(ttc))
		}
	}
}
