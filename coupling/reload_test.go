package coupling

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/fmu/testfmu"
	"beamconnect/models"
	"beamconnect/ports"
)

// rigVersion is the cruise rig at version k: the inputs carry k in two
// custom slots, so every reply says which plan built it.
func rigVersion(k int, extra string) string {
	return fmt.Sprintf(`{"version": 2,
  "outputs": [{"updatePeriodMs": 5, "ports": [[{"propertyName": "groundspeed"}], [{"propertyName": "rpm"}]]}],
  "inputs": [{"ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}],
                        [{"propertyName": "custom1", "initialValue": %d}, {"propertyName": "custom2", "initialValue": %d}]%s]}],
  "beamng": {"model": "cruise-pedals", "modelParams": {"setSpeed": 20}}
}`, k, k, extra)
}

// observer sits on BeamNG's side of the link and reads every reply.
type observer struct {
	emulator.Transport
	mu      sync.Mutex
	version float64
	changed map[float64]time.Time // when each version was first seen
	mixed   int                   // replies whose two version slots disagree
	replies int
	msg     []float64
	news    chan struct{} // closed when a version is first seen (nil while nobody waits)
}

func (o *observer) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	n, ok := o.Transport.Recv(buf, wait, stop)
	if ok && n == 8*beamng.ControlLen {
		beamng.Decode(o.msg, buf[:n])
		o.mu.Lock()
		o.replies++
		c1, c2 := o.msg[14], o.msg[15]
		if c1 != c2 && !(math.IsNaN(c1) && math.IsNaN(c2)) {
			o.mixed++
		}
		if _, seen := o.changed[c1]; !seen {
			o.changed[c1] = time.Now()
			if o.news != nil {
				close(o.news)
				o.news = nil
			}
		}
		o.version = c1
		o.mu.Unlock()
	}
	return n, ok
}

func (o *observer) seen(v float64) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.changed[v]
	return t, ok
}

// await waits until a reply of version v has been seen, and says when it
// first was; it looks again at each new version, not on a timer.
func (o *observer) await(v float64) time.Time {
	for {
		o.mu.Lock()
		t, ok := o.changed[v]
		if ok {
			o.mu.Unlock()
			return t
		}
		if o.news == nil {
			o.news = make(chan struct{})
		}
		next := o.news
		o.mu.Unlock()
		<-next
	}
}

