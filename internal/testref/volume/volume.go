// Package volume marks the tests of volume: many random cases against an
// oracle, large graphs, damage at every offset. Under the race detector,
// which makes such volume two to ten times dearer and needs only the
// concurrency a package's other tests drive, a marked test is skipped;
// make test-volume (which CI runs after make test) runs the marked tests
// without the race detector (the Makefile's GO_TEST_VOLUME and
// GO_TEST_VOLUME_RUN, which TestMarkedTestsRunWithoutRace keeps equal to
// the marked tests), where they run whole. It imports nothing of graphtide, so that any package's
// tests may use it.
package volume

import "testing"

// Size is a test's size: full, or underRace under the race detector. A
// test that calls it is a test of volume too (run again without the race
// detector, at full size), one that keeps a smaller run under the race
// detector because its concurrency is its own, or because make test must
// keep some of it.
func Size(full, underRace int) int {
	if Race {
		return underRace
	}
	return full
}

// Mark marks t as a test of volume (or a case of one): skipped under the
// race detector.
func Mark(t testing.TB) {
	t.Helper()
	if Race {
		t.Skip("a test of volume: make test-volume runs it without the race detector (GO_TEST_VOLUME_RUN)")
	}
}
