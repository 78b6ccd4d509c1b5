package monitor

import (
	"bytes"
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

// metricName is a counter's Prometheus family: beamconnect_<name>, counters
// ending in _total.
func familyName(c coupling.CounterInfo) string {
	name := c.Name
	if c.Metric != "" {
		name = c.Metric
	}
	if c.Gauge {
		return "beamconnect_" + name
	}
	return "beamconnect_" + name + "_total"
}

func (s *Server) writeMetrics(b *bytes.Buffer) {
	links := s.opt.Session.Links()
	// The vehicle label, on everything per vehicle; none for a run of one
	// unnamed vehicle.
	names := make([]string, len(links))
	for i, l := range links {
		if n := l.Name(); n != "" || len(links) > 1 {
			names[i] = `vehicle="` + escapeLabel(n) + `"`
		}
	}
	with := func(labels, more string) string {
		if labels == "" {
			return more
		}
		return labels + "," + more
	}
	headed := map[string]bool{}
	head := func(name, kind, help string) {
		if headed[name] {
			return
		}
		headed[name] = true
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
	for i, l := range links {
		sample("beamconnect_status", names[i], float64(l.Status()))
	}
	// Every counter of the table, each once: a family per counter, or a
	// label of a shared family (dropped_total{reason}).
	run := s.opt.Session.Values()
	vals := make([]coupling.Values, len(links))
	for i, l := range links {
		vals[i] = l.Stats().Snapshot()
	}
	for k, c := range coupling.CounterTable {
		if c.Hidden {
			continue
		}
		name, kind, help := familyName(c), "counter", c.Help
		if c.Gauge {
			kind = "gauge"
		}
		if c.Metric == "dropped" {
			help = "Datagrams dropped, by reason: not BeamNG's (foreign), a stranger claiming BeamNG's place, wrong size, malformed id, duplicate id, implausible id jump."
		}
		head(name, kind, help)
		label := ""
		if c.Label != "" {
			label = `reason="` + c.Label + `"`
		}
		if c.Run {
			sample(name, label, float64(run[k]))
			continue
		}
		for i := range links {
			sample(name, with(names[i], label), float64(vals[i][k]))
		}
	}
	head("beamconnect_out_of_lockstep_seconds_total", "counter", "Time BeamNG spent out of lockstep.")
	for i := range links {
		sample("beamconnect_out_of_lockstep_seconds_total", names[i], time.Duration(vals[i][coupling.OutOfLockstep]).Seconds())
	}
	head("beamconnect_local_time_seconds", "gauge", "The coupling's local (simulation) time.")
	for i, l := range links {
		sample("beamconnect_local_time_seconds", names[i], l.Stats().LocalTime())
	}
	head("beamconnect_scope_dropped_samples_total", "counter", "Live-scope samples not kept because a reader held the ring for longer than the held space lasts.")
	sample("beamconnect_scope_dropped_samples_total", "", float64(s.opt.Ring.Dropped()))
	head("beamconnect_live_page_streams", "gauge", "Live-page event streams open (browser tabs).")
	sample("beamconnect_live_page_streams", "", float64(s.streams.open.Load()))
	head("beamconnect_live_page_streams_refused_total", "counter", "Live-page event streams refused because the most served at once were open.")
	sample("beamconnect_live_page_streams_refused_total", "", float64(s.streams.refused.Load()))
	if ll := s.listener.Load(); ll != nil {
		head("beamconnect_live_page_connections", "gauge", "Connections to the live page open; more wait in the kernel's queue.")
		sample("beamconnect_live_page_connections", "", float64(ll.open()))
	}

	hist := func(name, help string, bounds []time.Duration, h func(*coupling.Stats) *coupling.Histogram) {
		head(name, "histogram", help)
		for i, l := range links {
			hh := h(l.Stats())
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
