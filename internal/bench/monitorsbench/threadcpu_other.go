//go:build !linux

package monitorsbench

import "time"

// threadCPU is 0 where the thread's CPU time is not read: the CPU
// figures are then 0.
func threadCPU() time.Duration { return 0 }
