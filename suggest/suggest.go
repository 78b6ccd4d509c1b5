// Package suggest finds the likely intended word for a misspelt one, for
// "did you mean" hints in error messages.
package suggest

import "strings"

// Closest returns the candidate nearest to word (ignoring letter case), or ""
// when none is near enough to be a plausible typo: at most two edits, or a
// third of the word's length for longer words.
func Closest(word string, candidates []string) string {
	best, bestDist := "", -1
	lw := strings.ToLower(word)
	for _, c := range candidates {
		d := Distance(lw, strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist > max(2, len(word)/3) {
		return ""
	}
	return best
}

// Distance is the Levenshtein edit distance between a and b, counted in bytes.
func Distance(a, b string) int {
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
