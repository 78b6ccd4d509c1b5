package coupling

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"beamconnect/ports"
)

// Counter names one of a run's counters. Each is defined once, in
// CounterTable; the summary (text and JSON), each vehicle's figures,
// /metrics, the live page's problems and the exit status are all derived
// from that table, so a new counter is one line there.
type Counter uint8

// The counters. Link counters count per vehicle; the others once per run.
const (
	Messages        Counter = iota // BeamNG messages handled
	Replies                        // replies sent
	NeutralReplies                 // replies with neutral controls instead of the model's
	Foreign                        // datagrams not from BeamNG's address: dropped
	Strangers                      // a well-formed id-0 message from a new port while BeamNG still sends: dropped
	WrongSize                      // datagrams of a length BeamNG does not send: dropped
	Malformed                      // right length, but the id is not a whole number ≥ 0: dropped
	Duplicates                     // an id already answered: dropped
	IDJumps                        // an id further ahead than BeamNG can have sent: dropped
	ShortMessages                  // messages that lacked fields the model reads: answered with neutral controls
	NotComputed                    // messages the model computed no controls for in time: answered with neutral controls
	FaultedReplies                 // messages answered with neutral controls while the model was faulted (not for lateness)
	StaleData                      // messages answered with neutral controls: the model reads another vehicle whose data stopped coming
	Waiting                        // messages answered with neutral controls: the model reads another vehicle that has not sent yet
	ModelEnded                     // messages answered with neutral controls after the model ended the simulation
	LongMessages                   // messages longer than the layout: the extra values ignored
	NonFinite                      // NaN or Inf values the model wrote that BeamNG must not get
	Clamped                        // control values beyond the range BeamNG documents: clamped
	Drained                        // stale messages skipped after a (re)connect or a pause
	StallsRecovered                // BeamNG 2 s timeouts after which reply ids were re-based
	Late                           // replies withheld because BeamNG had given up on them
	Restarts                       // BeamNG controller reloads seen (ids from 0 again)
	SourceChanges                  // BeamNG's sending address latched anew
	Silences                       // BeamNG went silent while connected
	Pauses                         // silences BeamNG came back from where it left off: a pause (not a fault)
	longestPause                   // gauge: ns of the longest pause
	stallSilences                  // silences that were BeamNG's own 2 s timeout (not a fault)
	stopSilences                   // the silence open when the run was stopped: BeamNG's stop (not a fault)
	BindFailures                   // failed binds of the local address (each retried)
	Connects                       // times BeamNG's messages started coming
	LockstepLost                   // times BeamNG was seen running ahead of the replies
	OutOfLockstep                  // ns BeamNG spent out of lockstep, closed episodes
	Overdue                        // gauge: incoming contracts blocked right now
	ModelFaults                    // times the model died, hung, panicked or answered badly
	ModelMissed                    // the model's program answered no request in time
	ModelDiscarded                 // answers of the model's program that were discarded
	ModelFailed                    // steps of an FMU that failed or gave unusable outputs
	ModelSkipped                   // requests not sent to the model's program (it was busy)
	ModelOld                       // answers of the model to an older request than the one awaited: dropped
	ModelAbandoned                 // threads of an FMU in process abandoned in a hung step
	ModelRestarts                  // restarts of the model's program
	ModelResets                    // times the model started over: BeamNG started its coupling again
	ModelNotReset                  // times BeamNG started its coupling again and the model could not start over
	InputsClamped                  // BeamNG's values an FMU's input could not hold: clamped to what it holds
	SolverSteps                    // a model exchange FMU's solver steps
	SolverRejected                 // … steps its error control rejected
	SolverEvents                   // … events handled (time, state, step)
	Reloads                        // config reloads applied
	ReloadErrors                   // config reloads refused
	RecordRows                     // rows recorded
	RecordWritten                  // rows in the recording file
	RecordLost                     // rows that could not be written
	LogDropped                     // log records dropped because the log's writer could not keep up
	LogFailed                      // log writes that failed (stderr's reader gone)
	realTimeMode                   // 1 when the run is in real time (beamng.realTime), 0 in lockstep
	numCounters
)

