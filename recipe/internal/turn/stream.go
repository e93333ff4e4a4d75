package turn

import "sync"

// Stream delivers values over a channel in order without ever blocking the
// sender and without dropping anything: values wait in an unbounded queue
// while the receiver is slow. Recipes use it for their event channels.
type Stream[T any] struct {
	ch chan T

	mu      sync.Mutex // guards the fields below
	backlog []T
	running bool // a feeder goroutine owns the backlog
	closing bool // close ch once the backlog is delivered
	closed  bool
}

// NewStream returns an open stream.
func NewStream[T any]() *Stream[T] { return &Stream[T]{ch: make(chan T, 16)} }

// C returns the receiving channel; it is closed after Close once every
// value before it has been received.
func (s *Stream[T]) C() <-chan T { return s.ch }

// Send queues v. Values sent after Close are dropped.
func (s *Stream[T]) Send(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	if !s.running {
		select {
		case s.ch <- v:
			return
		default:
		}
		s.running = true
		s.backlog = append(s.backlog, v)
		go s.feed()
		return
	}
	s.backlog = append(s.backlog, v)
}

func (s *Stream[T]) feed() {
	for {
		s.mu.Lock()
		if len(s.backlog) == 0 {
			s.running = false
			if s.closing && !s.closed {
				s.closed = true
				close(s.ch)
			}
			s.mu.Unlock()
			return
		}
		v := s.backlog[0]
		var zero T
		s.backlog[0] = zero
		s.backlog = s.backlog[1:]
		s.mu.Unlock()
		s.ch <- v
	}
}

// Close closes the channel after the queued values. A receiver that stops
// receiving before that keeps one goroutine blocked, so receive until the
// channel is closed.
func (s *Stream[T]) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	s.closing = true
	if !s.running && !s.closed {
		s.closed = true
		close(s.ch)
	}
}
