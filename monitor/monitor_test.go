package monitor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config/configtest"
	"beamconnect/coupling"
	"beamconnect/internal/eventually"
	"beamconnect/internal/scope"
	"beamconnect/models/kinds"
	"beamconnect/ports"
)

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

// rig is a coupling of the cruise example to an in-process emulated BeamNG,
// with its monitor served on loopback.
type rig struct {
	plan *ports.Plan
	s    *coupling.Session
	em   *emulator.Emulator
	srv  *Server
	url  string
	ctx  context.Context
	stop context.CancelFunc // ends the run: the server says so and stops
	done chan struct{}      // closed when the server has stopped
}

func newRig(t testing.TB, steps int64) *rig {
	t.Helper()
	plan := configtest.Plan(t, "../examples/cruise-pedals.json")
	m, err := kinds.New(plan.Model, plan.ModelParams, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{plan: plan}
	ring := scope.New(coupling.ScopeColumns(plan, nil), 20000, 1)
	r.s, err = coupling.New(coupling.Options{Plan: plan, Model: m, Local: loopback, Scope: ring,
		OnStatus: func(v int, s ports.Status) {
			if r.srv != nil {
				r.srv.StatusChanged(v, s)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.s.Bind(); err != nil {
		t.Fatal(err)
	}
	link, err := emulator.ListenUDP(loopback, r.s.Link(0).LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	r.s.Link(0).SetRemote(link.LocalAddr())
	r.em, err = emulator.New(emulator.Config{SimulinkTime: plan.Period, PingTime: plan.PingTime, FreeRunning: true, Steps: steps}, link)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = New(Options{Plan: plan, Session: r.s, Ring: ring, Config: []byte(`{"the":"config"}`)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx, r.stop = ctx, cancel
	done := make(chan struct{})
	r.done = done
	go func() { r.srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	r.url = "http://" + ln.Addr().String()
	return r
}

// run couples until the emulator has done its steps; the coupling's loop
// is stopped after.
func (r *rig) run(t testing.TB) emulator.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 60*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { r.s.Run(ctx); close(done) }()
	sum, _ := r.em.Run(ctx)
	cancel()
	<-done
	r.srv.sample(time.Now())
	return sum
}

func get(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

// /metrics is valid Prometheus text (checked line by line by parseMetrics)
// and its counters are the coupling's.
func TestMetrics(t *testing.T) {
	r := newRig(t, 20000)
	r.run(t)
	fams, err := parseMetrics(get(t, r.url+"/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	st := r.s.Link(0).Stats()
	for _, tt := range []struct {
		name string
		want float64
	}{
		{"beamconnect_messages_total", float64(st.Get(coupling.Messages))},
		{"beamconnect_replies_total", float64(st.Get(coupling.Replies))},
		{"beamconnect_turnaround_seconds_count", float64(st.Turnaround.Count())},
		{"beamconnect_stalls_recovered_total", 0},
		{"beamconnect_reloads_total", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := fams.value(tt.name, "")
			if !ok || got != tt.want {
				t.Errorf("%s = %v (present %v), want %v", tt.name, got, ok, tt.want)
			}
		})
	}
	if st.Get(coupling.Messages) < 1900 {
		t.Errorf("only %d messages", st.Get(coupling.Messages))
	}
	for _, name := range []string{"beamconnect_status", "beamconnect_dropped_total", "beamconnect_overdue_contracts",
		"beamconnect_turnaround_seconds", "beamconnect_pacing_error_seconds", "beamconnect_out_of_lockstep_seconds_total"} {
		if fams.types[name] == "" {
			t.Errorf("no %s", name)
		}
	}
	if n, _ := fams.value("beamconnect_dropped_total", `reason="foreign"`); n != 0 {
		t.Errorf("foreign %v", n)
	}
}

// The event stream starts with the plan's columns and carries samples of
// every one of them, live: the emulated car's speed rises.
func TestEventsCarryThePlan(t *testing.T) {
	r := newRig(t, 0) // runs until stopped
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	go r.s.Run(ctx)
	go r.em.Run(ctx)

	resp, err := http.Get(r.url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	ev := bufio.NewReader(resp.Body)
	var layout scope.Layout
	var speeds []float64
	var state map[string]any
	deadline := time.Now().Add(20 * time.Second)
	for (len(speeds) < 50 || state == nil || state["status"] != 3.0) && time.Now().Before(deadline) {
		name, data := readEvent(t, ev)
		switch name {
		case "layout":
			if err := json.Unmarshal(data, &layout); err != nil {
				t.Fatal(err)
			}
		case "samples":
			var s struct {
				G int64
				T []float64
				V [][]*float64
			}
			if err := json.Unmarshal(data, &s); err != nil {
				t.Fatalf("%v: %s", err, data)
			}
			if layout.Generation != s.G || len(s.V) != len(layout.Columns) {
				t.Fatalf("samples of generation %d with %d columns, layout %d with %d", s.G, len(s.V), layout.Generation, len(layout.Columns))
			}
			for i := range s.T {
				if s.V[1][i] != nil {
					speeds = append(speeds, *s.V[1][i])
				}
			}
		case "state":
			state = nil
			json.Unmarshal(data, &state)
		}
	}
	var names []string
	for _, c := range layout.Columns {
		names = append(names, c.Name)
	}
	want := []string{"status", "out1.groundspeed", "out2.throttle", "out2.brake", "out3.rpm", "out3.gear", "out4.time", "out4.serial_number",
		"directive", "in1.throttle", "in1.brake", "in2.driveMode", "setpoint:out1.groundspeed",
		"model.setSpeed", "model.speedError", "model.pedal", "model.integral"}
	if !slices.Equal(names, want) {
		t.Errorf("columns %q, want the plan's and the model's %q", names, want)
	}
	if len(speeds) < 50 || speeds[len(speeds)-1] <= speeds[0] {
		t.Errorf("groundspeed samples %v…: want the car accelerating", speeds[:min(len(speeds), 5)])
	}
	if state == nil || state["status"] != 3.0 || state["status_text"] != "connected" {
		t.Errorf("state %v", state)
	}
}

func readEvent(t *testing.T, r *bufio.Reader) (name string, data []byte) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && name != "":
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = []byte(line[len("data: "):])
		}
	}
}

// A client that asks for the stream and never reads does not hold up the
// coupling: every message is answered, BeamNG never stalls, and what the
// ring missed is only what a reader's copy cost.
func TestStalledClient(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets on the real clock: timing a race detector would distort")
	}
	r := newRig(t, 60000)
	stall(t, r, 3)
	sum := r.run(t)
	st := r.s.Link(0).Stats()
	if sum.Stalls != 0 || sum.Accepted < sum.Sent-1 || st.Get(coupling.Messages) < sum.Sent-1 {
		t.Errorf("with stalled clients: %v; coupling %d messages", sum, st.Get(coupling.Messages))
	}
	if d := r.srv.opt.Ring.Dropped(); d > st.Get(coupling.Messages)/100 {
		t.Errorf("the scope dropped %d of %d samples", d, st.Get(coupling.Messages))
	}
}

// stall connects n clients that never read, and waits until the server
// serves their streams: the ring is first filled with 40 s of samples, so
// the backlog each stream owes is megabytes against a 1 KiB receive
// window, and its first write sticks.
func stall(t testing.TB, r *rig, n int) {
	t.Helper()
	vals := make([][]float64, 1)
	vals[0] = make([]float64, len(coupling.ScopeColumns(r.plan, nil)))
	for i := range 20000 {
		r.srv.opt.Ring.Push(float64(i)*0.002, vals)
	}
	for range n {
		conn := stalledClient(t, r.url)
		t.Cleanup(func() { conn.Close() })
	}
	eventually.Must(t, time.Minute, "the stalled clients' streams", func() bool { return r.srv.streams.open.Load() == int64(n) })
}

// stalledClient asks for /events with a tiny receive window and never
// reads.
func stalledClient(t testing.TB, url string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { setReceiveBuffer(fd, 1024) })
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
	return conn
}

// Only reading is served: a POST is refused.
func TestReadOnly(t *testing.T) {
	r := newRig(t, 10)
	for _, path := range []string{"/", "/metrics", "/events", "/api/config"} {
		resp, err := http.Post(r.url+path, "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %s", path, resp.Status)
		}
	}
	if page := get(t, r.url+"/"); !strings.Contains(page, "uPlot.iife.min.js") || strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Errorf("the page must load its assets from the binary, not a CDN")
	}
	if js := get(t, r.url+"/vendor/uPlot.iife.min.js"); !strings.Contains(js, "uPlot") {
		t.Error("uPlot not served")
	}
	var cfg struct{ Path, Text string }
	json.Unmarshal([]byte(get(t, r.url+"/api/config")), &cfg)
	if cfg.Text != `{"the":"config"}` || !strings.HasSuffix(cfg.Path, "cruise-pedals.json") {
		t.Errorf("config %+v", cfg)
	}
}

// Reloads and refusals reach the state, with the refusal's file:line:col.
func TestReloadEvents(t *testing.T) {
	r := newRig(t, 10)
	r.srv.Refused([]string{"rig.json:7:21: unknown propertyName \"grundspeed\" (did you mean \"groundspeed\"?)"})
	r.srv.Reloaded([]string{"out 3 re-mapped: [rpm] → [rpm, gear]"}, []byte("new text"))
	r.srv.sample(time.Now())
	var st state
	if err := json.Unmarshal([]byte(get(t, r.url+"/api/state")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Events) != 2 || st.Events[0].Kind != "refused" || !strings.Contains(st.Events[0].Lines[0], "rig.json:7:21") ||
		st.Events[1].Kind != "reload" {
		t.Errorf("events %+v", st.Events)
	}
	if !strings.Contains(get(t, r.url+"/api/config"), "new text") {
		t.Error("the config shown is not the reloaded one")
	}
	if st.Healthy {
		t.Error("healthy before BeamNG ever connected")
	}
}

// families is a parsed exposition: TYPE per family, samples by name.
type families struct {
	types   map[string]string
	samples map[string][]sampleLine
}

type sampleLine struct {
	labels string
	value  float64
}

func (f families) value(name, labels string) (float64, bool) {
	for _, s := range f.samples[name] {
		if labels == "" || strings.Contains(s.labels, labels) {
			return s.value, true
		}
	}
	return 0, false
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	sampleRE   = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})? (\S+)$`)
	labelRE    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// parseMetrics checks Prometheus' text format strictly: HELP and TYPE before
// a family's samples, one TYPE per family, sample names that belong to a
// declared family, float values, counters named _total, histograms with
// cumulative buckets ending at +Inf = _count.
func parseMetrics(text string) (families, error) {
	f := families{types: map[string]string{}, samples: map[string][]sampleLine{}}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		at := fmt.Sprintf("line %d %q", i+1, line)
		if strings.HasPrefix(line, "#") {
			parts := strings.SplitN(line, " ", 4)
			if len(parts) < 4 || (parts[1] != "HELP" && parts[1] != "TYPE") || !metricName.MatchString(parts[2]) {
				return f, fmt.Errorf("%s: a bad comment line", at)
			}
			if parts[1] == "TYPE" {
				if f.types[parts[2]] != "" {
					return f, fmt.Errorf("%s: a second TYPE", at)
				}
				switch parts[3] {
				case "counter":
					if !strings.HasSuffix(parts[2], "_total") {
						return f, fmt.Errorf("%s: a counter not named _total", at)
					}
				case "gauge", "histogram":
				default:
					return f, fmt.Errorf("%s: type %q", at, parts[3])
				}
				f.types[parts[2]] = parts[3]
			}
			continue
		}
		m := sampleRE.FindStringSubmatch(line)
		if m == nil {
			return f, fmt.Errorf("%s: not a sample line", at)
		}
		name, labels := m[1], m[3]
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return f, fmt.Errorf("%s: value: %v", at, err)
		}
		family := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base := strings.TrimSuffix(name, suf); base != name && f.types[base] == "histogram" {
				family = base
			}
		}
		if f.types[family] == "" {
			return f, fmt.Errorf("%s: no TYPE for %s", at, family)
		}
		f.samples[name] = append(f.samples[name], sampleLine{labels, v})
	}
	for name, typ := range f.types {
		if typ != "histogram" {
			continue
		}
		// Per label set (without le): buckets cumulative, +Inf = count.
		last := map[string]float64{}
		inf := map[string]float64{}
		for _, s := range f.samples[name+"_bucket"] {
			var rest []string
			le := ""
			for _, l := range labelRE.FindAllStringSubmatch(s.labels, -1) {
				if l[1] == "le" {
					le = l[2]
				} else {
					rest = append(rest, l[0])
				}
			}
			key := strings.Join(rest, ",")
			if s.value < last[key] {
				return f, fmt.Errorf("%s%s: buckets not cumulative at le=%s", name, key, le)
			}
			last[key] = s.value
			if le == "+Inf" {
				inf[key] = s.value
			}
		}
		for _, c := range f.samples[name+"_count"] {
			if inf[c.labels] != c.value {
				return f, fmt.Errorf("%s{%s}: +Inf bucket %v, count %v", name, c.labels, inf[c.labels], c.value)
			}
		}
	}
	return f, nil
}

// The coupling's round trips with no client, and with three stalled ones.
func BenchmarkLoopbackStalledClients(b *testing.B) {
	for _, n := range []int{0, 3} {
		b.Run(fmt.Sprintf("stalled=%d", n), func(b *testing.B) {
			r := newRig(b, int64(b.N)*10) // a message every 10 physics steps
			if n > 0 {
				stall(b, r, n)
			}
			b.ResetTimer()
			start := time.Now()
			sum := r.run(b)
			b.ReportMetric(float64(sum.Accepted)/time.Since(start).Seconds(), "roundtrips/s")
			if sum.Stalls != 0 {
				b.Errorf("%d stalls", sum.Stalls)
			}
		})
	}
}

// A reload that changes the ports changes the scope's columns: the stream
// sends the new layout, then samples of the new width.
func TestEventsFollowALayoutChange(t *testing.T) {
	r := newRig(t, 10)
	ring := r.srv.opt.Ring
	resp, err := http.Get(r.url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ev := bufio.NewReader(resp.Body)
	if name, _ := readEvent(t, ev); name != "layout" {
		t.Fatalf("first event %q, want the layout", name)
	}
	gen := ring.Layout().Generation + 1
	ring.SetColumns([]scope.Column{{Name: "status", Port: "out0"}, {Name: "out1.rpm", Port: "out1"}})
	ring.Push(1.5, [][]float64{{3}, {900}})
	var l scope.Layout
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		name, data := readEvent(t, ev)
		switch name {
		case "layout":
			json.Unmarshal(data, &l)
		case "samples":
			var s struct {
				G int64
				T []float64
				V [][]float64
			}
			json.Unmarshal(data, &s)
			if l.Generation != gen || len(l.Columns) != 2 || l.Columns[1].Name != "out1.rpm" {
				t.Fatalf("samples before the new layout: layout %+v", l)
			}
			if s.G != gen || len(s.V) != 2 || s.V[1][0] != 900 || s.T[0] != 1.5 {
				t.Fatalf("samples %+v", s)
			}
			return
		}
	}
	t.Fatal("no samples after the layout change")
}

// When the run ends, every page hears so in a last state (ended, its
// problems the run's, not the disconnection that ends every run) before
// the stream closes, so no page goes on showing a run that is over as if
// it were live.
func TestRunEndReachesThePage(t *testing.T) {
	r := newRig(t, 4000)
	resp, err := http.Get(r.url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ev := bufio.NewReader(resp.Body)
	r.run(t) // the coupling is over and disconnected; the server still serves
	r.stop()
	type st struct {
		Ended    bool
		Healthy  bool
		Status   int
		Problems []string
	}
	var last st
	for {
		name, data, ok := tryEvent(ev)
		if !ok {
			break // the server closed the stream
		}
		if name == "state" {
			last = st{}
			if err := json.Unmarshal(data, &last); err != nil {
				t.Fatal(err)
			}
		}
	}
	<-r.done
	if !last.Ended || !last.Healthy || len(last.Problems) != 0 || last.Status == int(ports.Connected) {
		t.Errorf("the last state the page got: %+v; want ended, healthy, no problems, not connected", last)
	}
	if resp, err := http.Get(r.url + "/api/state"); err == nil {
		resp.Body.Close()
		t.Errorf("the server still answers after the run: %s", resp.Status)
	}
}

// tryEvent reads the next event; false when the stream ended.
func tryEvent(r *bufio.Reader) (name string, data []byte, ok bool) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", nil, false
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && name != "":
			return name, data, true
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = []byte(line[len("data: "):])
		}
	}
}
