package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ProcMemory is a process's resident memory, from /proc/<pid>/status.
type ProcMemory struct {
	// RSS is the resident set size now (VmRSS), in bytes.
	RSS uint64
	// HWM is the peak resident set size since the process started (VmHWM,
	// the kernel's high-water mark), in bytes.
	HWM uint64
}

// ErrMalformedProcStatus is wrapped by the error [ParseProcStatus] returns
// when the status has no VmRSS or VmHWM, or one that cannot be read.
var ErrMalformedProcStatus = errors.New("bench: malformed /proc/<pid>/status")

// ParseProcStatus reads VmRSS and VmHWM from the contents of
// /proc/<pid>/status ("VmHWM:\t   71234 kB"). Both must be present (a
// zombie or a kernel thread has neither) and given in kB.
func ParseProcStatus(r io.Reader) (ProcMemory, error) {
	var m ProcMemory
	var seenRSS, seenHWM bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			return ProcMemory{}, fmt.Errorf("%w: %s %q: want a number of kB", ErrMalformedProcStatus, key, strings.TrimSpace(value))
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || kb > math.MaxUint64/1024 {
			return ProcMemory{}, fmt.Errorf("%w: %s %q: want a number of kB", ErrMalformedProcStatus, key, strings.TrimSpace(value))
		}
		if key == "VmRSS" {
			m.RSS, seenRSS = kb*1024, true
		} else {
			m.HWM, seenHWM = kb*1024, true
		}
	}
	if err := sc.Err(); err != nil {
		return ProcMemory{}, fmt.Errorf("bench: reading /proc/<pid>/status: %w", err)
	}
	if !seenRSS || !seenHWM {
		return ProcMemory{}, fmt.Errorf("%w: no VmRSS or VmHWM (a zombie or a kernel thread?)", ErrMalformedProcStatus)
	}
	return m, nil
}
