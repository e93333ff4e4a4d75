package raftnode

import (
	"runtime"
	"sync"
	"time"
)

// holdClock ends a group-commit hold on time (groupcommit.go). A hold
// lasts about one fsync, 100–300 µs; a Go timer that short fires up to
// ~1 ms late when the process is otherwise idle (the runtime then waits
// in epoll, whose timeout is in milliseconds), which is just when a lone
// entry is held and not joined. So a goroutine on its own thread sleeps
// in the kernel (nanosleep, with a timer slack of 1 µs on Linux) until
// the deadline and reports the hold's generation on fired.
//
// arm is called by the run goroutine only; loop runs on the clock's own
// goroutine, started by the run goroutine and ended by stop when it
// exits.
type holdClock struct {
	mu       sync.Mutex // guards deadline and gen
	deadline time.Time  // of the latest hold armed
	gen      uint64     // of the latest hold armed

	kick  chan struct{} // buffer 1: a hold was armed
	fired chan uint64   // buffer 1: the generation of a hold whose deadline passed
	stopc chan struct{}
	done  chan struct{}
}

// clockStep is the longest sleep of the clock between two looks at the
// latest deadline.
const clockStep = 100 * time.Microsecond

func newHoldClock() *holdClock {
	c := &holdClock{kick: make(chan struct{}, 1), fired: make(chan uint64, 1),
		stopc: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

// arm starts hold gen, to end at deadline. A newer arm replaces an older
// one; fired may still bring an older generation, which the holder
// ignores.
func (c *holdClock) arm(deadline time.Time, gen uint64) {
	c.mu.Lock()
	c.deadline, c.gen = deadline, gen
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *holdClock) latest() (time.Time, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, c.gen
}

func (c *holdClock) loop() {
	defer close(c.done)
	runtime.LockOSThread() // the timer slack is the thread's
	defer runtime.UnlockOSThread()
	preciseThread()
	for {
		select {
		case <-c.kick:
		case <-c.stopc:
			return
		}
		deadline, gen := c.latest()
		for {
			d := time.Until(deadline)
			if d <= 0 {
				break
			}
			// In steps: a newer hold armed meanwhile (the older
			// one is over) may end sooner than the older would
			// have, by up to a few fsyncs (a late hold, then a
			// short one); it is then at most a step late.
			preciseSleep(min(d, clockStep))
			select {
			case <-c.stopc:
				return
			default:
			}
			deadline, gen = c.latest()
		}
		select { // replace an unread older generation
		case <-c.fired:
		default:
		}
		select {
		case c.fired <- gen:
		default:
		}
	}
}

// stop ends the clock's goroutine and waits for it (at most one step of
// its sleep).
func (c *holdClock) stop() {
	close(c.stopc)
	<-c.done
}
