package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// serverCPUs, when set (-server-cpus), is the CPU list every server
// process is started on ("taskset -c LIST": the servers' threads, and
// the JVM's count of processors, see only those CPUs).
var serverCPUs string

// parseCPUList reads a CPU list as taskset -c takes it: "0", "1,3", "0-2".
func parseCPUList(s string) (unix.CPUSet, error) {
	var set unix.CPUSet
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return set, fmt.Errorf("CPU list %q: %v", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return set, fmt.Errorf("CPU list %q: %v", s, err)
			}
		}
		if a < 0 || b < a || b >= 1024 {
			return set, fmt.Errorf("CPU list %q: bad range %q", s, part)
		}
		for c := a; c <= b; c++ {
			set.Set(c)
		}
	}
	return set, nil
}

// pinSelf moves every thread of this process (the Go clients of the
// workloads run here) to the CPUs of list. Threads started later inherit
// the mask of the thread that starts them, and so do child processes
// (Curator's JVM). GOMAXPROCS follows the new count.
func pinSelf(list string) error {
	set, err := parseCPUList(list)
	if err != nil {
		return err
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return fmt.Errorf("pinning thread %d to CPUs %s: %w", tid, list, err)
		}
	}
	runtime.GOMAXPROCS(set.Count())
	return nil
}
