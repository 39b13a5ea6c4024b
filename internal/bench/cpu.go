package bench

import (
	"syscall"
	"time"
)

// ProcessCPU is the user and system CPU time of this process so far (all
// its threads), 0 if the kernel will not say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
