//go:build unix

package keydict

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes a non-blocking flock on f: exclusive for a read-write Open
// or a repair, shared for OpenReadOnly and Check. The lock belongs to the
// open file description, so it also excludes a second open of the same path
// in the same process. It is released when f is closed. If another open
// holds a conflicting lock, the error wraps errWouldBlock.
func lockFile(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == syscall.EINTR {
			continue
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return errWouldBlock
		}
		return err
	}
}
