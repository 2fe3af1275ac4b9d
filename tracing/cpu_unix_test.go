//go:build unix

package tracing_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, user and system, every
// goroutine's (the batch processor's and the collector's included).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
