package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/coupling"
	"beamconnect/coupling/scene"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/quality"
)

// runSummary is what a run reports at the end. Its counters come from the
// coupling's one counter table: a key each in the JSON (in the table's
// order, before the other keys), a group each in the text.
type runSummary struct {
	counters      coupling.Values
	periodMs      float64
	Dropped       int64   `json:"dropped"`
	Connected     bool    `json:"connected"` // every vehicle's messages came at all
	TurnaroundP50 float64 `json:"turnaround_p50_us"`
	TurnaroundP99 float64 `json:"turnaround_p99_us"`
	TurnaroundMax float64 `json:"turnaround_max_us"`
	StatusAtEnd   int     `json:"status_at_end"` // when the run was asked to stop
	FinalStatus   int     `json:"final_status"`  // after it disconnected
	ReplyID       string  `json:"reply_id"`
	Model         string  `json:"model"`
	// Mode is "lockstep" or "real time" (what a late model step does);
	// ModelSteps how long the model's steps took.
	Mode           string     `json:"mode"`
	ModelTimeoutMs float64    `json:"model_timeout_ms"`
	ModelSteps     modelSteps `json:"model_steps"`
	OutOfLockstepS float64    `json:"out_of_lockstep_s"`
	RecordError    string     `json:"record_error,omitempty"`
	WallS          float64    `json:"wall_s"`
	SimS           float64    `json:"sim_s"`
	TimeSync       string     `json:"time_sync"`
	TimeDilation   float64    `json:"time_dilation"`
	PacingP50      float64    `json:"pacing_error_p50_us"`
	PacingP99      float64    `json:"pacing_error_p99_us"`
	Overruns       int64      `json:"pacing_overruns"`
	Faults         []string   `json:"faults"`
	Healthy        bool       `json:"healthy"`
	// Diagnoses are the classic mistakes diagnosed live (each also a
	// fault line); Notes what the end says that is not a fault.
	Diagnoses []coupling.VehicleDiagnosis `json:"diagnoses"`
	Notes     []string                    `json:"notes"`
	// Control is how well the model controlled: a verdict per loop
	// (beamng.quality's, or a built-in model's own).
	Control []quality.Report `json:"control,omitempty"`
	// ModelNotes say how the model ran (an FMU's interface and step) and
	// why it ended, if it did.
	ModelNotes []string `json:"model_notes,omitempty"`
	// FailOnControl: the run was asked to fail on a control verdict other
	// than good (--fail-on control, beamng.failOn); ControlFailed says why
	// it did (exit status 4), "" when it did not.
	FailOnControl bool   `json:"fail_on_control"`
	ControlFailed string `json:"control_failed,omitempty"`

	Emulator *emulator.Summary `json:"emulator,omitempty"`
	// Vehicles holds each vehicle's own figures when the config couples
	// several; the figures above are then the run's (sums; turnaround and
	// times: the worst).
	Vehicles map[string]*vehicleSummary `json:"vehicles,omitempty"`
}

// modelSteps is how long the model's steps took: in lockstep a slow step
// slows BeamNG, so the summary says, as information, how fast the model
// let the simulation run.
type modelSteps struct {
	Count          int64               `json:"count"`
	P50            float64             `json:"p50_us"`
	P99            float64             `json:"p99_us"`
	Max            float64             `json:"max_us"`
	OverPeriod     int64               `json:"over_period"`
	RealTimeFactor float64             `json:"realtime_factor"`
	Slowest        []coupling.SlowStep `json:"slowest"`
}

// line says it in the text summary.
func (m modelSteps) line(mode string, timeoutMs, periodMs float64) string {
	if m.Count == 0 {
		return fmt.Sprintf("model steps (%s, model timeout %g ms): none", mode, timeoutMs)
	}
	line := fmt.Sprintf("model steps (%s, model timeout %g ms): %d, p50 %.0f µs, p99 %.0f µs, max %.1f ms", mode, timeoutMs, m.Count, m.P50, m.P99, m.Max/1000)
	if m.OverPeriod > 0 {
		line += fmt.Sprintf("; %d longer than the period (%g ms)", m.OverPeriod, periodMs)
		if mode == "lockstep" {
			line += ", each slowing BeamNG"
		}
	}
	if len(m.Slowest) > 0 {
		var at []string
		for _, s := range m.Slowest {
			at = append(at, fmt.Sprintf("%.1f ms at t = %.3f s", s.Ms, s.T))
		}
		line += "; slowest " + strings.Join(at, ", ")
	}
	if m.RealTimeFactor > 0 {
		line += fmt.Sprintf("; the model allowed %s real time", factor(m.RealTimeFactor))
	}
	return line
}

