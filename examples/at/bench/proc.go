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
	// Anon is the anonymous part of RSS now (RssAnon: heap, stacks; not
	// the pages of the binary and other files), in bytes; 0 when the
	// kernel does not say.
	Anon uint64
}

// ErrMalformedProcStatus is wrapped by the error [ParseProcStatus] returns
// when the status has no VmRSS or VmHWM, or one that cannot be read.
var ErrMalformedProcStatus = errors.New("bench: malformed /proc/<pid>/status")

// ParseProcStatus reads VmRSS, VmHWM and RssAnon from the contents of
// /proc/<pid>/status ("VmHWM:\t   71234 kB"). VmRSS and VmHWM must be
// present (a zombie or a kernel thread has neither); all are given in kB.
func ParseProcStatus(r io.Reader) (ProcMemory, error) {
	var m ProcMemory
	var seenRSS, seenHWM bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM" && key != "RssAnon") {
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
		switch key {
		case "VmRSS":
			m.RSS, seenRSS = kb*1024, true
		case "VmHWM":
			m.HWM, seenHWM = kb*1024, true
		default:
			m.Anon = kb * 1024
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

// ProcStat is what the benchmark reads from /proc/<pid>/stat: who the
// process is and how much CPU it has used.
type ProcStat struct {
	// Comm is the process's command name (at most 15 bytes, as the kernel
	// keeps it).
	Comm string
	// PPID is the parent's process ID.
	PPID int
	// CPUTicks is the CPU time the process has used, user and system, in
	// clock ticks (USER_HZ, 100 per second on Linux).
	CPUTicks uint64
}

// ErrMalformedProcStat is wrapped by the error [ParseProcStat] returns when
// the line is not a /proc/<pid>/stat line it can read.
var ErrMalformedProcStat = errors.New("bench: malformed /proc/<pid>/stat")

// ParseProcStat reads the command name, parent and CPU time from the line
// of /proc/<pid>/stat ("1234 (kube-apiserver) S 1200 … utime stime …"). The
// command name may hold spaces and parentheses, so the fields are counted
// from its last closing parenthesis.
func ParseProcStat(line string) (ProcStat, error) {
	open := strings.IndexByte(line, '(')
	closing := strings.LastIndexByte(line, ')')
	if open < 0 || closing < open {
		return ProcStat{}, fmt.Errorf("%w: no (command name)", ErrMalformedProcStat)
	}
	// After the name: state (field 3), ppid (4), … utime (14), stime (15).
	f := strings.Fields(line[closing+1:])
	if len(f) < 13 {
		return ProcStat{}, fmt.Errorf("%w: %d fields after the command name, want at least 13", ErrMalformedProcStat, len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return ProcStat{}, fmt.Errorf("%w: ppid %q", ErrMalformedProcStat, f[1])
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil || utime > math.MaxUint64-stime {
		return ProcStat{}, fmt.Errorf("%w: utime %q, stime %q", ErrMalformedProcStat, f[11], f[12])
	}
	return ProcStat{Comm: line[open+1 : closing], PPID: ppid, CPUTicks: utime + stime}, nil
}
