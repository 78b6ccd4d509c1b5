package coupling

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/fmu/testfmu"
	"beamconnect/models"
	"beamconnect/ports"
)

// swapInputs is the Gen 2 follow rig with its two inputs groups swapped:
// every input port of the ego and the lead trades places.
func swapInputs(t *testing.T, src string) string {
	t.Helper()
	const ego = `    {
      "groupType": "contract",
      "updatePeriodMs": 5,
      "ports": [ [ { "propertyName": "throttle" }, { "propertyName": "brake" } ] ]
    },
`
	const lead = `    {
      "groupType": "contract",
      "remoteObject": "lead",
      "updatePeriodMs": 5,
      "ports": [ [ { "propertyName": "throttle" }, { "propertyName": "brake" } ] ]
    }
`
	if !strings.Contains(src, ego+lead) {
		t.Fatal("the example's inputs groups are not as the test expects")
	}
	return strings.Replace(src, ego+lead, strings.TrimSuffix(lead, "\n")+",\n"+strings.TrimSuffix(ego, ",\n")+"\n", 1)
}

// A reload that swaps the order of the two vehicles' inputs groups moves
// every input port. The model rebinds by field identity, so the lead keeps
// the lead's controls and the ego the ego's: the lead holds its profile's
// 20 m/s and the ego follows it (before, follow kept the old port numbers:
// the lead braked to a standstill while the ego went to full throttle).
func TestReloadRebindsByFieldIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, err := os.ReadFile("../examples/gen2-follow.json")
		if err != nil {
			t.Fatal(err)
		}
		swapped := swapInputs(t, string(src))
		h := rig{cfg: load(t, "../examples/gen2-follow.json"), em: emulator.Config{Steps: 36000}}.sim(t)
		var reloadErr error
		h.run(t, func(ctx context.Context) {
			for ctx.Err() == nil && h.c.Stats().Get(Messages) < 800 { // 4 s
				time.Sleep(5 * time.Millisecond)
			}
			_, reloadErr = reloadConfig(h.s, "../examples/gen2-follow.json", []byte(swapped))
		})
		if reloadErr != nil || h.s.Values()[Reloads] != 1 {
			t.Fatalf("reload: %v, reloads %d", reloadErr, h.s.Values()[Reloads])
		}
		ego, lead := h.ems[0].Vehicle(), h.ems[1].Vehicle()
		if lead.V < 19 || lead.V > 21 || ego.V < 15 || ego.V > 25 {
			t.Errorf("18 s in: the lead at %.1f m/s (its profile says 20), the ego at %.1f m/s: controls crossed?", lead.V, ego.V)
		}
	})
}

// floorReader floors the throttle of vehicle 0 and reads the vehicles
// `reads` lists.
type floorReader struct {
	throttle ref2
	reads    []bool
}

func (m *floorReader) Step(_ float64, _ [][]float64, in [][]float64) bool {
	in[m.throttle.port][m.throttle.elem] = 1
	return true
}

func (m *floorReader) Reads(v int) bool { return m.reads[v] }

// When one vehicle's BeamNG goes silent, a model that reads its data is
// not stepped on them: the other vehicle's replies carry neutral controls
// (counted, and a fault of the run) from at most 0.1 s of its simulation
// on, not the model's last controls for as long as the silence lasts; when
// the silent vehicle comes back, control resumes. A model that does not
// read the silent vehicle keeps controlling the other one.
func TestSilentVehicleIsNeverReadStale(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reads []bool
		stale bool
	}{
		{"model reads both", []bool{true, true}, true},
		{"model reads the ego only", []bool{true, false}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var h *harness
				var during []float64 // the ego's throttle while the lead is away
				h = rig{cfg: load(t, "../examples/follow.json"),
					model: func(p *ports.Plan) models.Model {
						port, elem, _ := p.FindFor(1, "throttle", 0)
						return &floorReader{throttle: ref2{port, elem}, reads: tt.reads}
					},
					faults: map[int]emulator.Faults{1: {StopAt: 2 * time.Second, StopFor: 3 * time.Second}},
					em: emulator.Config{Steps: 14000, Trace: func(r *emulator.StepRecord) {
						if sim := float64(r.Step) * 0.0005; sim > 2.2 && sim < 4.8 {
							during = append(during, h.ems[0].Vehicle().Throttle)
						}
					}}}.sim(t)
				h.run(t)
				ego := h.s.Link(0).Stats()
				frozen := 0
				for _, th := range during {
					if th != 0 {
						frozen++
					}
				}
				faults := strings.Join(h.s.Faults(), "\n")
				if tt.stale {
					if frozen != 0 || ego.Get(StaleData) < 300 || !strings.Contains(faults, "the model reads another vehicle whose data had stopped coming") {
						t.Errorf("while the lead was away: the ego's throttle on at %d of %d steps, %d stale replies; faults:\n%s", frozen, len(during), ego.Get(StaleData), faults)
					}
				} else if frozen != len(during) || ego.Get(StaleData) != 0 {
					t.Errorf("a model that does not read the lead: the ego's throttle on at %d of %d steps, %d stale replies", frozen, len(during), ego.Get(StaleData))
				}
				if h.ems[0].Vehicle().Throttle != 1 || h.ems[1].Vehicle().Throttle != 0 {
					t.Errorf("after the lead came back: ego throttle %v (want 1), lead %v", h.ems[0].Vehicle().Throttle, h.ems[1].Vehicle().Throttle)
				}
			})
		})
	}
}