// CounterInfo defines a counter.
type CounterInfo struct {
	Name string // the summary's JSON key; the metric is beamconnect_<Name>_total unless Metric says
	Help string
	// Metric and Label, when set, put the counter in a labelled family
	// (beamconnect_dropped_total{reason="foreign"}).
	Metric, Label string
	Run           bool // counted once per run, not per vehicle
	Gauge         bool // a value now, not a count
	Hidden        bool // internal: not in the summary or /metrics
	// Normal says a value other than 0 is normal in a healthy run (the
	// summary says so, and the docs why).
	Normal bool
	// Problem, when set, is the line a non-zero value of counter k adds to
	// the run's faults (v holds every counter of the same vehicle, or of
	// the run; policy is the reply-id policy); "" when it is not one after
	// all.
	Problem func(v *Values, k Counter, policy string) string
}

// CounterTable defines every counter, in the order the summary lists them.
var CounterTable = [numCounters]CounterInfo{
	Messages:       {Name: "messages", Help: "BeamNG messages handled."},
	Replies:        {Name: "replies", Help: "Replies sent to BeamNG."},
	NeutralReplies: {Name: "neutral_replies", Help: "Replies sent with neutral controls (pedals released, wheel torques 0) instead of the model's."},
	Foreign: {Name: "foreign", Help: "Datagrams not from BeamNG's address (another host, or another port than BeamNG's): dropped.",
		Metric: "dropped", Label: "foreign",
		Problem: count("%d datagrams that were not BeamNG's (another host, or another port than BeamNG's) were dropped")},
	Strangers: {Name: "strangers", Help: "Well-formed messages with id 0 from a new port while BeamNG's own still came: dropped.",
		Metric: "dropped", Label: "stranger",
		Problem: count("%d datagrams from another port of BeamNG's host claimed BeamNG's place while BeamNG still sent: dropped, BeamNG kept control")},
	WrongSize: {Name: "wrong_size", Help: "Datagrams of a length BeamNG does not send: dropped.", Metric: "dropped", Label: "wrong_size",
		Problem: count("%d datagrams from BeamNG's address had a length BeamNG does not send (the other protocol, or another CSV?): dropped")},
	Malformed: {Name: "malformed", Help: "Datagrams whose id is not a whole number ≥ 0: dropped.", Metric: "dropped", Label: "malformed",
		Problem: count("%d datagrams from BeamNG's address had no valid message id: dropped")},
	Duplicates: {Name: "duplicates", Help: "Messages repeating an id already answered: dropped.", Metric: "dropped", Label: "duplicate",
		Problem: count("%d datagrams repeated an id already answered: dropped")},
	IDJumps: {Name: "id_jumps", Help: "Messages whose id jumped further than BeamNG can have sent: dropped.", Metric: "dropped", Label: "id_jump",
		Problem: count("%d datagrams had an id further ahead than BeamNG can have sent (stray or spoofed?): dropped")},
	ShortMessages: {Name: "short_messages", Help: "BeamNG messages that lacked fields the model reads: answered with neutral controls.",
		Problem: count("%d of BeamNG's messages lacked fields the model reads (shorter than the CSV says: a row BeamNG cannot resolve?): each was answered with neutral controls")},
	NotComputed: {Name: "no_controls", Help: "BeamNG messages the model computed no controls for in time (a step past its deadline in real time, or past the model timeout; one still busy with an older message; every message while its step has not answered): answered with neutral controls.",
		Problem: func(v *Values, _ Counter, _ string) string {
			if v[realTimeMode] == 0 {
				// Lockstep: a reply waits for its step; one without its
				// controls is never normal.
				return fmt.Sprintf("the model computed no controls within the model timeout for %d of %d messages, each answered with neutral controls (a model still starting, hung, or slower than the model timeout)",
					v[NotComputed], v[Messages])
			}
			if v[NotComputed]*100 <= v[Messages] {
				return "" // now and then, on a busy machine: counted, not a verdict
			}
			return fmt.Sprintf("the model could not keep up: it computed no controls in time for %d of %d messages (%.1f %%), each answered with neutral controls (a model too slow for the period, or its deadlineMs too short? Without beamng.realTime, a slow step slows BeamNG instead)",
				v[NotComputed], v[Messages], 100*float64(v[NotComputed])/float64(max(v[Messages], 1)))
		}},
	FaultedReplies: {Name: "faulted_replies", Help: "BeamNG messages answered with neutral controls while the model was faulted (dead, failed, panicked, answering badly); those while its step had no answer in time count as no_controls, those with NaN controls as non_finite."},
	StaleData: {Name: "stale_data", Help: "BeamNG messages answered with neutral controls because the model reads another vehicle whose data had stopped coming.",
		Problem: count("%d messages were answered with neutral controls: the model reads another vehicle whose data had stopped coming (its BeamNG silent), and is never stepped on stale data")},
	ModelEnded: {Name: "after_model_ended", Normal: true, Help: "BeamNG messages answered with neutral controls after the model (an FMU) ended the simulation: not a fault."},
	Waiting:    {Name: "waiting_for_vehicles", Normal: true, Help: "BeamNG messages answered with neutral controls while another vehicle the model reads had not sent yet (start-up)."},
	LongMessages: {Name: "long_messages", Help: "BeamNG messages longer than the layout: the extra values were ignored.",
		Problem: count("%d of BeamNG's messages were longer than the CSV says (BeamNG runs another CSV?): the extra values were ignored")},
	NonFinite: {Name: "non_finite", Help: "BeamNG messages whose controls the model computed as NaN or Inf (a model fault, never \"keep the value\"): answered with neutral controls.",
		Problem: count("the model computed NaN or Inf controls for %d messages: each was a model fault, answered with neutral controls (never \"keep the previous value\")")},
	Clamped:         {Name: "clamped", Help: "Control values the model wrote beyond what BeamNG accepts (pedals 0 to 1, steering −1 to 1): clamped to the range before sending."},
	Drained:         {Name: "drained", Normal: true, Help: "Stale messages skipped after a (re)connect or a pause."},
	StallsRecovered: {Name: "stalls_recovered", Help: "BeamNG 2 s timeouts after which reply ids were re-based.", Problem: stalls},
	Late: {Name: "late_replies", Help: "Replies withheld because BeamNG had given up on them.",
		Problem: count("%d replies were withheld: the model's step took longer than BeamNG waits")},
	Restarts:      {Name: "restarts", Normal: true, Help: "BeamNG controller reloads seen (ids from 0 again)."},
	SourceChanges: {Name: "source_changes", Normal: true, Help: "Times BeamNG's sending address was latched anew (a reload, or a new session after silence)."},
	Silences:      {Name: "silences", Help: "Times BeamNG went silent while connected.", Problem: silences},
	Pauses:        {Name: "pauses", Normal: true, Help: "Silences of BeamNG (a second or more) after which it went on where it left off, nothing lost: it paused; not a fault."},
	longestPause:  {Name: "longest_pause_ns", Hidden: true, Gauge: true},
	stallSilences: {Name: "stall_silences", Hidden: true},
	stopSilences:  {Name: "stop_silences", Hidden: true},
	BindFailures:  {Name: "bind_failures", Help: "Failed binds of the local address (each retried)."},
	Connects:      {Name: "connects", Help: "Times BeamNG's messages started coming."},
	LockstepLost:  {Name: "lockstep_lost", Help: "Times BeamNG was seen running ahead of the replies.", Problem: lockstepLine},
	OutOfLockstep: {Name: "out_of_lockstep_ns", Hidden: true},
	Overdue:       {Name: "overdue_contracts", Help: "Incoming contracts blocked right now.", Gauge: true},
	ModelFaults: {Name: "model_faults", Help: "Times the model died, hung, panicked or answered badly.", Run: true,
		Problem: func(v *Values, _ Counter, _ string) string {
			return fmt.Sprintf("the model faulted %d times (dead, hung, panicked or answering badly): %d replies carried neutral controls", v[ModelFaults], v[NeutralReplies])
		}},
	ModelMissed:    {Name: "model_missed", Normal: true, Help: "Requests the model's program answered too late.", Run: true},
	ModelDiscarded: {Name: "model_discarded", Help: "Answers of the model's program that were discarded (malformed, out of turn, or later than the model timeout).", Run: true, Problem: count("the model's program gave %d answers that were discarded (see the log for why)")},
	ModelFailed:    {Name: "model_failed", Help: "Steps of the FMU that failed, or gave NaN or infinite outputs.", Run: true, Problem: count("the FMU failed or gave NaN or infinite outputs at %d steps (see the log for which)")},
	ModelSkipped:   {Name: "model_skipped", Normal: true, Help: "Requests not sent to the model's program while it was busy.", Run: true},
	ModelOld:       {Name: "model_old_answers", Normal: true, Help: "Answers of the model to an older request than the one awaited (they came after their step gave up on them): dropped, never used for another message.", Run: true},
	ModelAbandoned: {Name: "abandoned_threads", Help: "Threads of an FMU in process abandoned in a hung step: they run on until beamconnect ends.", Run: true,
		Problem: count("%d threads of the FMU in process were abandoned in hung steps: they run on until beamconnect ends (after 3 the FMU is not instantiated again)")},
	ModelRestarts:  {Name: "model_restarts", Help: "Restarts of the model's program.", Run: true},
	SolverSteps:    {Name: "solver_steps", Normal: true, Help: "Steps of the solver integrating a model exchange FMU.", Run: true},
	SolverRejected: {Name: "solver_rejected", Normal: true, Help: "Steps of that solver its error control rejected (and took again, smaller).", Run: true},
	SolverEvents:   {Name: "solver_events", Normal: true, Help: "Events of a model exchange FMU handled: time, state and step events.", Run: true},
	ModelResets:    {Name: "model_resets", Normal: true, Help: "Times the model started over from its initial state because BeamNG started its coupling again.", Run: true},
	ModelNotReset: {Name: "model_not_reset", Help: "Times BeamNG started its coupling again and the model could not start over from its initial state: it kept its state (an integrator's wind-up, say) into the new run.", Run: true,
		Problem: count("the model could not start over when BeamNG started its coupling again (%d times): it kept its state (see the log for why)")},
	InputsClamped: {Name: "inputs_clamped", Help: "Values from BeamNG an FMU's input cannot hold (beyond its integer type's range or its min and max, or no item of its enumeration): clamped to what it holds before the step.", Run: true},
	Reloads:       {Name: "reloads", Help: "Config reloads applied.", Run: true},
	ReloadErrors:  {Name: "reload_errors", Normal: true, Help: "Config reloads refused (invalid, or restart-only changes).", Run: true},
	RecordRows:    {Name: "record_rows", Help: "Rows recorded.", Run: true},
	RecordWritten: {Name: "record_written", Help: "Rows written to the recording.", Run: true},
	RecordLost: {Name: "record_lost", Help: "Recorded rows that could not be written.", Run: true,
		Problem: func(v *Values, _ Counter, _ string) string {
			return fmt.Sprintf("the recording lost %d of %d rows (see the log for why)", v[RecordLost], v[RecordRows])
		}},
	LogDropped: {Name: "log_records_dropped", Help: "Log records dropped because stderr's reader did not keep up.", Run: true},
	LogFailed:  {Name: "log_writes_failed", Help: "Log writes stderr refused (its reader gone).", Run: true},
	// The run's mode, for the problem lines that depend on it: set in the
	// run's counters and every vehicle's.
	realTimeMode: {Name: "real_time_mode", Hidden: true, Gauge: true},
}

