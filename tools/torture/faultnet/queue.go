package faultnet

import (
	"sync"
	"time"
)

// MaxQueuedBytes bounds the bytes one direction of one connection holds
// between its reader and its writer (delayed units, or units waiting for
// a slow destination). When it is reached the reader stops reading, so
// the source sees TCP backpressure. One unit larger than the bound (a big
// frame) is still taken when the queue is empty.
const MaxQueuedBytes = 8 << 20

// timedUnit is a unit and the time the writer may deliver it.
type timedUnit struct {
	unit
	at time.Time
}

// queue is the FIFO between one direction's reader (the only pusher) and
// its writer (the only popper), bounded by bytes.
type queue struct {
	mu    sync.Mutex  // guards units, bytes
	units []timedUnit // oldest first
	bytes int         // sum of len(b) over units

	limit int
	// ready and room are wake-ups with a buffer of one: ready is
	// signalled after a push, room after a pop. A waiter checks the
	// state under mu, then waits; a signal sent in between stays in the
	// buffer, so none is lost (one pusher, one popper).
	ready, room chan struct{}
}

func newQueue(limit int) *queue {
	return &queue{limit: limit, ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// push appends u, waiting while the queue is over its limit. It returns
// false, without pushing, once done is closed.
func (q *queue) push(u timedUnit, done <-chan struct{}) bool {
	for {
		q.mu.Lock()
		if q.bytes == 0 || q.bytes+len(u.b) <= q.limit {
			q.units = append(q.units, u)
			q.bytes += len(u.b)
			q.mu.Unlock()
			wake(q.ready)
			return true
		}
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-done:
			return false
		}
	}
}

// pop removes the oldest unit, waiting for one until done is closed or
// timeout fires (a nil timeout waits for ever). ok is false when it
// gave up.
func (q *queue) pop(done <-chan struct{}, timeout <-chan time.Time) (u timedUnit, ok bool) {
	for {
		q.mu.Lock()
		if len(q.units) > 0 {
			u = q.units[0]
			q.units[0] = timedUnit{}
			q.units = q.units[1:]
			q.bytes -= len(u.b)
			q.mu.Unlock()
			wake(q.room)
			return u, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-done:
			return timedUnit{}, false
		case <-timeout:
			return timedUnit{}, false
		}
	}
}

// wake signals c without blocking (a pending signal is enough).
func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
