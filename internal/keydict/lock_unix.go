//go:build unix

package keydict

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive, non-blocking flock on f. The lock belongs to
// the open file description, so a second Open of the same path fails even in
// the same process. It is released when f is closed.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}
