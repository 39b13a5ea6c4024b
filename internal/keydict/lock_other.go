//go:build !unix

package keydict

import "os"

// lockFile is a no-op where flock is unavailable: callers must not open one
// dictionary file read-write twice, nor read or repair it while it is open
// read-write.
func lockFile(*os.File, bool) error { return nil }