// count is a problem line that says how many.
func count(format string) func(*Values, Counter, string) string {
	return func(v *Values, k Counter, _ string) string { return fmt.Sprintf(format, v[k]) }
}

// Values is a snapshot of every counter.
type Values [numCounters]int64

func stalls(v *Values, _ Counter, policy string) string {
	n := v[StallsRecovered]
	if policy == "echo" {
		n-- // the S-function's start-up stall, which the echo policy keeps on purpose
	}
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("BeamNG stalled %d times, waiting 2 s for a reply (reply ids re-based each time)", n)
}

func silences(v *Values, _ Counter, _ string) string {
	n := v[Silences] - v[stallSilences] - v[stopSilences] - v[Pauses]
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("BeamNG went silent %d times while connected, for a second or more, neither as a pause nor as its own 2 s wait for a reply (its coupling stopped or restarted, messages were lost, or it was lost)", n)
}

func lockstepLine(v *Values, _ Counter, _ string) string {
	return fmt.Sprintf("BeamNG ran out of lockstep %d times, %.3f s in all", v[LockstepLost], time.Duration(v[OutOfLockstep]).Seconds())
}

// Stats are one vehicle's counters (or the run's, for Run counters), safe
// to read while the coupling runs.
type Stats struct {
	n          [numCounters]atomic.Int64
	Turnaround Histogram // message read → reply written, less any master-sync hold
	Pacing     Histogram // master time sync: how late each reply went out against its schedule

	localTime     atomic.Uint64 // float64 bits: the local time of the latest message
	lastArrival   atomic.Int64  // unix ns of the latest BeamNG message
	lockstepSince atomic.Int64  // unix ns the open out-of-lockstep episode began; 0 in lockstep
	openAtEnd     atomic.Bool   // the run ended out of lockstep
	endLink       atomic.Int32  // the link's state when the run was asked to stop
	endSilence    atomic.Int64  // ns BeamNG had been silent when the run was asked to stop
	endWaiting    atomic.Bool   // … in what may have been its 2 s wait for a reply it had not had
}

