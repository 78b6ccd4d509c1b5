package suggest

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		name string
		a, b string
		want int
	}{
		{"both empty", "", "", 0},
		{"to empty", "abc", "", 3},
		{"from empty", "", "abc", 3},
		{"a letter left out", "groundspeed", "grondspeed", 1},
		{"kitten sitting", "kitten", "sitting", 3},
		{"flaw lawn", "flaw", "lawn", 2},
		{"swapped letters", "rmp", "rpm", 1},
		{"no edit inside a swap", "ca", "abc", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Distance(tt.a, tt.b); got != tt.want {
				t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
		})
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
		t.Run(tt.word, func(t *testing.T) {
			got := Closest(tt.word, names)
			if got != tt.want {
				t.Errorf("Closest(%q) = %q, want %q", tt.word, got, tt.want)
			}
		})
	}
	if got := Closest("anything", nil); got != "" {
		t.Errorf("Closest with no candidates = %q", got)
	}
}

// Closest skips candidates whose length alone puts them out of reach; it
// must answer exactly as comparing with every candidate does.
func TestClosestSkipsOnlyWhatIsOutOfReach(t *testing.T) {
	brute := func(word string, candidates []string) string {
		best, bestDist := "", -1
		for _, c := range candidates {
			if d := Distance(strings.ToLower(word), strings.ToLower(c)); bestDist < 0 || d < bestDist {
				best, bestDist = c, d
			}
		}
		if bestDist < 0 || bestDist > max(1, len(word)/3) {
			return ""
		}
		return best
	}
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, r.IntN(14))
		for i := range b {
			b[i] = "abcAB"[r.IntN(5)]
		}
		return string(b)
	}
	for range 20000 {
		cands := []string{word(), word(), word(), word()}
		w := word()
		if got, want := Closest(w, cands), brute(w, cands); got != want {
			t.Fatalf("Closest(%q, %q) = %q, want %q", w, cands, got, want)
		}
	}
	if got := Closest(strings.Repeat("x", 1<<20), []string{"throttle", "brake"}); got != "" {
		t.Errorf("a megabyte word is near %q", got)
	}
}
