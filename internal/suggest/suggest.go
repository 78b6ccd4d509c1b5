// Package suggest finds the likely intended word for a misspelt one, for
// "did you mean" hints in error messages.
package suggest

import "strings"

// Closest returns the candidate nearest to word (ignoring letter case), or ""
// when none is near enough to be a plausible typo: one edit per three
// letters, and at least one.
func Closest(word string, candidates []string) string {
	best, bestDist := "", -1
	lw := strings.ToLower(word)
	limit := max(1, len(word)/3)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		// Words whose lengths differ by more than the limit are further
		// apart than that: skipping them changes nothing, and keeps a long
		// word (a garbled line) from costing its length times every
		// candidate's.
		if len(lw)-len(lc) > limit || len(lc)-len(lw) > limit {
			continue
		}
		d := Distance(lw, lc)
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist > limit {
		return ""
	}
	return best
}

// Distance is the optimal string alignment distance between a and b, counted
// in bytes: insertions, deletions, substitutions and swaps of two adjacent
// letters ("rmp" for "rpm") each cost one.
func Distance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j]; three rows suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
