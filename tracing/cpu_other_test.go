//go:build !unix

package tracing_test

import "time"

// processCPU is not measured here: the benchmarks report no cpu-ns/op.
func processCPU() time.Duration { return 0 }
