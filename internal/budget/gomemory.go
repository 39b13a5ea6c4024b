package budget

import "runtime/metrics"

// GoMemory is the memory the Go runtime holds and has not returned to
// the OS: what GOMEMLIMIT (Plan.GoLimit) limits.
func GoMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