func (s *Stats) add(k Counter, d int64) int64 { return s.n[k].Add(d) }
func (s *Stats) inc(k Counter) int64          { return s.n[k].Add(1) }

// Get reads one counter now.
func (s *Stats) Get(k Counter) int64 { return s.n[k].Load() }

// Set sets a counter (a gauge, or a count kept elsewhere, such as a
// model's or a recorder's, copied in).
func (s *Stats) Set(k Counter, v int64) { s.n[k].Store(v) }

// Snapshot reads every counter.
func (s *Stats) Snapshot() Values {
	var v Values
	for k := range s.n {
		v[k] = s.n[k].Load()
	}
	if since := s.lockstepSince.Load(); since != 0 {
		v[OutOfLockstep] += time.Now().UnixNano() - since
	}
	return v
}

// droppedCounters are the counters of datagrams dropped, for their sums.
var droppedCounters = func() (list []Counter) {
	for k, c := range CounterTable {
		if c.Metric == "dropped" {
			list = append(list, Counter(k))
		}
	}
	return list
}()

// Dropped counts every datagram dropped as not BeamNG's or not usable.
func (v *Values) Dropped() int64 {
	var n int64
	for _, k := range droppedCounters {
		n += v[k]
	}
	return n
}

// Add adds o's counters to v (a run's figures from its vehicles').
func (v *Values) Add(o *Values) {
	for k := range v {
		if CounterTable[k].Gauge {
			v[k] = max(v[k], o[k])
			continue
		}
		v[k] += o[k]
	}
}

