//go:build !race

package volume

// Race reports whether the tests run under the race detector.
const Race = false
