// Package leakcheck catches handles that are dropped without being
// released: snapshots of the store and static views. In a build with the
// race detector (go test -race, which make test runs) Watch gives a handle
// a finalizer that, if the garbage collector finds the handle unreachable
// while it is still open, panics with the stack that created it, so the
// leak fails the test run that made it. In any other build Watch does
// nothing and costs nothing.
//
// A watched handle must be a wrapper that only its user holds; what the
// library keeps of it (in a registry of open handles, say) must be a
// separate state object, or the handle never becomes unreachable. open
// must not refer to the handle itself.
package leakcheck
