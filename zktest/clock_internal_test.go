package zktest

import (
	"testing"
	"time"
)

// TestTickRound: a round skips stopped members, waits for slow ones, and
// stops waiting for a member that takes no tick for stuckAfter, until it
// takes one again; no round runs after cleanup.
func TestTickRound(t *testing.T) {
	defer func(d time.Duration) { stuckAfter = d }(stuckAfter)
	stuckAfter = 250 * time.Millisecond
	newClock := func(id int) *memberClock {
		return &memberClock{id: id, ticks: make(chan struct{}), quit: make(chan struct{})}
	}
	stopped, stuck, live := newClock(1), newClock(2), newClock(3)
	close(stopped.quit)
	c := &Cluster{t: t, clocks: []*memberClock{stopped, stuck, live}, clockStop: make(chan struct{})}
	done := make(chan struct{})
	go func() { // member 3 takes every tick, slowly
		defer close(done)
		for {
			select {
			case <-live.ticks:
				time.Sleep(time.Millisecond)
			case <-live.quit:
				return
			}
		}
	}()
	defer func() { close(live.quit); <-done }()

	start := time.Now()
	if !c.tickRound() {
		t.Fatal("round aborted")
	}
	if d := time.Since(start); d < stuckAfter || !stuck.stuck {
		t.Fatalf("member 2 was not waited for: %v, stuck %v", d, stuck.stuck)
	}
	// Member 2 is no longer waited for...
	start = time.Now()
	c.tickRound()
	if d := time.Since(start); d >= stuckAfter {
		t.Fatalf("member 2 was waited for again: %v", d)
	}
	// ...until it takes a tick.
	took := make(chan struct{})
	go func() { <-stuck.ticks; close(took) }()
	for stuck.stuck {
		c.tickRound()
	}
	<-took
	close(c.clockStop)
	if c.tickRound() {
		t.Fatal("a round ran after cleanup")
	}
}
