package testref

import "testing"

// Volume marks a test, or a case of one, whose worth is its volume: many
// random cases against an oracle, or a large graph. Under the race
// detector it is skipped: the race detector needs the concurrency the
// package's other tests already drive, and makes such volume five to ten
// times dearer. make test runs the packages that call Volume a second
// time without the race detector (the Makefile's GO_TEST_VOLUME, checked
// by TestVolumePackagesRunWithoutRace), where every Volume test runs.
func Volume(t testing.TB) {
	t.Helper()
	if Race {
		t.Skip("a test of volume: make test runs it without the race detector (test-go-volume)")
	}
}
