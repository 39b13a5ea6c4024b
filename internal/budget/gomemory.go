package budget

import (
	"math"
	"runtime/metrics"
)

// GoMemory is the memory the Go runtime holds and has not returned to
// the OS, and the limit GOMEMLIMIT sets on it (serve: Plan.GoLimit, unless
// the environment gives one; math.MaxInt64: none), read together.
func GoMemory() (held, limit int64) {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	limit = math.MaxInt64
	if s[2].Value.Kind() == metrics.KindUint64 {
		limit = int64(min(s[2].Value.Uint64(), math.MaxInt64))
	}
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0, limit
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64()), limit
}
