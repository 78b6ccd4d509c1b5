package coupling

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/cosim"
)

// The classic mistakes of a new rig are said live, once, with the fix.
func TestDiagnoses(t *testing.T) {
	for _, tt := range []struct {
		name   string
		config string
		setup  func(t *testing.T, r *rig)
		after  func(h *harness) // once built, before the run
		want   []string
		// fault: the verdict's line of the diagnosis, with its fix ("":
		// none, the diagnosis was not a fault in the end)
		fault string
	}{
		{name: "replies go where BeamNG does not listen", config: "cruise-pedals",
			setup: func(t *testing.T, r *rig) { r.em.Steps = 300 },
			after: func(h *harness) { h.c.SetRemote(netip.MustParseAddrPort("127.0.0.1:7")) },
			want: []string{"BeamNG waits 2 s for a reply after every message although each one is answered",
				"replies_to=127.0.0.1:7", "udpReceivePort"},
			fault: "diagnosed: BeamNG waits 2 s for a reply after every message although each one is answered: the replies go where BeamNG is not listening: set remoteIP and remotePort"},
		{name: "nothing comes", config: "cruise-pedals",
			setup: func(t *testing.T, r *rig) { r.em.Steps, r.starts = 24000, []int64{24000} },
			want:  []string{"nothing has come from BeamNG yet", "must send to 127.0.0.1:", "start_with=\"extensions.load('tech/vehicleSystemsCoupling')"}},
		{name: "Gen 1 config, Gen 2 BeamNG", config: "cruise-pedals",
			setup: func(t *testing.T, r *rig) {
				f, err := cosim.Load("../examples/gen2-cruise.csv")
				if err != nil {
					t.Fatal(err)
				}
				r.em.Steps, r.csv = 4000, f
			},
			want: []string{"dropped datagrams from BeamNG's address of a length this coupling does not send",
				"BeamNG runs the Gen 2 co-simulation coupling (cosimulationCoupling) with", `Set beamng.protocol to \"csv\"`},
			fault: "diagnosed: dropped datagrams from BeamNG's address of a length this coupling does not send (64 bytes, expected 888): 8 doubles is not Gen 1's 111"},
		{name: "Gen 2 config, Gen 1 BeamNG", config: "gen2-cruise",
			setup: func(t *testing.T, r *rig) { r.em.Steps, r.gen1 = 4000, true },
			want:  []string{"BeamNG's messages are longer than this coupling's layout", "111 doubles is Gen 1's vehicleSystemsCoupling"},
			fault: "diagnosed: BeamNG's messages are longer than this coupling's layout: the extra values are ignored (111 doubles): 111 doubles is Gen 1's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := rig{cfg: load(t, "../examples/"+tt.config+".json")}
				tt.setup(t, &r)
				h := r.sim(t)
				if tt.after != nil {
					tt.after(h)
				}
				h.run(t)
				for _, want := range tt.want {
					if n := strings.Count(h.log.String(), want); n != 1 {
						t.Errorf("%q said %d times, want once:\n%s", want, n, h.log)
					}
				}
				// The verdict repeats it, the cause first, with its fix.
				faults := h.s.Faults()
				if tt.fault != "" && (len(faults) == 0 || !strings.HasPrefix(faults[0], tt.fault)) {
					t.Errorf("the faults begin %q; want %q", faults, tt.fault)
				}
				ds := h.s.Diagnoses(time.Now())
				if len(ds) != 1 || !strings.Contains(tt.want[0], ds[0].What) && !strings.Contains(ds[0].What, tt.want[0]) {
					t.Errorf("diagnoses %+v; want the one said", ds)
				}
				if tt.fault == "" && slices.ContainsFunc(faults, func(f string) bool { return strings.HasPrefix(f, "diagnosed") }) {
					t.Errorf("faults %q; want no diagnosis among them", faults)
				}
			})
		})
	}
}
