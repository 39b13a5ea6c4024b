//go:build race

package testref

// Race reports whether the tests run under the race detector.
const Race = true
