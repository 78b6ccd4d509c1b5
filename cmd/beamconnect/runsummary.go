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
	"beamconnect/models"
	"beamconnect/ports"
)

// runSummary is what a run reports at the end. Its counters come from the
// coupling's one counter table: a key each in the JSON (in the table's
// order, before the other keys), a group each in the text.
type runSummary struct {
	counters       coupling.Values
	Dropped        int64    `json:"dropped"`
	Connected      bool     `json:"connected"` // every vehicle's messages came at all
	TurnaroundP50  float64  `json:"turnaround_p50_us"`
	TurnaroundP99  float64  `json:"turnaround_p99_us"`
	TurnaroundMax  float64  `json:"turnaround_max_us"`
	StatusAtEnd    int      `json:"status_at_end"` // when the run was asked to stop
	FinalStatus    int      `json:"final_status"`  // after it disconnected
	ReplyID        string   `json:"reply_id"`
	Model          string   `json:"model"`
	OutOfLockstepS float64  `json:"out_of_lockstep_s"`
	RecordError    string   `json:"record_error,omitempty"`
	WallS          float64  `json:"wall_s"`
	SimS           float64  `json:"sim_s"`
	TimeSync       string   `json:"time_sync"`
	TimeDilation   float64  `json:"time_dilation"`
	PacingP50      float64  `json:"pacing_error_p50_us"`
	PacingP99      float64  `json:"pacing_error_p99_us"`
	Overruns       int64    `json:"pacing_overruns"`
	Faults         []string `json:"faults"`
	Healthy        bool     `json:"healthy"`
	// Control is the model's own report on how well it controlled.
	Control []models.Figure `json:"control,omitempty"`
	// ModelNotes say how the model ran (an FMU's interface and step) and
	// why it ended, if it did.
	ModelNotes []string `json:"model_notes,omitempty"`

	Emulator *emulator.Summary `json:"emulator,omitempty"`
	// Vehicles holds each vehicle's own figures when the config couples
	// several; the figures above are then the run's (sums; turnaround and
	// times: the worst).
	Vehicles map[string]*vehicleSummary `json:"vehicles,omitempty"`
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
func summarize(sess *coupling.Session, plan *ports.Plan, model string, m models.Model, rec *coupling.Recorder, em *emulated) runSummary {
	if rec != nil {
		rec.Close()
	}
	links := sess.Links()
	sum := runSummary{
		counters: sess.Values(), Connected: true, StatusAtEnd: int(coupling.Connected),
		FinalStatus: int(sess.Status()), ReplyID: string(plan.ReplyID), Model: model,
		TimeSync: plan.TimeSync.String(), TimeDilation: plan.TimeDilation,
		Faults: sess.Faults(), Control: sess.Control(), ModelNotes: sess.ModelNotes(),
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
		sum.StatusAtEnd = int(coupling.Status(sum.StatusAtEnd).Worse(st.StatusAtEnd()))
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
	sum.Healthy = len(sum.Faults) == 0
	return sum
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// counterGroups lay the counters out in the text summary: each line names
// its group and lists its counters with their values.
var counterGroups = []struct {
	name     string
	counters []coupling.Counter
}{
	{"replies", []coupling.Counter{coupling.Messages, coupling.Replies, coupling.NeutralReplies, coupling.Late, coupling.Drained}},
	{"dropped", []coupling.Counter{coupling.Foreign, coupling.Strangers, coupling.WrongSize, coupling.Malformed, coupling.Duplicates, coupling.IDJumps}},
	{"data", []coupling.Counter{coupling.ShortMessages, coupling.LongMessages, coupling.NonFinite, coupling.Clamped, coupling.Overdue}},
	{"neutral for", []coupling.Counter{coupling.NotComputed, coupling.StaleData, coupling.Waiting, coupling.ModelEnded}},
	{"BeamNG", []coupling.Counter{coupling.Connects, coupling.StallsRecovered, coupling.Silences, coupling.Restarts, coupling.SourceChanges, coupling.LockstepLost, coupling.BindFailures}},
	{"model", []coupling.Counter{coupling.ModelFaults, coupling.ModelMissed, coupling.ModelDiscarded, coupling.ModelFailed, coupling.ModelSkipped, coupling.ModelRestarts, coupling.ModelResets}},
	{"solver", []coupling.Counter{coupling.SolverSteps, coupling.SolverRejected, coupling.SolverEvents}},
	{"config", []coupling.Counter{coupling.Reloads, coupling.ReloadErrors}},
	{"recording", []coupling.Counter{coupling.RecordRows, coupling.RecordWritten, coupling.RecordLost}},
	{"log", []coupling.Counter{coupling.LogDropped, coupling.LogFailed}},
}

// counterLine is one group's line: "dropped: foreign 0, wrong size 0, …",
// or "" when the group is optional and all zero.
func counterLine(name string, ks []coupling.Counter, v *coupling.Values, vehicle bool) string {
	var parts []string
	nonzero := false
	for _, k := range ks {
		c := coupling.CounterTable[k]
		if vehicle && c.Run {
			continue
		}
		nonzero = nonzero || v[k] != 0
		parts = append(parts, strings.ReplaceAll(c.Name, "_", " ")+" "+strconv.FormatInt(v[k], 10))
	}
	optional := name == "recording" || name == "log" || name == "config" || name == "data" || name == "neutral for" || name == "solver"
	if len(parts) == 0 || optional && !nonzero {
		return ""
	}
	if name == "" {
		return strings.Join(parts, ", ")
	}
	return name + ": " + strings.Join(parts, ", ")
}

func printRunSummary(c *call, s runSummary) {
	w := c.stdout
	fmt.Fprintf(w, "beamconnect run: %d BeamNG messages, %d replies in %.1f s (model %s, reply ids %s)\n",
		s.counters[coupling.Messages], s.counters[coupling.Replies], s.WallS, s.Model, s.ReplyID)
	fmt.Fprintf(w, "  turnaround p50 %.0f µs, p99 %.0f µs, max %.0f µs\n", s.TurnaroundP50, s.TurnaroundP99, s.TurnaroundMax)
	fmt.Fprintf(w, "  time sync %s (timeDilation %g): %.3f s simulated in %.3f s", s.TimeSync, s.TimeDilation, s.SimS, s.WallS)
	if s.TimeSync == "master" {
		fmt.Fprintf(w, ", pacing error p50 %.1f µs, p99 %.1f µs, overruns %d", s.PacingP50, s.PacingP99, s.Overruns)
	}
	fmt.Fprintln(w)
	for _, g := range counterGroups {
		if line := counterLine(g.name, g.counters, &s.counters, false); line != "" {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	if len(s.Control) > 0 {
		parts := make([]string, len(s.Control))
		for i, f := range s.Control {
			parts[i] = f.String()
		}
		fmt.Fprintf(w, "  control (model %s): %s\n", s.Model, strings.Join(parts, ", "))
	}
	for _, n := range s.ModelNotes {
		fmt.Fprintf(w, "  model %s: %s\n", s.Model, n)
	}
	fmt.Fprintf(w, "  out of lockstep %.3f s; status at the end %d (%s), after disconnecting %d (%s)\n",
		s.OutOfLockstepS, s.StatusAtEnd, coupling.Status(s.StatusAtEnd), s.FinalStatus, coupling.Status(s.FinalStatus))
	if s.Emulator != nil {
		fmt.Fprintf(w, "  emulated BeamNG: %v\n", *s.Emulator)
	}
	for _, name := range sortedKeys(s.Vehicles) {
		vs := s.Vehicles[name]
		fmt.Fprintf(w, "  vehicle %q: %s; turnaround p50 %.0f µs p99 %.0f µs; status at end %s\n", name,
			counterLine("", []coupling.Counter{coupling.Messages, coupling.Replies, coupling.NeutralReplies, coupling.StallsRecovered, coupling.LockstepLost}, &vs.counters, true),
			vs.TurnaroundP50, vs.TurnaroundP99, coupling.Status(vs.StatusAtEnd))
		if vs.Emulator != nil {
			fmt.Fprintf(w, "    emulated BeamNG: %v\n", *vs.Emulator)
		}
	}
	if s.Healthy {
		fmt.Fprintln(w, "healthy: BeamNG coupled in lockstep, no faults")
		return
	}
	fmt.Fprintf(w, "FAULTS (exit status %d):\n", exitFailed)
	for _, f := range s.Faults {
		fmt.Fprintf(w, "  - %s\n", f)
	}
}

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
