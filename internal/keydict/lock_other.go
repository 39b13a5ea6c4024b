//go:build !unix

package keydict

import "os"

// lockFile is a no-op where flock is unavailable: callers must not open one
// dictionary file twice.
func lockFile(*os.File) error { return nil }
