package bench

import (
	"math"
	"slices"
)

// Mean is the mean of xs, 0 for none.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Quantile is the nearest-rank p-quantile (0 < p <= 1) of xs, 0 for none.
func Quantile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := min(max(int(math.Ceil(p*float64(len(s)))), 1), len(s))
	return s[k-1]
}
