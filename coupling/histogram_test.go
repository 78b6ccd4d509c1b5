package coupling

import (
	"testing"
	"time"
)

// CountAtMost gives Prometheus' cumulative buckets: what lies at or below
// each bound, to the histogram's resolution; Sum the total.
func TestHistogramCountAtMost(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{3 * time.Microsecond, 7 * time.Microsecond, 7 * time.Microsecond, 150 * time.Microsecond, 3 * time.Millisecond, 2 * time.Second} {
		h.Observe(d)
	}
	for _, tt := range []struct {
		bound time.Duration
		want  int64
	}{{time.Microsecond, 0}, {5 * time.Microsecond, 1}, {8 * time.Microsecond, 3}, {100 * time.Microsecond, 3},
		{time.Millisecond, 4}, {2 * time.Millisecond, 4}, {5 * time.Millisecond, 5}, {time.Second, 5}, {10 * time.Second, 6}} {
		t.Run(tt.bound.String(), func(t *testing.T) {
			if got := h.CountAtMost(tt.bound); got != tt.want {
				t.Errorf("at most %v: %d, want %d", tt.bound, got, tt.want)
			}
		})
	}
	if want := 2*time.Second + 3*time.Millisecond + 167*time.Microsecond; h.Sum() != want {
		t.Errorf("sum %v, want %v", h.Sum(), want)
	}
}