// factor writes a real-time factor with sense for its size.
func factor(f float64) string {
	if f >= 10 {
		return fmt.Sprintf("%.0f×", f)
	}
	return fmt.Sprintf("%.2f×", f)
}

// vehicleSummary is one vehicle's part of a several-vehicle run.
type vehicleSummary struct {
	counters      coupling.Values
	TurnaroundP50 float64           `json:"turnaround_p50_us"`
	TurnaroundP99 float64           `json:"turnaround_p99_us"`
	StatusAtEnd   int               `json:"status_at_end"`
	SimS          float64           `json:"sim_s"`
	Faults        []string          `json:"faults"`
	Emulator      *emulator.Summary `json:"emulator,omitempty"`
}

func (s runSummary) MarshalJSON() ([]byte, error) {
	type plain runSummary
	return withCounters(s.counters, false, plain(s))
}

func (s vehicleSummary) MarshalJSON() ([]byte, error) {
	type plain vehicleSummary
	return withCounters(s.counters, true, plain(s))
}

// withCounters writes v as a JSON object with every counter of the table
// first (a vehicle's: only its own), in the table's order.
func withCounters(vals coupling.Values, vehicle bool, v any) ([]byte, error) {
	rest, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for k, c := range coupling.CounterTable {
		if c.Hidden || vehicle && c.Run {
			continue
		}
		b.WriteString(strconv.Quote(c.Name) + ":" + strconv.FormatInt(vals[k], 10) + ",")
	}
	b.Write(rest[1:])
	return b.Bytes(), nil
}

// summarize reads the session's, the model's and the recording's figures at
// the end of a run, and lists the faults.
func summarize(sess *coupling.Session, plan *ports.Plan, model string, m models.Model, rec *coupling.Recorder, em *scene.Scene) runSummary {
	if rec != nil {
		rec.Close()
	}
	links := sess.Links()
	sum := runSummary{
		counters: sess.Values(), Connected: true, StatusAtEnd: int(ports.Connected),
		FinalStatus: int(sess.Status()), ReplyID: string(plan.ReplyID), Model: model, periodMs: plan.Period * 1000,
		TimeSync: plan.TimeSync.String(), TimeDilation: plan.TimeDilation,
		Faults: sess.Faults(), Control: sess.FinalControl(), ModelNotes: sess.ModelNotes(),
	}
	mt := sess.ModelTiming()
	sum.Mode, sum.ModelTimeoutMs = mt.Mode, float64(mt.Timeout.Microseconds())/1000
	sum.ModelSteps = modelSteps{Count: mt.Steps, P50: us(mt.P50), P99: us(mt.P99), Max: us(mt.Max),
		OverPeriod: mt.OverPeriod, RealTimeFactor: mt.RealTimeFactor, Slowest: mt.Slowest}
	if sum.ModelSteps.Slowest == nil {
		sum.ModelSteps.Slowest = []coupling.SlowStep{}
	}
	sum.Dropped = sum.counters.Dropped()
	sum.OutOfLockstepS = time.Duration(sum.counters[coupling.OutOfLockstep]).Seconds()
	if len(links) > 1 {
		sum.Vehicles = map[string]*vehicleSummary{}
	}
	for v, l := range links {
		st := l.Stats()
		sync := l.Sync()
		sum.Connected = sum.Connected && st.Get(coupling.Connects) > 0
		sum.TurnaroundP50 = max(sum.TurnaroundP50, us(st.Turnaround.Quantile(0.5)))
		sum.TurnaroundP99 = max(sum.TurnaroundP99, us(st.Turnaround.Quantile(0.99)))
		sum.TurnaroundMax = max(sum.TurnaroundMax, us(st.Turnaround.Max()))
		sum.PacingP50 = max(sum.PacingP50, us(sync.PacingError(0.5)))
		sum.PacingP99 = max(sum.PacingP99, us(sync.PacingError(0.99)))
		sum.Overruns += sync.Overruns
		sum.SimS = max(sum.SimS, l.SimTime())
		sum.StatusAtEnd = int(ports.Status(sum.StatusAtEnd).Worse(st.StatusAtEnd()))
		if sum.Vehicles == nil {
			sum.Emulator = em.Summary(v)
			continue
		}
		vs := &vehicleSummary{counters: st.Snapshot(), TurnaroundP50: us(st.Turnaround.Quantile(0.5)),
			TurnaroundP99: us(st.Turnaround.Quantile(0.99)), StatusAtEnd: int(st.StatusAtEnd()), SimS: l.SimTime(),
			Faults: l.Faults(), Emulator: em.Summary(v)}
		if vs.Faults == nil {
			vs.Faults = []string{}
		}
		sum.Vehicles[l.Name()] = vs
	}
	if rec != nil && rec.Err() != nil {
		sum.RecordError = rec.Err().Error()
	}
	if sum.Faults == nil {
		sum.Faults = []string{}
	}
	sum.Diagnoses = sess.Diagnoses(time.Now())
	if sum.Diagnoses == nil {
		sum.Diagnoses = []coupling.VehicleDiagnosis{}
	}
	sum.Notes = sess.Notes()
	if sum.Notes == nil {
		sum.Notes = []string{}
	}
	sum.Healthy = len(sum.Faults) == 0
	if !sum.Healthy {
		// A loop is never called good in a run with faults.
		for i := range sum.Control {
			sum.Control[i] = sum.Control[i].InFaultedRun(sum.Faults[0])
		}
	}
	return sum
}

