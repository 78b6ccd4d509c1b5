package contracts

import (
	"math"
	"testing"
)

func TestParseMeta(t *testing.T) {
	for _, tt := range []struct {
		name     string
		want     Meta
		commData bool
	}{
		{"time", Time, false},
		{"receive_time_offset", ReceiveTimeOffset, false},
		{"serial_number", SerialNumber, false},
		{"ping_results", PingResults, true},
		{"pingResults", PingResults, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := ParseMeta(tt.name)
			if !ok || m != tt.want || m.CommData() != tt.commData {
				t.Errorf("ParseMeta(%q) = %v %v", tt.name, m, ok)
			}
		})
	}
	for _, bad := range []string{"", "Time", "serialNumber", "rpm"} {
		if m, ok := ParseMeta(bad); ok {
			t.Errorf("ParseMeta(%q) = %v", bad, m)
		}
	}
	if PingResults.String() != "ping_results" || NotMeta.String() != "not meta" {
		t.Error("String")
	}
	if len(MetaNames()) != 4 {
		t.Errorf("MetaNames = %v", MetaNames())
	}
}

func TestSchedule(t *testing.T) {
	for _, tt := range []struct {
		name             string
		period, coupling float64
		every            int
		real             float64
	}{
		{"same as the coupling", 0.005, 0.005, 1, 0.005},
		{"faster than BeamNG sends", 0.001, 0.005, 1, 0.005}, // every message
		{"every tenth message", 0.05, 0.005, 10, 0.05},
		{"not a multiple", 0.012, 0.005, 3, 0.015}, // rounded up
		{"every third step", 0.0015, 0.0005, 3, 0.0015},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSchedule(tt.period, tt.coupling)
			if s.Every != tt.every || s.Period-tt.real > 1e-12 || tt.real-s.Period > 1e-12 {
				t.Errorf("NewSchedule(%g, %g) = %+v, want every %d (%g s)", tt.period, tt.coupling, s, tt.every, tt.real)
			}
		})
	}
	s := Schedule{Every: 3}
	var due []uint64
	for id := uint64(0); id < 10; id++ {
		if s.Due(id) {
			due = append(due, id)
		}
	}
	if len(due) != 4 || due[0] != 0 || due[3] != 9 {
		t.Errorf("due ids %v, want 0 3 6 9", due)
	}
	if !(Schedule{Every: 1}).Due(7) || !(Schedule{}).Due(7) {
		t.Error("a schedule of every message skipped one")
	}
}

// The memo's example: an update at t=10.0 with period 0.1 and overdue
// timeout 0.5 is expected by 10.1; without one the contract blocks after 10.6.
func TestOverdue(t *testing.T) {
	c := Incoming{Schedule: Schedule{Period: 0.1, Every: 20}, Overdue: 0.5}
	c.Start(0)
	if c.Check(0.59) || !c.Check(0.61) {
		t.Error("before the first update: blocked from one period plus the timeout after the start")
	}
	c.Update(2000, 10.0, 10.0)
	if c.Blocked || c.Check(10.59) || !c.Check(10.61) || !c.Blocked {
		t.Error("the memo's example: blocked from 10.6, not before")
	}
	c.Update(2020, 10.1, 10.65)
	if c.Blocked || math.Abs(c.ReceiveTimeOffset()-0.55) > 1e-12 || c.Serial != 2020 {
		t.Errorf("an update unblocks and records: %+v", c)
	}
	off := Incoming{Schedule: Schedule{Period: 0.1}, Overdue: -1}
	off.Start(0)
	if off.Check(1e9) {
		t.Error("overdue detection off still blocked")
	}
}
