package coupling

import (
	"math"
	"sync/atomic"
	"time"
)

// Histogram records durations without locks or allocation, so the loop can
// record every turnaround and a status line can read quantiles while it
// runs. Buckets are 1 µs wide up to 2 ms, then 5 % wide up to about 40 s.
type Histogram struct {
	buckets [linearBuckets + logBuckets]atomic.Int64
	count   atomic.Int64
	sum     atomic.Int64 // ns
	max     atomic.Int64
	last    atomic.Int64
}

const (
	linearBuckets = 2000 // 0–2 ms in 1 µs steps
	logBuckets    = 210  // 2 ms × 1.05^210 ≈ 56 s
	logBase       = 1.05
)

func bucketOf(us int64) int {
	if us < linearBuckets {
		return int(max(us, 0))
	}
	i := linearBuckets + int(math.Log(float64(us)/linearBuckets)/math.Log(logBase))
	return min(i, linearBuckets+logBuckets-1)
}

// upper is the largest duration bucket i holds, in µs.
func upper(i int) float64 {
	if i < linearBuckets {
		return float64(i)
	}
	return linearBuckets * math.Pow(logBase, float64(i-linearBuckets+1))
}

// Observe records one duration.
func (h *Histogram) Observe(d time.Duration) {
	us := d.Microseconds()
	h.buckets[bucketOf(us)].Add(1)
	h.count.Add(1)
	h.sum.Add(int64(d))
	h.last.Store(int64(d))
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// Sum is the total of the recorded durations.
func (h *Histogram) Sum() time.Duration { return time.Duration(h.sum.Load()) }

// CountAtMost is how many recorded durations were at most d, to the
// buckets' resolution (1 µs up to 2 ms, 5 % above): a bucket counts when
// all it holds is below d (the linear ones) or at most d.
func (h *Histogram) CountAtMost(d time.Duration) int64 {
	bound := float64(d) / float64(time.Microsecond)
	var n int64
	for i := range h.buckets {
		if i < linearBuckets && float64(i)+1 > bound || i >= linearBuckets && upper(i) > bound {
			break
		}
		n += h.buckets[i].Load()
	}
	return n
}

// Count is how many durations were recorded.
func (h *Histogram) Count() int64 { return h.count.Load() }

// Max is the longest recorded; Last the most recent.
func (h *Histogram) Max() time.Duration  { return time.Duration(h.max.Load()) }
func (h *Histogram) Last() time.Duration { return time.Duration(h.last.Load()) }

// Quantile is the duration below which a fraction q of the recorded ones
// lie, to the bucket's resolution (1 µs below 2 ms); 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= rank {
			return min(time.Duration(upper(i)*float64(time.Microsecond)), h.Max())
		}
	}
	return h.Max()
}
