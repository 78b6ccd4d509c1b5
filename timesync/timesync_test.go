package timesync

import (
	"fmt"
	"testing"

	"beamconnect/beamng"
)

func TestModeFor(t *testing.T) {
	if ModeFor(beamng.FromBeamNG) != Slave || ModeFor(beamng.ToBeamNG) != Master {
		t.Fatal("an incoming time-synced contract must make BeamNG the master")
	}
	for m, s := range map[Mode]string{None: "none", Slave: "slave", Master: "master"} {
		if m.String() != s {
			t.Errorf("%d.String() = %q", m, m.String())
		}
	}
}

func TestRemoteTime(t *testing.T) {
	for _, tt := range []struct{ id, period, want float64 }{
		{0, 0.005, 0},
		{200, 0.005, 1},
		{3, 0.0005, 0.0015},
	} {
		t.Run(fmt.Sprintf("id %v at %v s", tt.id, tt.period), func(t *testing.T) {
			if got := RemoteTime(tt.id, tt.period); got-tt.want > 1e-12 || tt.want-got > 1e-12 {
				t.Errorf("RemoteTime(%v, %v) = %v, want %v", tt.id, tt.period, got, tt.want)
			}
		})
	}
}