// Problems lists, one line each, what the counters say went wrong:
// datagrams dropped, stalls (less the start-up stall the echo reply-id
// policy keeps on purpose), withheld replies, model faults, lockstep lost,
// silences. policy is the reply-id policy.
func (v *Values) Problems(policy string) []string {
	var out []string
	for k, c := range CounterTable {
		if c.Problem == nil || v[k] <= 0 {
			continue
		}
		if line := c.Problem(v, Counter(k), policy); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// LocalTime is the local time of the latest message.
func (s *Stats) LocalTime() float64 { return math.Float64frombits(s.localTime.Load()) }

// LastArrival is when BeamNG's latest message came (zero before any).
func (s *Stats) LastArrival() time.Time {
	ns := s.lastArrival.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// LockstepLostNow reports whether BeamNG is out of lockstep right now, and
// since when.
func (s *Stats) LockstepLostNow() (bool, time.Time) {
	ns := s.lockstepSince.Load()
	return ns != 0, time.Unix(0, ns)
}

// endedOutOfLockstep reports whether the run ended with BeamNG out of
// lockstep.
func (s *Stats) endedOutOfLockstep() bool { return s.openAtEnd.Load() }

// StatusAtEnd is the connection state when the run was asked to stop,
// before it disconnected.
func (s *Stats) StatusAtEnd() ports.Status { return ports.Status(s.endLink.Load()) }

// Histogram records durations without locks or allocation, so the loop can
// record every turnaround and a status line can read quantiles while it
// runs. Buckets are 1 µs wide up to 2 ms, then 5 % wide up to about 40 s.
type Histogram struct {
	buckets [linearBuckets + logBuckets]atomic.Int64
	count   atomic.Int64
	sum     atomic.Int64 // ns
	max     atomic.Int64
	last    atomic.Int64
}

const (
	linearBuckets = 2000 // 0–2 ms in 1 µs steps
	logBuckets    = 210  // 2 ms × 1.05^210 ≈ 56 s
	logBase       = 1.05
)

func bucketOf(us int64) int {
	if us < linearBuckets {
		return int(max(us, 0))
	}
	i := linearBuckets + int(math.Log(float64(us)/linearBuckets)/math.Log(logBase))
	return min(i, linearBuckets+logBuckets-1)
}

// upper is the largest duration bucket i holds, in µs.
func upper(i int) float64 {
	if i < linearBuckets {
		return float64(i)
	}
	return linearBuckets * math.Pow(logBase, float64(i-linearBuckets+1))
}

// Observe records one duration.
func (h *Histogram) Observe(d time.Duration) {
	us := d.Microseconds()
	h.buckets[bucketOf(us)].Add(1)
	h.count.Add(1)
	h.sum.Add(int64(d))
	h.last.Store(int64(d))
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// Sum is the total of the recorded durations.
func (h *Histogram) Sum() time.Duration { return time.Duration(h.sum.Load()) }

// CountAtMost is how many recorded durations were at most d, to the
// buckets' resolution (1 µs up to 2 ms, 5 % above): a bucket counts when
// all it holds is below d (the linear ones) or at most d.
func (h *Histogram) CountAtMost(d time.Duration) int64 {
	bound := float64(d) / float64(time.Microsecond)
	var n int64
	for i := range h.buckets {
		if i < linearBuckets && float64(i)+1 > bound || i >= linearBuckets && upper(i) > bound {
			break
		}
		n += h.buckets[i].Load()
	}
	return n
}

// Count is how many durations were recorded.
func (h *Histogram) Count() int64 { return h.count.Load() }

// Max is the longest recorded; Last the most recent.
func (h *Histogram) Max() time.Duration  { return time.Duration(h.max.Load()) }
func (h *Histogram) Last() time.Duration { return time.Duration(h.last.Load()) }

// Quantile is the duration below which a fraction q of the recorded ones
// lie, to the bucket's resolution (1 µs below 2 ms); 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= rank {
			return min(time.Duration(upper(i)*float64(time.Microsecond)), h.Max())
		}
	}
	return h.Max()
}

// PingResultsLayout documents the ping_results commData port.
const PingResultsLayout = `ping_results (a commData meta field; arraySize up to 8, in this order):
  [0] turnaround of the previous message: read to reply written, s
  [1] time between the last two BeamNG messages, s
  [2] BeamNG messages handled
  [3] replies sent
  [4] datagrams dropped (foreign host or port, wrong size, malformed, duplicate, id jump)
  [5] BeamNG 2 s stalls recovered (reply ids re-based)
  [6] turnaround median so far, s
  [7] turnaround 99th percentile so far, s
Elements past 8 stay NaN.`

// pingResults writes a link's ping_results into v, interArrival between
// BeamNG's last two messages.
func (s *Stats) pingResults(v []float64, interArrival time.Duration) {
	var dropped int64
	for _, k := range droppedCounters {
		dropped += s.Get(k)
	}
	vals := [8]float64{
		s.Turnaround.Last().Seconds(),
		interArrival.Seconds(),
		float64(s.Get(Messages)),
		float64(s.Get(Replies)),
		float64(dropped),
		float64(s.Get(StallsRecovered)),
		s.Turnaround.Quantile(0.5).Seconds(),
		s.Turnaround.Quantile(0.99).Seconds(),
	}
	for i := range v {
		if i < len(vals) {
			v[i] = vals[i]
		} else {
			v[i] = math.NaN()
		}
	}
}
