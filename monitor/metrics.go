package monitor

import (
	"bytes"
	"math"
	"net/http"
	"strconv"
	"time"

	"beamconnect/coupling"
)

// Prometheus histogram bounds, seconds: turnaround is tens of µs on a good
// day and BeamNG gives up at 2 s; pacing errors are µs to ms.
var (
	turnaroundBounds = []time.Duration{5 * time.Microsecond, 10 * time.Microsecond, 20 * time.Microsecond, 50 * time.Microsecond,
		100 * time.Microsecond, 200 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond,
		5 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, time.Second}
	pacingBounds = []time.Duration{time.Microsecond, 5 * time.Microsecond, 20 * time.Microsecond, 100 * time.Microsecond,
		500 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}
)

// serveMetrics writes the counters in Prometheus' text exposition format
// (version 0.0.4): names beamconnect_…, base units (seconds), counters
// ending in _total, a vehicle label on everything per vehicle.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	s.writeMetrics(&b)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b.Bytes())
}

type metric struct {
	name, kind, help string
	value            func(*coupling.Stats) float64
}

func count(f func(*coupling.Stats) int64) func(*coupling.Stats) float64 {
	return func(s *coupling.Stats) float64 { return float64(f(s)) }
}

var perVehicle = []metric{
	{"beamconnect_messages_total", "counter", "BeamNG messages handled.", count(func(s *coupling.Stats) int64 { return s.Messages.Load() })},
	{"beamconnect_replies_total", "counter", "Replies sent to BeamNG.", count(func(s *coupling.Stats) int64 { return s.Replies.Load() })},
	{"beamconnect_neutral_replies_total", "counter", "Replies sent with neutral controls because of a model fault.", count(func(s *coupling.Stats) int64 { return s.NeutralReplies.Load() })},
	{"beamconnect_stalls_recovered_total", "counter", "BeamNG 2 s timeouts after which reply ids were re-based.", count(func(s *coupling.Stats) int64 { return s.StallsRecovered.Load() })},
	{"beamconnect_late_replies_total", "counter", "Replies not sent because BeamNG had given up on them.", count(func(s *coupling.Stats) int64 { return s.Late.Load() })},
	{"beamconnect_drained_total", "counter", "Stale messages skipped after a (re)connect or a pause.", count(func(s *coupling.Stats) int64 { return s.Drained.Load() })},
	{"beamconnect_restarts_total", "counter", "BeamNG controller reloads seen (ids from 0 again).", count(func(s *coupling.Stats) int64 { return s.Restarts.Load() })},
	{"beamconnect_silences_total", "counter", "Times BeamNG went silent while connected.", count(func(s *coupling.Stats) int64 { return s.Silences.Load() })},
	{"beamconnect_connects_total", "counter", "Times BeamNG's messages started coming.", count(func(s *coupling.Stats) int64 { return s.Connects.Load() })},
	{"beamconnect_bind_failures_total", "counter", "Failed binds of the local address.", count(func(s *coupling.Stats) int64 { return s.BindFailures.Load() })},
	{"beamconnect_model_faults_total", "counter", "Times the model died, hung, panicked or stopped answering.", count(func(s *coupling.Stats) int64 { return s.ModelFaults.Load() })},
	{"beamconnect_lockstep_lost_total", "counter", "Times BeamNG was seen running ahead of the replies.", count(func(s *coupling.Stats) int64 { return s.LockstepLost.Load() })},
	{"beamconnect_out_of_lockstep_seconds_total", "counter", "Time BeamNG spent out of lockstep.", func(s *coupling.Stats) float64 { return s.OutOfLockstepTotal().Seconds() }},
	{"beamconnect_overdue_contracts", "gauge", "Incoming contracts blocked right now.", count(func(s *coupling.Stats) int64 { return s.Overdue.Load() })},
	{"beamconnect_local_time_seconds", "gauge", "The coupling's local (simulation) time.", func(s *coupling.Stats) float64 { return math.Float64frombits(s.LocalTime.Load()) }},
}

