// Package procs finds this process's children by command name and
// command line, from /proc (Linux): the control-plane processes envtest
// started, for testenv's watchdog and for the repository's own tests.
package procs

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ChildWith returns the process ID of the one running child of this
// process named comm whose command line holds arg.
func ChildWith(comm, arg string) (int, error) {
	kids, err := Children(comm)
	if err != nil {
		return 0, err
	}
	found := 0
	for _, pid := range slices.Sorted(maps.Keys(kids)) {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil || !slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			continue
		}
		if found != 0 {
			return 0, fmt.Errorf("two %s processes with %s: %d and %d", comm, arg, found, pid)
		}
		found = pid
	}
	if found == 0 {
		return 0, fmt.Errorf("no %s process with %s among this process's children", comm, arg)
	}
	return found, nil
}

// Children returns the running children of this process (zombies left
// out) whose command name is one of comms, by process ID.
func Children(comms ...string) (map[int]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(b)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		comm, fields := s[open+1:closing], strings.Fields(s[closing+1:])
		if len(fields) < 2 || fields[0] == "Z" || !slices.Contains(comms, comm) {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil && ppid == os.Getpid() {
			out[pid] = comm
		}
	}
	return out, nil
}
