package coupling

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// BeamNG's coupling stops and, however long after, the user stops
// beamconnect: a clean stop, no fault, a note of when BeamNG stopped. Also
// within 2 s of its last message: BeamNG waits 2 s only for a reply it has
// not had, and every message was answered, so its silence is its stop
// (before, a stop 1.1 to 2.3 s after BeamNG's was a fault: "BeamNG was not
// connected when the run ended … BeamNG's own 2 s wait for a reply, or its
// stop"). The same silence at the end of a run that ends by its duration
// is a fault: a run with a duration expects BeamNG to send throughout.
func TestStopAfterBeamNG(t *testing.T) {
	for _, tt := range []struct {
		name    string
		after   time.Duration // from BeamNG's last message to the run's end
		stopped bool          // ended by the user (cancelled), not by its duration
		faults  []string
		notes   []string
	}{
		{name: "stopped 45 s after BeamNG", after: 45 * time.Second, stopped: true,
			notes: []string{"BeamNG stopped sending 45.0 s before beamconnect was stopped", "a clean stop, not a fault"}},
		{name: "stopped an hour after BeamNG", after: time.Hour, stopped: true,
			notes: []string{"BeamNG stopped sending 3600."}},
		{name: "stopped 1.5 s after BeamNG, inside its 2 s wait", after: 1500 * time.Millisecond, stopped: true,
			notes: []string{"BeamNG stopped sending 1.", "s before beamconnect was stopped", "a clean stop, not a fault"}},
		{name: "stopped 2.1 s after BeamNG", after: 2100 * time.Millisecond, stopped: true,
			notes: []string{"BeamNG stopped sending 2.1 s before beamconnect was stopped"}},
		{name: "the duration ends 1.5 s after BeamNG", after: 1500 * time.Millisecond,
			faults: []string{"BeamNG was not connected when the run ended (status connecting): silent for its last 1.", "s, and the run ended by its duration",
				"BeamNG went silent 1 times while connected"}},
		{name: "the duration ends 45 s after BeamNG", after: 45 * time.Second,
			faults: []string{"BeamNG was not connected when the run ended (status connecting): silent for its last 45.0 s, and the run ended by its duration",
				"BeamNG went silent 1 times while connected"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := rig{cfg: load(t, "../examples/cruise-pedals.json")}
				r.em.Steps = 4000 // 2 s of BeamNG, then its coupling stops
				h := r.sim(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if !tt.stopped {
					// The run's duration: BeamNG's 2 s and tt.after.
					ctx, cancel = context.WithTimeout(ctx, 2*time.Second+tt.after)
					defer cancel()
				}
				done := make(chan struct{})
				go func() {
					defer close(done)
					h.s.Run(ctx)
				}()
				h.em.Run(context.Background())
				if tt.stopped {
					time.Sleep(tt.after) // then Ctrl-C
					cancel()
				}
				<-done
				faults, notes := h.s.Faults(), h.s.Notes()
				for _, want := range tt.faults {
					if !containsAll(faults, want) {
						t.Errorf("faults %q; want %q", faults, want)
					}
				}
				if len(tt.faults) == 0 && len(faults) > 0 {
					t.Errorf("faults %q; want none", faults)
				}
				for _, want := range tt.notes {
					if !containsAll(notes, want) {
						t.Errorf("notes %q; want %q", notes, want)
					}
				}
				if len(tt.notes) == 0 && len(notes) > 0 {
					t.Errorf("notes %q; want none", notes)
				}
				if !strings.Contains(h.log.String(), "BeamNG went silent") {
					t.Errorf("the silence was not logged when it began:\n%s", h.log)
				}
			})
		})
	}
}
