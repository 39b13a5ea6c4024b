package views

import (
	"fmt"

	"github.com/graphtide/graphtide/internal/engine"
)

// IDSpace is the set of vertex ids a view can hold, mapped onto the dense
// indexes [0, Len()): ids [0, Low) map to themselves and ids
// [engine.HighIDBase, High) (string keys) follow them. A band is empty when
// its bound is 0 (Low) or not above HighIDBase (High).
type IDSpace struct {
	Low  uint64 // one past the largest id below engine.HighIDBase
	High uint64 // one past the largest id at or above it, or 0
}

// highBase is engine.HighIDBase, the first id of the high band.
const highBase = engine.HighIDBase

// MaxDenseIDs bounds Len(): per-vertex state for a larger space would not
// fit in memory, so analytics refuse it with a message naming the cause.
const MaxDenseIDs = 1 << 31

func (s IDSpace) highLen() uint64 {
	if s.High <= highBase {
		return 0
	}
	return s.High - highBase
}

// Len is the number of ids in the space.
func (s IDSpace) Len() int { return int(s.Low + s.highLen()) }

// Check returns an error when the space is too large for dense state.
func (s IDSpace) Check() error {
	if n := s.Low + s.highLen(); n > MaxDenseIDs {
		return fmt.Errorf("views: the vertex id space holds %d ids (numeric ids up to %d, %d string keys), more than %d; "+
			"per-vertex state would not fit: give vertices dense numeric ids or string keys", n, s.Low, s.highLen(), MaxDenseIDs)
	}
	return nil
}

// Index returns v's dense index, or false when v lies outside the space.
func (s IDSpace) Index(v uint64) (int, bool) {
	if v < s.Low {
		return int(v), true
	}
	if v >= highBase && v < s.High {
		return int(s.Low + (v - highBase)), true
	}
	return 0, false
}

// ID is the vertex id of dense index i, 0 <= i < Len().
func (s IDSpace) ID(i int) uint64 {
	if uint64(i) < s.Low {
		return uint64(i)
	}
	return highBase + (uint64(i) - s.Low)
}

// Contains reports whether every id of o is in s with the same index. It
// holds when o's low band is no larger and o has no high ids beyond s's,
// and either the low bands are equal or o has no high band (growing the
// low band shifts the high band's indexes).
func (s IDSpace) Contains(o IDSpace) bool {
	if o.Low > s.Low || o.highLen() > s.highLen() {
		return false
	}
	return o.Low == s.Low || o.highLen() == 0
}

// Ranges calls f with the id ranges [lo, hi) of the space, low band first.
func (s IDSpace) Ranges(f func(lo, hi uint64) error) error {
	if s.Low > 0 {
		if err := f(0, s.Low); err != nil {
			return err
		}
	}
	if s.highLen() > 0 {
		return f(highBase, s.High)
	}
	return nil
}
