package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"", "abc", 3},
		{"groundspeed", "grondspeed", 1},
		{"kitten", "sitting", 3},
		{"flaw", "lawn", 2},
		{"rmp", "rpm", 1},
		{"ca", "abc", 3},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"groundspeed", "wheelspeed", "rpm", "maxrpm", "updatePeriodMs", "updatePeriod"}
	for _, tt := range []struct{ word, want string }{
		{"grondspeed", "groundspeed"},
		{"GROUNDSPEED", "groundspeed"},
		{"rmp", "rpm"},
		{"updatePeriodMS", "updatePeriodMs"},
		{"updatePeriod_", "updatePeriod"},
		{"temperature", ""},
		{"x", ""},  // three edits from "rpm", the nearest
		{"Xo", ""}, // two edits from "rpm" is too many for two letters
	} {
		got := Closest(tt.word, names)
		if got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
	if got := Closest("anything", nil); got != "" {
		t.Errorf("Closest with no candidates = %q", got)
	}
}
