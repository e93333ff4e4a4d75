package raftnode

import (
	"testing"
	"time"
)

// The clock never reports a hold before its deadline, and reports only
// the latest hold armed: an earlier one replaced before its deadline is
// over (its holder moved on).
func TestHoldClock(t *testing.T) {
	c := newHoldClock()
	defer c.stop()

	d1 := time.Now().Add(20 * time.Millisecond)
	c.arm(d1, 1)
	d2 := time.Now().Add(time.Millisecond)
	c.arm(d2, 2) // replaces 1, and ends sooner
	select {
	case gen := <-c.fired:
		if gen != 2 {
			t.Fatalf("fired %d, want 2 (the latest hold)", gen)
		}
		if now := time.Now(); now.Before(d2) {
			t.Fatalf("fired %v before its deadline", d2.Sub(now))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hold 2 never fired")
	}

	for gen := uint64(3); gen < 8; gen++ {
		d := time.Now().Add(time.Duration(gen) * 100 * time.Microsecond)
		c.arm(d, gen)
		select {
		case got := <-c.fired:
			if got != gen {
				t.Fatalf("fired %d, want %d", got, gen)
			}
			if now := time.Now(); now.Before(d) {
				t.Fatalf("hold %d fired %v before its deadline", gen, d.Sub(now))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("hold %d never fired", gen)
		}
	}
}

// stop ends the clock's goroutine also in the middle of a sleep, without
// reporting the hold (goleak in TestMain checks that nothing is left).
func TestHoldClockStopWhileArmed(t *testing.T) {
	c := newHoldClock()
	c.arm(time.Now().Add(time.Minute), 1)
	c.stop()
	select {
	case gen := <-c.fired:
		t.Fatalf("hold %d reported after stop, a minute early", gen)
	default:
	}
}
