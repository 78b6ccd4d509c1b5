package bench

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/coupling/scene"
	"beamconnect/models/kinds"
)

// SoakFaults are the faults a soak inflicts unless --fault names others:
// every kind, at rates that make each happen a few to a few hundred times
// in 10 minutes at 2000 messages a second.
var SoakFaults = []string{
	"drop-replies=0.000005", "drop-messages=0.000005", "truncate-messages=0.000005",
	"dup-replies=0.0005", "dup-messages=0.0005", "delay-replies=1ms:0.0005", "delay-messages=1ms:0.0005",
	"truncate-replies=0.0001", "reorder-messages=0.000002", "garbage=0.0005", "seed=1",
}

// SoakResult is what a soak reports.
type SoakResult struct {
	Duration        string             `json:"duration"`
	Faults          []string           `json:"faults"`
	Sent            int64              `json:"beamng_sent"`
	Answered        int64              `json:"answered"`
	Unanswered      int64              `json:"unanswered"`
	LostToFaults    int64              `json:"unanswered_dropped_or_cut_by_faults"`
	Drained         int64              `json:"unanswered_stale_after_stalls"`
	LostOther       int64              `json:"unanswered_other"`
	Accepted        int64              `json:"beamng_accepted"`
	Rejected        int64              `json:"beamng_rejected"`
	Stalls          int64              `json:"stalls"`
	LockstepLost    int64              `json:"lockstep_lost"`
	OutOfLockstepS  float64            `json:"out_of_lockstep_s"`
	Episodes        int                `json:"episodes_out_of_lockstep"`
	RecoveryP50ms   float64            `json:"recovery_p50_ms"`
	RecoveryMaxms   float64            `json:"recovery_max_ms"`
	EndedInLockstep bool               `json:"ended_in_lockstep"`
	Dropped         int64              `json:"dropped_datagrams"`
	RecordRows      int64              `json:"record_rows"`
	RecordLost      int64              `json:"record_lost"`
	HeapStartMiB    float64            `json:"heap_in_use_start_mib"`
	HeapEndMiB      float64            `json:"heap_in_use_end_mib"`
	HeapMaxMiB      float64            `json:"heap_in_use_max_mib"`
	RSSStartMiB     float64            `json:"rss_start_mib"`
	RSSEndMiB       float64            `json:"rss_end_mib"`
	AllocsPerMsg    float64            `json:"allocs_per_message"`
	GCs             uint32             `json:"gcs"`
	TurnaroundP50us float64            `json:"turnaround_p50_us"`
	TurnaroundP99us float64            `json:"turnaround_p99_us"`
	Injected        *emulator.Injected `json:"injected,omitempty"`
	ReportedFaults  []string           `json:"reported"`
}

// episodeTracker follows BeamNG's own counters step by step: an episode
// out of lockstep is a stall (a 2 s timeout) or a negative window (running
// free), from its first such step to the next step in lockstep.
type episodeTracker struct {
	mu    sync.Mutex
	since time.Time
	ds    []time.Duration
	open  bool
}

func (e *episodeTracker) step(r *emulator.StepRecord) {
	bad := r.TimedOut || r.MaxRecvID > r.SendCtr
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case bad && e.since.IsZero():
		e.since = r.Start
	case !bad && !e.since.IsZero():
		e.ds = append(e.ds, r.Start.Sub(e.since))
		e.since = time.Time{}
	}
}

func (e *episodeTracker) end() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.since.IsZero() {
		e.open = true
		e.ds = append(e.ds, time.Since(e.since))
	}
	return slices.Clone(e.ds)
}

