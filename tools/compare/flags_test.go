package main

import (
	"testing"
	"time"

	"github.com/zkgo/zkgo/tools/bench"
)

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"0", []int{0}},
		{"1,3", []int{1, 3}},
		{"0-2", []int{0, 1, 2}},
		{"0-1, 4", []int{0, 1, 4}},
	} {
		set, err := parseCPUList(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if set.Count() != len(c.want) {
			t.Errorf("%q: %d CPUs, want %v", c.in, set.Count(), c.want)
		}
		for _, cpu := range c.want {
			if !set.IsSet(cpu) {
				t.Errorf("%q: CPU %d not in the set", c.in, cpu)
			}
		}
	}
	for _, bad := range []string{"", "x", "2-1", "-1", "0-", "5000"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// A row whose client is a JVM started for the run warms up long enough
// for its JIT; the others keep -warmup.
func TestWarmupFor(t *testing.T) {
	o := options{warmup: time.Second}
	if got := warmupFor(o, bench.Config{Client: "curator"}); got != jvmWarmup {
		t.Errorf("curator: %v, want %v", got, jvmWarmup)
	}
	if got := warmupFor(o, bench.Config{Client: "gozk"}); got != time.Second {
		t.Errorf("gozk: %v, want 1s", got)
	}
	o.warmup = 8 * time.Second
	if got := warmupFor(o, bench.Config{Client: "curator"}); got != 8*time.Second {
		t.Errorf("curator with -warmup 8s: %v", got)
	}
}
