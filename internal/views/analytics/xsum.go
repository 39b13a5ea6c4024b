package analytics

import (
	"math"
	"math/big"
)

// xsum is an exact sum of float64 values: a nonoverlapping expansion
// (Shewchuk, "Adaptive Precision Floating-Point Arithmetic", 1997), its
// components in increasing magnitude, none zero, whose exact sum is the
// sum of everything added. Adding and taking away the same values in any
// order gives the same exact sum, so a window's amount compares with a
// threshold the same way however its events came and left (a restart's
// rebuilt window included), and an empty window's sum is exactly zero.
//
// INVARIANT: the components are nonoverlapping, in increasing magnitude,
// none zero; every value added is at most maxAmount in magnitude and at
// most MaxWindowEdges are held at once, so no partial sum overflows.
type xsum []float64

// maxAmount bounds the magnitude of one amount in a sum (2^990, about
// 1e298; larger weights count as this much): 2^24 of them stay far from
// the float64 range.
var maxAmount = math.Ldexp(1, 990)

// clampAmount is w bounded to ±maxAmount.
func clampAmount(w float64) float64 {
	return max(-maxAmount, min(maxAmount, w))
}

// twoSum returns a+b rounded and its rounding error: s+e == a+b exactly.
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bv := s - a
	av := s - bv
	return s, (a - av) + (b - bv)
}

// add returns the sum with b added (Grow-Expansion with zero
// elimination), reusing x's array.
func (x xsum) add(b float64) xsum {
	q := b
	out := x[:0]
	for _, e := range x { // out[k] is written after x[i] is read, k <= i
		var h float64
		q, h = twoSum(q, e)
		if h != 0 {
			out = append(out, h)
		}
	}
	if q != 0 {
		out = append(out, q)
	}
	if len(out) > 4 {
		out = out.compress()
	}
	return out
}

// compress returns the same sum in as few components as Shewchuk's
// Compress gives (nonadjacent: at most a few dozen over the float64
// range), in place.
func (x xsum) compress() xsum {
	m := len(x)
	if m < 2 {
		return x
	}
	g := make([]float64, m)
	q := x[m-1]
	bottom := m - 1
	for i := m - 2; i >= 0; i-- {
		s, e := fastTwoSum(q, x[i])
		if e != 0 {
			g[bottom] = s
			bottom--
			q = e
		} else {
			q = s
		}
	}
	g[bottom] = q
	out := x[:0]
	for i := bottom + 1; i < m; i++ {
		s, e := fastTwoSum(g[i], q)
		q = s
		if e != 0 {
			out = append(out, e)
		}
	}
	if q != 0 {
		out = append(out, q)
	}
	return out
}

// fastTwoSum is twoSum for |a| >= |b| (or a == 0).
func fastTwoSum(a, b float64) (s, e float64) {
	s = a + b
	return s, b - (s - a)
}

// sign is the sign of the exact sum: that of its largest component.
func (x xsum) sign() int {
	switch {
	case len(x) == 0:
		return 0
	case x[len(x)-1] > 0:
		return 1
	}
	return -1
}

// above reports whether the exact sum exceeds t.
func (x xsum) above(t float64) bool {
	var buf [16]float64
	y := xsum(append(buf[:0], x...))
	return y.add(-t).sign() > 0
}

// value is the exact sum rounded to the nearest float64.
func (x xsum) value() float64 {
	switch len(x) {
	case 0:
		return 0
	case 1:
		return x[0]
	}
	// Exact: every component is a float64, and 2200 bits span them all.
	s := new(big.Float).SetPrec(2200)
	for _, c := range x {
		s.Add(s, new(big.Float).SetFloat64(c))
	}
	v, _ := s.Float64()
	return v
}