// reloadRig runs the rig from a file in a temp dir, watched, against the
// emulator over real sockets (the file watcher is real I/O); it returns
// the file, the observer and a stop func.
func reloadRig(t testing.TB) (string, *harness, *observer, func()) {
	path := filepath.Join(t.TempDir(), "rig.json")
	if err := os.WriteFile(path, []byte(rigVersion(0, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	obs := &observer{changed: map[float64]time.Time{}, msg: make([]float64, beamng.ControlLen)}
	h := rig{cfg: load(t, path), wrap: func(_ int, tr emulator.Transport) emulator.Transport {
		obs.Transport = tr
		return obs
	}}.udp(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.s.Run(ctx) })
	wg.Go(func() { h.emSum, _ = h.em.Run(ctx) })
	w := config.NewWatcher(path, 0, nil)
	wg.Go(func() { w.Run(ctx, func(data []byte) { reloadConfig(h.s, path, data) }) })
	obs.await(0)
	return path, h, obs, func() { cancel(); wg.Wait() }
}

// write saves content, in place or the way editors do (a temporary file
// renamed over the config).
func write(t testing.TB, path, content string, atomic bool) {
	if !atomic {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// 20 reloads while the coupling runs: every valid change is live at the
// next message, no BeamNG message goes unanswered, no reply mixes two
// plans, and invalid or restart-only changes are refused and change nothing.
func TestReloadWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &observer{changed: map[float64]time.Time{}, msg: make([]float64, beamng.ControlLen)}
		cfg, _ := config.Parse("rig.json", []byte(rigVersion(0, "")))
		h := rig{cfg: cfg, em: emulator.Config{Steps: 20000}, wrap: func(_ int, tr emulator.Transport) emulator.Transport {
			obs.Transport = tr
			return obs
		}}.sim(t)
		var lat []time.Duration
		refused := 0
		h.run(t, func(ctx context.Context) {
			for k := 1; k <= 20; k++ {
				time.Sleep(200 * time.Millisecond)
				content := rigVersion(k, "")
				bad := true
				switch k {
				case 7:
					content = content[:len(content)/2] // a half-written file
				case 12:
					content = rigVersion(k, `, [{"propertyName": "custum3"}]`) // unknown propertyName
				case 16:
					content = strings.Replace(content, `"beamng": {`, `"beamng": {"localPort": 64999, `, 1) // restart-only
				default:
					bad = false
				}
				start := time.Now()
				_, err := reloadConfig(h.s, "rig.json", []byte(content))
				if bad {
					time.Sleep(100 * time.Millisecond)
					if _, ok := obs.seen(float64(k)); ok || err == nil {
						t.Errorf("version %d was refused (%v) yet reached BeamNG", k, err)
					}
					refused++
					continue
				}
				for {
					if at, ok := obs.seen(float64(k)); ok {
						lat = append(lat, at.Sub(start))
						break
					}
					if time.Since(start) > time.Second {
						t.Errorf("version %d never went live", k)
						return
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
		slices.Sort(lat)
		// Live at BeamNG's next message: within a frame of BeamNG's pacing.
		if len(lat) != 17 || lat[len(lat)-1] > 20*time.Millisecond {
			t.Errorf("%d reloads live, the slowest after %v: want 17, each at the next message", len(lat), lat[len(lat)-1])
		}
		v := h.s.Values()
		if v[Reloads] != 17 || v[ReloadErrors] != 3 || refused != 3 {
			t.Errorf("reloads %d, refused %d, want 17 and 3", v[Reloads], v[ReloadErrors])
		}
		if obs.mixed != 0 {
			t.Errorf("%d replies mixed two plans", obs.mixed)
		}
		if v[Messages] != v[Replies] || h.emSum.Stalls != 0 || h.emSum.Accepted < h.emSum.Sent-1 {
			t.Errorf("messages %d replies %d; BeamNG: %v", v[Messages], v[Replies], h.emSum)
		}
	})
}

// A restart-only change is refused whole, named, and nothing is applied.
func TestReloadRefusesRestartOnly(t *testing.T) {
	cfg, _ := config.Parse("rig.json", []byte(rigVersion(1, "")))
	s := newDirect(t, cfg, nil, nil).s
	before := s.Plan()
	_, err := reloadConfig(s, "rig.json", []byte(strings.Replace(rigVersion(2, ""), `"beamng": {`, `"beamng": {"localPort": 7000, "replyId": "echo", `, 1)))
	if err == nil || !strings.Contains(err.Error(), "reload refused, nothing applied") ||
		!strings.Contains(err.Error(), "the local address (beamng.localIP/localPort) (127.0.0.1:64890 → 127.0.0.1:7000)") {
		t.Fatalf("error %v", err)
	}
	s.stage.enter()
	s.stage.leave()
	if s.Plan() != before || s.Plan().ReplyID != "next" {
		t.Error("a refused reload changed the running plan")
	}
	// A bad file names file:line:col.
	_, err = reloadConfig(s, "rig.json", []byte(strings.Replace(rigVersion(3, ""), "custom2", "custum2", 1)))
	var ds config.Diagnostics
	if !errors.As(err, &ds) || !strings.Contains(ds.Error(), `rig.json:4:91: inputs[0].ports[1][1].propertyName: "custum2" is not a BeamNG signal (did you mean "custom2"?)`) {
		t.Errorf("error %v", err)
	}
	if n := s.Values()[ReloadErrors]; n != 2 {
		t.Errorf("reload errors %d", n)
	}
}

// BenchmarkReload: file written → new plan live, against a running
// coupling; reports median and p99 per reload.
func BenchmarkReload(b *testing.B) {
	path, _, obs, stop := reloadRig(b)
	defer stop()
	var lat []time.Duration
	k := 0
	for b.Loop() {
		k++
		start := time.Now()
		write(b, path, rigVersion(k, ""), k%2 == 0)
		lat = append(lat, obs.await(float64(k)).Sub(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1e3, "median-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1e3, "p99-ms")
}

// fleetVersion is a two-vehicle rig at version k: each vehicle's reply
// carries k (a: k, b: 100+k) in custom1; from version 2 on, custom2 moves
// from vehicle a to vehicle b (a field re-mapped across vehicles) and a
// gets rpm (a field added); every version's reply-id policy is given.
func fleetVersion(k int, policy string) string {
	custom2 := `"a"`
	rpm := ""
	if k >= 2 {
		custom2, rpm = `"b"`, `, [{"propertyName": "rpm", "remoteObject": "a"}]`
	}
	return fmt.Sprintf(`{"version": 2,
  "outputs": [{"updatePeriodMs": 5, "ports": [[{"propertyName": "groundspeed", "remoteObject": "a"}, {"propertyName": "groundspeed", "remoteObject": "b"}]%s]}],
  "inputs": [{"ports": [[{"propertyName": "custom1", "remoteObject": "a", "initialValue": %d}, {"propertyName": "custom1", "remoteObject": "b", "initialValue": %d},
                         {"propertyName": "custom2", "remoteObject": %s, "initialValue": 7}]]}],
  "beamng": {"replyId": %q, "vehicles": {"a": {"localPort": 40000, "remotePort": 40001}, "b": {"localPort": 40002, "remotePort": 40003}}}
}`, rpm, k, 100+k, custom2, policy)
}

// fleetObserver reads vehicle v's replies on BeamNG's side: the version in
// custom1, custom2, and the reply ids.
type fleetObserver struct {
	emulator.Transport
	mu      sync.Mutex
	msg     []float64
	version float64
	custom2 float64
	ids     []float64
}

func (o *fleetObserver) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	n, ok := o.Transport.Recv(buf, wait, stop)
	if ok && n == 8*beamng.ControlLen {
		beamng.Decode(o.msg, buf[:n])
		o.mu.Lock()
		o.version, o.custom2 = o.msg[14], o.msg[15]
		o.ids = append(o.ids, o.msg[0])
		o.mu.Unlock()
	}
	return n, ok
}

func (o *fleetObserver) now() (version, custom2 float64, ids int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.version, o.custom2, len(o.ids)
}

// A config of several vehicles reloads while it runs: values per vehicle,
// a field moved from one vehicle to the other, a field added, the reply-id
// policy, all live at each vehicle's next message; adding a vehicle is
// refused, named restart-only, and changes nothing.
func TestFleetReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := config.Parse("fleet.json", []byte(fleetVersion(1, "next")))
		if err != nil {
			t.Fatal(err)
		}
		obs := []*fleetObserver{{msg: make([]float64, beamng.ControlLen)}, {msg: make([]float64, beamng.ControlLen)}}
		h := rig{cfg: cfg, model: func(*ports.Plan) models.Model { return models.Hold{} }, starts: []int64{0, 5},
			em: emulator.Config{Steps: 4000},
			wrap: func(v int, tr emulator.Transport) emulator.Transport {
				obs[v].Transport = tr
				return obs[v]
			}}.sim(t)
		var errs []error
		var changes [][]string
		h.run(t, func(ctx context.Context) {
			time.Sleep(300 * time.Millisecond)
			for _, text := range []string{fleetVersion(2, "counter"), strings.Replace(fleetVersion(3, "counter"),
				`"b": {"localPort": 40002, "remotePort": 40003}`, `"b": {"localPort": 40002, "remotePort": 40003}, "c": {"localPort": 40004, "remotePort": 40005}`, 1)} {
				ch, err := reloadConfig(h.s, "fleet.json", []byte(text))
				errs, changes = append(errs, err), append(changes, ch.Live)
				time.Sleep(300 * time.Millisecond)
			}
		})
		if errs[0] != nil || len(changes[0]) == 0 {
			t.Fatalf("the fleet reload was refused: %v", errs[0])
		}
		joined := strings.Join(changes[0], "\n")
		for _, want := range []string{"a.custom1@B1", "b.custom2@B2", "reply ids: next → counter", "a.rpm"} {
			if !strings.Contains(joined, want) {
				t.Errorf("the reload's changes lack %q:\n%s", want, joined)
			}
		}
		if errs[1] == nil || !strings.Contains(errs[1].Error(), "the number of vehicles (2 → 3)") {
			t.Errorf("adding a vehicle: %v, want it refused as restart-only", errs[1])
		}
		va, a2, _ := obs[0].now()
		vb, b2, _ := obs[1].now()
		// Vehicle a no longer writes custom2 (NaN: BeamNG keeps it); b does.
		if va != 2 || vb != 102 || !math.IsNaN(a2) || b2 != 7 {
			t.Errorf("at the end a sends version %v, custom2 %v; b version %v, custom2 %v: want 2, NaN, 102, 7", va, a2, vb, b2)
		}
		if v := h.s.Values(); v[Reloads] != 1 || v[ReloadErrors] != 1 || v[Messages] != v[Replies] {
			t.Errorf("reloads %d, refused %d, messages %d, replies %d", v[Reloads], v[ReloadErrors], v[Messages], v[Replies])
		}
		for v, s := range h.sums {
			if s.Stalls != 0 || s.Accepted < s.Sent-1 {
				t.Errorf("vehicle %d: %v", v, s)
			}
		}
	})
}

// A built-in model's parameters reload live, as a Simulink user tunes a
// running model: the cruise rig's set speed goes from 20 to 12 m/s and the
// car follows, the controller keeping its state. What binds a model (follow's
// ego and lead) is refused, named with its values as the config writes them.
func TestModelParametersReloadLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		text, _ := os.ReadFile("../examples/cruise-pedals.json")
		cfg, err := config.Parse("cruise.json", text)
		if err != nil {
			t.Fatal(err)
		}
		h := rig{cfg: cfg, em: emulator.Config{Steps: 120000}}.sim(t)
		var ch ports.Changes
		h.run(t, func(ctx context.Context) {
			time.Sleep(30 * time.Second)
			ch, err = reloadConfig(h.s, "cruise.json", []byte(strings.Replace(string(text), `"setSpeed": 20`, `"setSpeed": 12`, 1)))
		})
		if err != nil || ch.Params != "beamng.modelParams.setSpeed 20 → 12" {
			t.Fatalf("reload: %v, %q", err, ch.Params)
		}
		speed := func(i int) float64 { return h.samples[i].V }
		if n := len(h.samples); math.Abs(speed(28)-20) > 0.5 || math.Abs(speed(n-1)-12) > 0.5 {
			t.Errorf("speed %.2f before the reload, %.2f at the end: want 20, then 12", speed(28), speed(n-1))
		}
		if v := h.s.Values(); v[Reloads] != 1 || h.emSum.Stalls != 0 {
			t.Errorf("reloads %d, BeamNG %v", v[Reloads], h.emSum)
		}
	})
	text, _ := os.ReadFile("../examples/follow.json")
	cfg, err := config.Parse("follow.json", text)
	if err != nil {
		t.Fatal(err)
	}
	s := newDirect(t, cfg, nil, nil).s
	_, err = reloadConfig(s, "follow.json", []byte(strings.Replace(string(text), `"ego": "ego", "lead": "lead", "timeGap": 1.8`, `"ego": "lead", "lead": "ego", "timeGap": 2.2`, 1)))
	if err == nil || !strings.Contains(err.Error(), `modelParams.ego ("ego" → "lead")`) || !strings.Contains(err.Error(), "restart beamconnect") {
		t.Errorf("re-binding follow: %v", err)
	}
	_, err = reloadConfig(s, "follow.json", []byte(strings.Replace(string(text), `"timeGap": 1.8`, `"timeGap": -1`, 1)))
	if err == nil || !strings.Contains(err.Error(), "modelParams.timeGap: expected a number above 0") {
		t.Errorf("a bad time gap: %v", err)
	}
	if _, err := reloadConfig(s, "follow.json", []byte(strings.Replace(string(text), `"timeGap": 1.8`, `"timeGap": 2.2`, 1))); err != nil {
		t.Errorf("a new time gap: %v", err)
	}
}

// An FMU's tunable parameters reload live through the session: the cruise
// FMU's setSpeed goes from 20 to 12 m/s while it runs (in process here; the
// child process takes the same path), and the car follows.
func TestFMUParametersReloadLive(t *testing.T) {
	if testing.Short() {
		t.Skip("a C FMU on the real clock, not under -short")
	}
	fmuPath := testfmu.ForTest(t, "cruise.fmu", testfmu.Options{FMI: 2})
	text := strings.Replace(string(must(os.ReadFile("../examples/fmu-cruise/cruise.json"))), `"path": "cruise.fmu"`,
		fmt.Sprintf(`"path": %q, "inProcess": true`, fmuPath), 1)
	path := filepath.Join(filepath.Dir(fmuPath), "fmu-cruise.json")
	os.WriteFile(path, []byte(text), 0o644)
	var err error
	h := rig{cfg: load(t, path), em: emulator.Config{Steps: 100000}}.udp(t)
	h.run(t, func(ctx context.Context) {
		h.waitMessages(5000) // 25 s simulated
		_, err = reloadConfig(h.s, path, []byte(strings.Replace(text, `"setSpeed": 20`, `"setSpeed": 12`, 1)))
	})
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	n := len(h.samples)
	if speed := h.samples[n-1].V; math.Abs(h.samples[20].V-20) > 0.5 || math.Abs(speed-12) > 0.5 {
		t.Errorf("speed %.2f at 20 s, %.2f at the end: want 20, then 12", h.samples[20].V, speed)
	}
	if v := h.s.Values(); v[Reloads] != 1 || v[ModelFaults] != 0 {
		t.Errorf("reloads %d, model faults %d", v[Reloads], v[ModelFaults])
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