// judgeControl sets ControlFailed when failOn asks the run to fail on a
// control verdict other than good: every loop must be good, and there
// must be a loop.
func (s *runSummary) judgeControl(failOn bool) {
	s.FailOnControl = failOn
	if !failOn {
		return
	}
	if len(s.Control) == 0 {
		s.ControlFailed = "no control verdict: the config names no loop in beamng.quality, and model " + s.Model + " judges none of its own"
		return
	}
	var bad []string
	for _, r := range s.Control {
		if !r.Good() {
			bad = append(bad, r.Name+" "+r.Verdict+": "+r.Why)
		}
	}
	if len(bad) > 0 {
		s.ControlFailed = strings.Join(bad, "; ")
	}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// counterGroups lay the counters out in the text summary, a line each.
var counterGroups = []struct {
	name     string
	counters []coupling.Counter
	// always: the line is printed, "none" when every counter is 0.
	always bool
}{
	{"dropped", []coupling.Counter{coupling.Foreign, coupling.Strangers, coupling.WrongSize, coupling.Malformed, coupling.Duplicates, coupling.IDJumps}, true},
	{"data", []coupling.Counter{coupling.LongMessages, coupling.NonFinite, coupling.Clamped, coupling.InputsClamped, coupling.Overdue, coupling.Late, coupling.Drained}, false},
	{"BeamNG", []coupling.Counter{coupling.Connects, coupling.StallsRecovered, coupling.Silences, coupling.Restarts, coupling.SourceChanges, coupling.LockstepLost, coupling.BindFailures}, true},
	{"model", []coupling.Counter{coupling.ModelFaults, coupling.ModelDiscarded, coupling.ModelFailed, coupling.ModelAbandoned, coupling.ModelRestarts, coupling.ModelResets, coupling.ModelNotReset, coupling.ModelMissed, coupling.ModelSkipped, coupling.ModelOld}, true},
	{"solver", []coupling.Counter{coupling.SolverSteps, coupling.SolverRejected, coupling.SolverEvents}, false},
	{"config", []coupling.Counter{coupling.Reloads, coupling.ReloadErrors}, false},
	{"recording", []coupling.Counter{coupling.RecordRows, coupling.RecordWritten, coupling.RecordLost}, false},
	{"log", []coupling.Counter{coupling.LogDropped, coupling.LogFailed}, false},
}

// counterLine is one group's line: its counters that are not 0, those
// normal in a healthy run apart ("model: none; normal in a healthy run:
// model missed 4"), or "" when there is nothing to say. policy is the
// reply-id policy.
func counterLine(name string, ks []coupling.Counter, v *coupling.Values, policy string, always, vehicle bool) string {
	said, normal := counterParts(ks, v, policy, vehicle)
	if len(said)+len(normal) == 0 && !always {
		return ""
	}
	line := "none"
	if name == "model" {
		line = "no faults"
	}
	if len(said) > 0 {
		line = strings.Join(said, ", ")
	}
	if len(normal) > 0 {
		line += "; normal in a healthy run: " + strings.Join(normal, ", ")
	}
	if name == "" {
		return line
	}
	return name + ": " + line
}

// counterParts are the counters of ks that are not 0, as "name value":
// those that say something went wrong, and those normal in a healthy run.
func counterParts(ks []coupling.Counter, v *coupling.Values, policy string, vehicle bool) (said, normal []string) {
	for _, k := range ks {
		c := coupling.CounterTable[k]
		if vehicle && c.Run || v[k] == 0 {
			continue
		}
		part := strings.ReplaceAll(c.Name, "_", " ") + " " + strconv.FormatInt(v[k], 10)
		// A counter whose problem line says nothing of this value (a few
		// steps without controls, the echo policy's start-up stall) is
		// normal too.
		if c.Normal || c.Problem != nil && c.Problem(v, k, policy) == "" {
			normal = append(normal, part)
		} else {
			said = append(said, part)
		}
	}
	return said, normal
}

func printRunSummary(c *call, s runSummary) {
	width := summaryWidth(c)
	out := func(indent, first string, format string, args ...any) {
		fmt.Fprint(c.stdout, wrapText(fmt.Sprintf(format, args...), width, first, indent))
	}
	line := func(format string, args ...any) { out("    ", "  ", format, args...) }
	out("  ", "", "beamconnect run: %d BeamNG messages, %d replies in %.1f s (model %s, reply ids %s, %s)",
		s.counters[coupling.Messages], s.counters[coupling.Replies], s.WallS, s.Model, s.ReplyID, s.Mode)
	line("turnaround p50 %.0f µs, p99 %.0f µs, max %.0f µs", s.TurnaroundP50, s.TurnaroundP99, s.TurnaroundMax)
	line("%s", s.ModelSteps.line(s.Mode, s.ModelTimeoutMs, s.periodMs))
	sync := fmt.Sprintf("time sync %s (timeDilation %g): %.3f s simulated in %.3f s", s.TimeSync, s.TimeDilation, s.SimS, s.WallS)
	if s.TimeSync == "master" {
		sync += fmt.Sprintf(", pacing error p50 %.1f µs, p99 %.1f µs, overruns %d", s.PacingP50, s.PacingP99, s.Overruns)
	}
	line("%s", sync)
	for _, r := range s.Control {
		line("control %s", r.Line())
	}
	if n := s.counters[coupling.NeutralReplies]; n > 0 {
		said, normal := counterParts([]coupling.Counter{coupling.NotComputed, coupling.NonFinite, coupling.FaultedReplies, coupling.StaleData, coupling.Waiting, coupling.ShortMessages, coupling.ModelEnded}, &s.counters, s.ReplyID, false)
		for i := range normal {
			normal[i] += " (normal in a healthy run)"
		}
		line("neutral replies: %d of %d, instead of the model's controls: %s", n, s.counters[coupling.Replies], strings.Join(append(said, normal...), ", "))
	}
	for _, g := range counterGroups {
		if l := counterLine(g.name, g.counters, &s.counters, s.ReplyID, g.always, false); l != "" {
			line("%s", l)
		}
	}
	for _, n := range s.ModelNotes {
		line("model %s: %s", s.Model, n)
	}
	line("out of lockstep %.3f s; status at the end %d (%s), after disconnecting %d (%s)",
		s.OutOfLockstepS, s.StatusAtEnd, ports.Status(s.StatusAtEnd), s.FinalStatus, ports.Status(s.FinalStatus))
	if s.Emulator != nil {
		line("emulated BeamNG: %v", *s.Emulator)
	}
	for _, name := range sortedKeys(s.Vehicles) {
		vs := s.Vehicles[name]
		line("vehicle %q: messages %d, replies %d, neutral %d; turnaround p50 %.0f µs p99 %.0f µs; status at end %s", name,
			vs.counters[coupling.Messages], vs.counters[coupling.Replies], vs.counters[coupling.NeutralReplies],
			vs.TurnaroundP50, vs.TurnaroundP99, ports.Status(vs.StatusAtEnd))
		if l := counterLine("", []coupling.Counter{coupling.StallsRecovered, coupling.LockstepLost, coupling.Silences}, &vs.counters, s.ReplyID, false, true); l != "" {
			out("      ", "    ", "BeamNG: %s", l)
		}
		if vs.Emulator != nil {
			out("      ", "    ", "emulated BeamNG: %v", *vs.Emulator)
		}
	}
	for _, n := range s.Notes {
		out("    ", "  note: ", "%s", n)
	}
	if s.Healthy && s.ControlFailed != "" {
		fmt.Fprintf(c.stdout, "healthy, but CONTROL NOT GOOD (exit status %d, as --fail-on control asks):\n", exitControl)
		out("    ", "  - ", "%s", s.ControlFailed)
		return
	}
	if s.Healthy {
		fmt.Fprintln(c.stdout, "healthy: BeamNG coupled in lockstep, no faults")
		return
	}
	fmt.Fprintf(c.stdout, "FAULTS (exit status %d):\n", exitFailed)
	for _, f := range s.Faults {
		out("    ", "  - ", "%s", f)
	}
}

// summaryWidth is the width the summary is wrapped to: the terminal's
// (80 when it is not one), at most 120 so lines stay readable.
func summaryWidth(c *call) int { return min(terminalWidth(c), 120) }

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