// Soak runs the coupling (the cruise-pedals model, with a recording)
// against BeamNG's side paced in real time at its fastest rate (a message
// every 0.5 ms physics step) until ctx ends, with faults on (emulator
// fault specs; nil: SoakFaults), and reports what was lost, the stalls,
// the time to recover and the memory growth. d bounds it in the machine's
// time; sim, when set, ends it after that much of BeamNG's simulated time
// (then d only bounds it: a soak bounded by BeamNG's time sends the same
// messages, and meets the same seeded faults, on any machine).
func Soak(ctx context.Context, d, sim time.Duration, faults []string, log *slog.Logger) (SoakResult, error) {
	if len(faults) == 0 {
		faults = SoakFaults
	}
	var f emulator.Faults
	for _, spec := range faults {
		if err := emulator.ParseFault(spec, &f); err != nil {
			return SoakResult{}, fmt.Errorf("--fault: %w", err)
		}
	}
	cfg, err := config.Parse("soak.json", []byte(`{"version": 2,
		"outputs": [{"updatePeriodMs": 0.5, "ports": [[{"propertyName": "groundspeed"}], [{"propertyName": "rpm"}, {"propertyName": "gear"}]]}],
		"inputs": [{"ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}],
		"beamng": {"model": "cruise-pedals", "modelParams": {"setSpeed": 20}}}`))
	if err != nil {
		return SoakResult{}, err
	}
	plan, _ := config.Compile(cfg)
	model, err := kinds.New(plan.Model, plan.ModelParams, plan, log)
	if err != nil {
		return SoakResult{}, err
	}
	rec, err := os.CreateTemp("", "beamconnect-soak-*.csv")
	if err != nil {
		return SoakResult{}, err
	}
	defer os.Remove(rec.Name())
	defer rec.Close()
	recorder := coupling.NewRecorder(rec, plan, log)
	sess, err := coupling.New(coupling.Options{Plan: plan, Model: model, Log: log, Local: netip.MustParseAddrPort("127.0.0.1:0"), Record: recorder})
	if err != nil {
		return SoakResult{}, err
	}
	var eps episodeTracker
	em, err := scene.Start(sess, plan, scene.Options{Log: log, Tune: func(_ int, cfg *emulator.Config) {
		cfg.Faults, cfg.Trace = f, eps.step
		if sim > 0 {
			cfg.Steps = int64(math.Round(sim.Seconds() / plan.PhysicsDt))
		}
	}})
	if err != nil {
		return SoakResult{}, err
	}
	defer em.Close()

	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	st := sess.Link(0).Stats()
	wg.Go(func() { sess.Run(ctx) })
	mem := &memWatch{}
	wg.Go(func() { mem.watch(ctx, log, st) })
	if sim > 0 {
		log.Info("soaking", "simulated", sim, "at_most", d, "faults", strings.Join(faults, " "))
	} else {
		log.Info("soaking", "for", d, "faults", strings.Join(faults, " "))
	}
	em.Run(ctx)
	cancel()
	wg.Wait()
	recorder.Close()
	length := d.String()
	if sim > 0 {
		length = sim.String() + " of BeamNG's time"
	}
	r := soakReport(length, faults, *em.Summary(0), st, &eps, mem, recorder)
	r.ReportedFaults = sess.Faults()
	return r, nil
}

// memWatch samples the heap after a warm-up, then every 10 s.
type memWatch struct {
	warm, end runtime.MemStats
	warmMsgs  int64
	heapMax   uint64
	warmRSS   int64
}

func (m *memWatch) watch(ctx context.Context, log *slog.Logger, st *coupling.Stats) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	var ms runtime.MemStats
	first := true
	for {
		select {
		case <-ctx.Done():
			runtime.ReadMemStats(&m.end)
			return
		case <-t.C:
			runtime.ReadMemStats(&ms)
			m.heapMax = max(m.heapMax, ms.HeapInuse)
			if first {
				m.warm, m.warmMsgs, m.warmRSS, first = ms, st.Get(coupling.Messages), currentRSS(), false
			}
			log.Info("soak", "messages", st.Get(coupling.Messages), "heap_in_use_mib", float64(ms.HeapInuse)/(1<<20),
				"stalls", st.Get(coupling.StallsRecovered), "lockstep_lost", st.Get(coupling.LockstepLost))
		}
	}
}

// soakReport is what a soak measured.
func soakReport(length string, faults []string, sum emulator.Summary, st *coupling.Stats, eps *episodeTracker, mem *memWatch, rec *coupling.Recorder) SoakResult {
	ds := eps.end()
	v := st.Snapshot()
	r := SoakResult{
		Duration: length, Faults: faults,
		Sent: sum.Sent, Answered: v[coupling.Replies], Accepted: sum.Accepted, Rejected: sum.Rejected,
		Stalls: sum.Stalls, LockstepLost: v[coupling.LockstepLost], OutOfLockstepS: time.Duration(v[coupling.OutOfLockstep]).Seconds(),
		Episodes: len(ds), EndedInLockstep: !eps.open, Dropped: v.Dropped(), Drained: v[coupling.Drained],
		RecordRows: rec.Written(), RecordLost: v[coupling.Replies] - rec.Written(),
		HeapEndMiB: float64(mem.end.HeapInuse) / (1 << 20), HeapMaxMiB: float64(mem.heapMax) / (1 << 20),
		RSSEndMiB: float64(currentRSS()) / 1024, GCs: mem.end.NumGC - mem.warm.NumGC,
		TurnaroundP50us: us(st.Turnaround.Quantile(0.5)), TurnaroundP99us: us(st.Turnaround.Quantile(0.99)),
		Injected: sum.Injected,
	}
	if mem.warm.HeapInuse > 0 {
		r.HeapStartMiB = float64(mem.warm.HeapInuse) / (1 << 20)
		r.RSSStartMiB = float64(mem.warmRSS) / 1024
		if n := v[coupling.Messages] - mem.warmMsgs; n > 0 {
			r.AllocsPerMsg = float64(mem.end.Mallocs-mem.warm.Mallocs) / float64(n)
		}
	}
	r.Unanswered = r.Sent - r.Answered
	if in := sum.Injected; in != nil {
		r.LostToFaults = in.DroppedMessages + in.TruncatedMessages
	}
	r.LostOther = r.Unanswered - r.LostToFaults - r.Drained
	if len(ds) > 0 {
		slices.Sort(ds)
		r.RecoveryP50ms = float64(ds[len(ds)/2].Microseconds()) / 1000
		r.RecoveryMaxms = float64(ds[len(ds)-1].Microseconds()) / 1000
	}
	return r
}
