package zk

import "sync"

// State is the state of a Conn, in Curator's vocabulary.
type State int32

const (
	// StateConnecting is the state before the first session is established.
	// It is never reported to listeners.
	StateConnecting State = iota
	// StateConnected: the first session was established (reported once).
	StateConnected
	// StateSuspended: the connection was lost; the session may still be
	// alive and the Conn is reconnecting. Operations issued now wait for the
	// reconnection (or their context); operations in flight when the
	// connection broke failed with ErrConnectionLoss.
	StateSuspended
	// StateReconnected: a connection was re-established with the same
	// session; watches were re-registered.
	StateReconnected
	// StateLost: the session is gone, either because the server reported it
	// expired or because the session timeout elapsed while disconnected.
	// The Conn is finished: every operation fails with ErrSessionExpired.
	// Make a new Conn to start a new session.
	StateLost
	// StateReadOnly: connected to a read-only server (WithReadOnly).
	StateReadOnly
	// StateClosed: Close was called. The last state.
	StateClosed
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "Connecting"
	case StateConnected:
		return "Connected"
	case StateSuspended:
		return "Suspended"
	case StateReconnected:
		return "Reconnected"
	case StateLost:
		return "Lost"
	case StateReadOnly:
		return "ReadOnly"
	case StateClosed:
		return "Closed"
	}
	return "State(" + itoa(int(s)) + ")"
}

// IsConnected reports whether operations can be served in state s.
func (s State) IsConnected() bool {
	return s == StateConnected || s == StateReconnected || s == StateReadOnly
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// queue delivers values to a channel in order without ever blocking the
// producer and without dropping: values that do not fit in the channel's
// buffer wait in a slice, and a goroutine feeding them exists only while
// such a backlog exists. finish closes the channel once everything queued
// has been received; stop discards the backlog and closes it at once.
type queue[T any] struct {
	// mu guards backlog, running, finished, stopped and chClosed, and
	// orders what reaches ch: push sends to ch directly (without waiting)
	// only with mu held and when no backlog exists, so that nothing
	// overtakes a queued value; ch and stopCh are closed only with mu held
	// (closeLocked, stop). The feeder sends backlog values to ch without
	// mu. No other lock is taken inside it.
	mu       sync.Mutex // guards backlog, running, finished, stopped, chClosed
	ch       chan T     // set by newQueue
	backlog  []T
	running  bool          // a feeder goroutine owns the backlog
	finished bool          // no more values; close ch when drained
	stopped  bool          // stop was called: discard the backlog, close ch
	chClosed bool          // ch is closed
	stopCh   chan struct{} // set by newQueue; closed by stop
}

func newQueue[T any](buf int) *queue[T] {
	return &queue[T]{ch: make(chan T, buf), stopCh: make(chan struct{})}
}

// push queues v; it reports false if the queue was finished or stopped.
func (q *queue[T]) push(v T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.finished || q.stopped {
		return false
	}
	if !q.running && len(q.backlog) == 0 {
		select {
		case q.ch <- v:
			return true
		default:
		}
	}
	q.backlog = append(q.backlog, v)
	if !q.running {
		q.running = true
		go q.feed()
	}
	return true
}

func (q *queue[T]) feed() {
	for {
		q.mu.Lock()
		if q.stopped || len(q.backlog) == 0 {
			q.running = false
			q.backlog = nil
			if q.finished || q.stopped {
				q.closeLocked()
			}
			q.mu.Unlock()
			return
		}
		v := q.backlog[0]
		var zero T
		q.backlog[0] = zero
		q.backlog = q.backlog[1:]
		q.mu.Unlock()
		select {
		case q.ch <- v:
		case <-q.stopCh:
		}
	}
}

func (q *queue[T]) closeLocked() {
	if !q.chClosed {
		q.chClosed = true
		close(q.ch)
	}
}

// finish closes the channel after the values already queued.
func (q *queue[T]) finish() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.finished || q.stopped {
		return
	}
	q.finished = true
	if !q.running {
		q.closeLocked()
	}
}

// stop discards undelivered values and closes the channel (soon, if a
// feeder is blocked sending).
func (q *queue[T]) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return
	}
	q.stopped = true
	close(q.stopCh)
	if !q.running {
		q.backlog = nil
		q.closeLocked()
	}
}

// callQueue calls fn with each pushed value, in order, from one goroutine
// that exists only while values are waiting.
type callQueue[T any] struct {
	// mu guards backlog and running; fn (set by newCallQueue) is called
	// without it. No other lock is taken inside it.
	mu      sync.Mutex // guards backlog, running
	fn      func(T)
	backlog []T
	running bool // a goroutine is calling fn on the backlog
}

func newCallQueue[T any](fn func(T)) *callQueue[T] {
	return &callQueue[T]{fn: fn}
}

func (q *callQueue[T]) push(v T) {
	q.mu.Lock()
	q.backlog = append(q.backlog, v)
	if !q.running {
		q.running = true
		go q.run()
	}
	q.mu.Unlock()
}

func (q *callQueue[T]) run() {
	for {
		q.mu.Lock()
		if len(q.backlog) == 0 {
			q.running = false
			q.backlog = nil
			q.mu.Unlock()
			return
		}
		v := q.backlog[0]
		var zero T
		q.backlog[0] = zero
		q.backlog = q.backlog[1:]
		q.mu.Unlock()
		q.fn(v)
	}
}