// A reload whose parameters the FMU refuses (a gain of 50; it takes 0..10)
// is refused whole, before anything is applied: it is a reload error, the
// plan in force and the model's parameters stay, and the next reload is
// compared with what runs, not with the refused one.
func TestReloadRefusedByTheModelChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("a C FMU on the real clock, not under -short")
	}
	fmuPath := testfmu.ForTest(t, "cruise.fmu", testfmu.Options{FMI: 2})
	text := strings.Replace(string(must(os.ReadFile("../examples/fmu-cruise/cruise.json"))), `"path": "cruise.fmu"`,
		`"path": "`+filepath.ToSlash(fmuPath)+`"`, 1)
	path := filepath.Join(filepath.Dir(fmuPath), "fmu-cruise.json")
	os.WriteFile(path, []byte(text), 0o644)
	h := rig{cfg: load(t, path), em: emulator.Config{Steps: 100000}}.udp(t)
	var refused, later error
	var ch ports.Changes
	h.run(t, func(ctx context.Context) {
		h.waitMessages(200)
		_, refused = reloadConfig(h.s, path, []byte(strings.Replace(text, `"kp": 0.3`, `"kp": 50`, 1)))
		ch, later = reloadConfig(h.s, path, []byte(strings.Replace(text, `"kp": 0.3`, `"kp": 0.5`, 1)))
	})
	if refused == nil || !strings.Contains(refused.Error(), "reload refused, nothing applied") || !strings.Contains(refused.Error(), "a gain must be within 0..10") {
		t.Fatalf("a gain of 50: %v", refused)
	}
	if later != nil || !strings.Contains(ch.Params, "kp") || strings.Contains(ch.Params, "50") {
		t.Errorf("the next reload: %v, changes %q: want kp compared with what runs", later, ch.Params)
	}
	v := h.s.Values()
	if v[ReloadErrors] != 1 || v[Reloads] != 1 || v[ModelFaults] != 0 {
		t.Errorf("reload errors %d, reloads %d, model faults %d\n%s", v[ReloadErrors], v[Reloads], v[ModelFaults], h.log)
	}
}

// A reload while BeamNG is paused (no message for seconds) is swapped in
// at once, between two of the loop's idle looks, not at BeamNG's next
// message: Reload returns with the new plan in force, and the coupling
// goes on with it when BeamNG does. (.ci/run runs it under the race
// detector: the reload's preparation and the loop share the model.)
func TestReloadWhileBeamNGIsPaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"),
			faults: map[int]emulator.Faults{0: {PauseAt: time.Second, PauseFor: 3 * time.Second}},
			em:     emulator.Config{Steps: 12000}}.sim(t)
		src := string(must(os.ReadFile("../examples/cruise-pedals.json")))
		var took time.Duration
		var err error
		var during int64
		h.run(t, func(ctx context.Context) {
			for ctx.Err() == nil && h.c.Stats().Get(Messages) < 200 { // 1 s: the pause begins
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(time.Second) // well into the pause
			during = h.c.Stats().Get(Messages)
			start := time.Now()
			_, err = reloadConfig(h.s, "../examples/cruise-pedals.json", []byte(strings.Replace(src, `"setSpeed": 20`, `"setSpeed": 15`, 1)))
			took = time.Since(start)
			if h.c.Stats().Get(Messages) != during {
				t.Error("BeamNG sent during its pause: the test does not test a paused BeamNG")
			}
		})
		if err != nil || took > 100*time.Millisecond || h.s.Values()[Reloads] != 1 {
			t.Fatalf("reload during the pause: %v after %v, reloads %d", err, took, h.s.Values()[Reloads])
		}
		if v := h.em.Vehicle().V; v > 16 || v < 14 {
			t.Errorf("speed %.1f m/s at the end: want the reloaded set speed 15", v)
		}
	})
}
