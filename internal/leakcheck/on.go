//go:build race

package leakcheck

import (
	"fmt"
	"runtime"
	"strings"
)

// Enabled reports whether Watch checks (race builds).
const Enabled = true

// Watch arranges a panic naming what and the stack that called Watch if
// obj becomes unreachable while open() still reports it open.
func Watch[T any](obj *T, what string, open func() bool) {
	pcs := make([]uintptr, 32)
	pcs = pcs[:runtime.Callers(2, pcs)]
	runtime.SetFinalizer(obj, func(*T) {
		if open() {
			panic(fmt.Sprintf("leakcheck: a %s was dropped without being released; it was created at\n%s", what, stack(pcs)))
		}
	})
}

func stack(pcs []uintptr) string {
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "\t%s\n\t\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			return b.String()
		}
	}
}
