package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/models"
	"beamconnect/ports"
)

// soakFaults are the faults a soak inflicts unless --fault names others:
// every kind, at rates that make each happen a few to a few hundred times
// in 10 minutes at 2000 messages a second.
var soakFaults = []string{
	"drop-replies=0.000005", "drop-messages=0.000005", "truncate-messages=0.000005",
	"dup-replies=0.0005", "dup-messages=0.0005", "delay-replies=1ms:0.0005", "delay-messages=1ms:0.0005",
	"truncate-replies=0.0001", "reorder-messages=0.000002", "garbage=0.0005", "seed=1",
}

// soakResult is what a soak reports.
type soakResult struct {
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

// soakCmd runs the coupling against BeamNG's side paced in real time at
// its fastest rate (a message every 0.5 ms physics step) for d, with
// faults on, and reports what was lost, the stalls, the time to recover
// and the memory growth.
func soakCmd(c *call, d time.Duration, faults []string) int {
	if len(faults) == 0 {
		faults = soakFaults
	}
	var f emulator.Faults
	for _, spec := range faults {
		if err := emulator.ParseFault(spec, &f); err != nil {
			fmt.Fprintf(c.stderr, "%s bench: --fault: %v\n", programName, err)
			return exitUsage
		}
	}
	cfg, err := config.Parse("soak.json", []byte(`{"version": 2,
		"outputs": [{"updatePeriodMs": 0.5, "ports": [[{"propertyName": "groundspeed"}], [{"propertyName": "rpm"}, {"propertyName": "gear"}]]}],
		"inputs": [{"ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}],
		"beamng": {"model": "cruise-pedals", "modelParams": {"setSpeed": 20}}}`))
	if err != nil {
		return c.fail("bench", err)
	}
	plan, _ := ports.Compile(cfg)
	model, err := models.New(plan.Model, plan.ModelParams, plan, c.log)
	if err != nil {
		return c.fail("bench", err)
	}
	rec, err := os.CreateTemp("", "beamconnect-soak-*.csv")
	if err != nil {
		return c.fail("bench", err)
	}
	defer os.Remove(rec.Name())
	defer rec.Close()
	recorder := coupling.NewRecorder(rec, plan, c.log)
	sess, err := coupling.New(coupling.Options{Plan: plan, Model: model, Log: c.log, Local: netip.MustParseAddrPort("127.0.0.1:0"), Record: recorder})
	if err != nil {
		return c.fail("bench", err)
	}
	var eps episodeTracker
	em, err := emulate(sess, plan, false, c.log, func(_ int, cfg *emulator.Config) { cfg.Faults, cfg.Trace = f, eps.step }, nil)
	if err != nil {
		return c.fail("bench", err)
	}
	defer em.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	st := sess.Link(0).Stats()
	wg.Go(func() { sess.Run(ctx) })
	mem := &memWatch{}
	wg.Go(func() { mem.watch(ctx, c, st) })
	c.log.Info("soaking", "for", d, "faults", strings.Join(faults, " "))
	em.Run(ctx)
	cancel()
	wg.Wait()
	recorder.Close()
	r := soakReport(d, faults, *em.Summary(0), st, &eps, mem, recorder)
	r.ReportedFaults = sess.Faults()
	if c.json {
		writeJSON(c.stdout, r)
	} else {
		printSoak(c.stdout, r)
	}
	return exitOK
}

// memWatch samples the heap after a warm-up, then every 10 s.
type memWatch struct {
	warm, end runtime.MemStats
	warmMsgs  int64
	heapMax   uint64
	warmRSS   int64
}

func (m *memWatch) watch(ctx context.Context, c *call, st *coupling.Stats) {
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
			c.log.Info("soak", "messages", st.Get(coupling.Messages), "heap_in_use_mib", float64(ms.HeapInuse)/(1<<20),
				"stalls", st.Get(coupling.StallsRecovered), "lockstep_lost", st.Get(coupling.LockstepLost))
		}
	}
}

// soakReport is what a soak measured.
func soakReport(d time.Duration, faults []string, sum emulator.Summary, st *coupling.Stats, eps *episodeTracker, mem *memWatch, rec *coupling.Recorder) soakResult {
	ds := eps.end()
	v := st.Snapshot()
	r := soakResult{
		Duration: d.String(), Faults: faults,
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

func printSoak(w io.Writer, r soakResult) {
	fmt.Fprintf(w, "soak: %s at BeamNG's fastest rate (a message every 0.5 ms physics step), paced like BeamNG, with faults %s\n", r.Duration, strings.Join(r.Faults, " "))
	fmt.Fprintf(w, "  BeamNG sent %d messages; beamconnect answered %d; unanswered %d: %d dropped or cut by the faults, %d stale after stalls, %d other\n",
		r.Sent, r.Answered, r.Unanswered, r.LostToFaults, r.Drained, r.LostOther)
	fmt.Fprintf(w, "  BeamNG accepted %d replies, rejected %d; dropped datagrams %d\n", r.Accepted, r.Rejected, r.Dropped)
	fmt.Fprintf(w, "  stalls %d; lockstep lost %d times (%.3f s); episodes out of lockstep (BeamNG's counters) %d, recovery p50 %.1f ms, max %.1f ms; ended in lockstep %v\n",
		r.Stalls, r.LockstepLost, r.OutOfLockstepS, r.Episodes, r.RecoveryP50ms, r.RecoveryMaxms, r.EndedInLockstep)
	fmt.Fprintf(w, "  recording: %d rows, %d lost\n", r.RecordRows, r.RecordLost)
	if r.HeapStartMiB > 0 {
		fmt.Fprintf(w, "  memory: heap in use %.2f MiB after 10 s, %.2f MiB at the end (max %.2f); RSS %.1f → %.1f MiB; %d GCs after 10 s; %.4f allocations per message in the process (both sides)\n",
			r.HeapStartMiB, r.HeapEndMiB, r.HeapMaxMiB, r.RSSStartMiB, r.RSSEndMiB, r.GCs, r.AllocsPerMsg)
	} else {
		fmt.Fprintf(w, "  memory: heap in use %.2f MiB at the end, RSS %.1f MiB (growth needs a soak over 10 s)\n", r.HeapEndMiB, r.RSSEndMiB)
	}
	fmt.Fprintf(w, "  turnaround p50 %.1f µs, p99 %.1f µs\n", r.TurnaroundP50us, r.TurnaroundP99us)
	if r.Injected != nil {
		fmt.Fprintf(w, "  injected: %+v\n", *r.Injected)
	}
	for _, f := range r.ReportedFaults {
		fmt.Fprintf(w, "  reported: %s\n", f)
	}
}
