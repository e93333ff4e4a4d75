package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tools/bench"
)

// TestServerCPUColumn: the throughput table gets the servers' CPU per
// operation (medians over the repeats, ZooKeeper's ÷ zkgo's) when the
// runs carry it, a dash where one server's figure is missing, and no
// such column when no run has one.
func TestServerCPUColumn(t *testing.T) {
	res := func(ops int64) *bench.Result {
		return &bench.Result{Ops: ops, OpsPerSec: float64(ops) / 5, Unit: "handoff"}
	}
	runs := []run{
		// lock: ZooKeeper 900, 1,000, 1,100 µs per handoff; zkgo 400, 500, 600.
		{Spec: "lock", Server: "zookeeper", Result: res(1000), ServerCPU: 900 * time.Millisecond},
		{Spec: "lock", Server: "zookeeper", Result: res(1000), ServerCPU: 1100 * time.Millisecond},
		{Spec: "lock", Server: "zookeeper", Result: res(2000), ServerCPU: 2000 * time.Millisecond},
		{Spec: "lock", Server: "zkgo", Result: res(2000), ServerCPU: 1200 * time.Millisecond},
		{Spec: "lock", Server: "zkgo", Result: res(2000), ServerCPU: 800 * time.Millisecond},
		{Spec: "lock", Server: "zkgo", Result: res(2000), ServerCPU: 1000 * time.Millisecond},
		// get: no CPU figure for zkgo.
		{Spec: "get", Server: "zookeeper", Result: res(1000), ServerCPU: 100 * time.Millisecond},
		{Spec: "get", Server: "zkgo", Result: res(1000)},
	}
	r := &report{Runs: runs, specOrder: []string{"lock", "get"}, specLabels: map[string]string{"lock": "lock", "get": "get"}}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	writeTable(w, r.rows())
	out := b.String()
	if !strings.Contains(out, "server CPU µs per op") {
		t.Fatalf("no CPU column:\n%s", out)
	}
	if !strings.Contains(out, "| 1,000 / 500 (**2.0×**) |") {
		t.Errorf("lock row lacks ZooKeeper 1,000 / zkgo 500 µs per handoff:\n%s", out)
	}
	if !strings.Contains(out, "| — |") {
		t.Errorf("get row lacks the dash for the missing figure:\n%s", out)
	}

	b.Reset()
	for i := range runs {
		runs[i].ServerCPU = 0
	}
	writeTable(w, (&report{Runs: runs, specOrder: r.specOrder, specLabels: r.specLabels}).rows())
	if strings.Contains(b.String(), "CPU") {
		t.Errorf("CPU column without figures:\n%s", b.String())
	}
	if c := (run{Result: res(0), ServerCPU: time.Second}).cpuPerOp(); !math.IsNaN(c) {
		t.Errorf("cpuPerOp with no operations = %v, want NaN", c)
	}
}