// dropReasons are the datagrams dropped, by reason.
var dropReasons = []struct {
	reason string
	value  func(*coupling.Stats) int64
}{
	{"foreign", func(s *coupling.Stats) int64 { return s.Foreign.Load() }},
	{"wrong_size", func(s *coupling.Stats) int64 { return s.WrongSize.Load() }},
	{"malformed", func(s *coupling.Stats) int64 { return s.Malformed.Load() }},
	{"duplicate", func(s *coupling.Stats) int64 { return s.Duplicates.Load() }},
	{"id_jump", func(s *coupling.Stats) int64 { return s.IDJumps.Load() }},
}

func (s *Server) writeMetrics(b *bytes.Buffer) {
	// The vehicle label, on everything per vehicle; none for a run of one
	// unnamed vehicle.
	names := make([]string, len(s.opt.Links))
	for i := range s.opt.Links {
		if n := s.opt.Plan.Vehicles[i].Name; n != "" || len(s.opt.Links) > 1 {
			names[i] = `vehicle="` + escapeLabel(n) + `"`
		}
	}
	with := func(labels, more string) string {
		if labels == "" {
			return more
		}
		return labels + "," + more
	}
	head := func(name, kind, help string) {
		b.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + kind + "\n")
	}
	sample := func(name, labels string, v float64) {
		b.WriteString(name)
		if labels != "" {
			b.WriteString("{" + labels + "}")
		}
		b.WriteByte(' ')
		b.Write(strconv.AppendFloat(nil, v, 'g', -1, 64))
		b.WriteByte('\n')
	}
	head("beamconnect_status", "gauge", "Connection status as VS Connect numbers it: 1 unconnected, 2 connecting, 3 connected, 4 error, 5 disconnecting.")
	for i, c := range s.opt.Links {
		sample("beamconnect_status", names[i], float64(c.Status()))
	}
	for _, m := range perVehicle {
		head(m.name, m.kind, m.help)
		for i, c := range s.opt.Links {
			sample(m.name, names[i], m.value(c.Stats()))
		}
	}
	head("beamconnect_dropped_total", "counter", "Datagrams dropped, by reason: not BeamNG's (foreign), wrong size, malformed id, duplicate id, implausible id jump.")
	for i, c := range s.opt.Links {
		for _, d := range dropReasons {
			sample("beamconnect_dropped_total", with(names[i], `reason="`+d.reason+`"`), float64(d.value(c.Stats())))
		}
	}
	var reloads, refused int64
	for _, c := range s.opt.Links {
		reloads = max(reloads, c.Stats().Reloads.Load())
		refused = max(refused, c.Stats().ReloadErrors.Load())
	}
	head("beamconnect_reloads_total", "counter", "Config reloads applied.")
	sample("beamconnect_reloads_total", "", float64(reloads))
	head("beamconnect_reload_errors_total", "counter", "Config reloads refused (invalid, or changes that need a restart).")
	sample("beamconnect_reload_errors_total", "", float64(refused))
	head("beamconnect_scope_dropped_samples_total", "counter", "Live-scope samples not kept because a reader was copying the ring.")
	sample("beamconnect_scope_dropped_samples_total", "", float64(s.opt.Ring.Dropped()))

	hist := func(name, help string, bounds []time.Duration, h func(*coupling.Stats) *coupling.Histogram) {
		head(name, "histogram", help)
		for i, c := range s.opt.Links {
			hh := h(c.Stats())
			total := hh.Count()
			for _, bd := range bounds {
				sample(name+"_bucket", with(names[i], `le="`+strconv.FormatFloat(bd.Seconds(), 'g', -1, 64)+`"`), float64(min(hh.CountAtMost(bd), total)))
			}
			sample(name+"_bucket", with(names[i], `le="+Inf"`), float64(total))
			sample(name+"_sum", names[i], hh.Sum().Seconds())
			sample(name+"_count", names[i], float64(total))
		}
	}
	hist("beamconnect_turnaround_seconds", "BeamNG message read to reply written, less any master time-sync hold.", turnaroundBounds,
		func(s *coupling.Stats) *coupling.Histogram { return &s.Turnaround })
	hist("beamconnect_pacing_error_seconds", "Master time sync: how late each reply went out against its schedule.", pacingBounds,
		func(s *coupling.Stats) *coupling.Histogram { return &s.Pacing })
}

// escapeLabel escapes a label value as the text format wants.
func escapeLabel(v string) string {
	var b []byte
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, v[i])
		}
	}
	return string(b)
}
