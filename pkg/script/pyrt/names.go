package pyrt

import (
	"fmt"
	"sort"
	"strings"
)

// UnknownAttr is the message for a missing attribute, with the nearest name
// when one is close: `Tensor has no method "sofmax" (did you mean
// "softmax"?)`. what is "attribute" or "method".
func UnknownAttr(owner, what, name string, names []string) string {
	msg := fmt.Sprintf("%s has no %s %q", owner, what, name)
	if n := Nearest(name, names); n != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", n)
	}
	return msg
}

// Nearest returns the candidate closest to name in edit distance, if it is
// close enough to be a plausible typo. Names starting with _ are never
// suggested.
func Nearest(name string, candidates []string) string {
	best, bestD := "", 1<<30
	sorted := append([]string{}, candidates...)
	sort.Strings(sorted)
	for _, c := range sorted {
		if strings.HasPrefix(c, "_") {
			continue
		}
		d := levenshtein(strings.ToLower(name), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(1, min(3, len(name)/3)) {
		return best
	}
	return ""
}

// levenshtein is the edit distance between a and b (insert, delete,
// substitute, each cost 1).
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
