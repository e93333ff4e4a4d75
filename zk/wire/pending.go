package wire

// Pending is a FIFO of the requests a pipelining client has written and
// awaits replies to: a server answers a session's ordinary requests in the
// order it received them, so each ordinary reply (KindReply, KindSetWatches)
// belongs to the request Pop returns. It is a ring buffer that grows as
// needed and does not allocate once grown. The zero value is empty; it is
// not safe for concurrent use.
type Pending[T any] struct {
	buf        []T
	head, size int
}

// Len returns the number of requests queued.
func (q *Pending[T]) Len() int { return q.size }

// Push appends v.
func (q *Pending[T]) Push(v T) {
	if q.size == len(q.buf) {
		n := 2 * len(q.buf)
		if n == 0 {
			n = 16
		}
		nb := make([]T, n)
		for i := 0; i < q.size; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = v
	q.size++
}

// Pop removes and returns the oldest request; ok is false (and v the zero
// value) if there is none.
func (q *Pending[T]) Pop() (v T, ok bool) {
	if q.size == 0 {
		return v, false
	}
	v = q.buf[q.head]
	var zero T
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return v, true
}

// Drain removes every request and returns them, oldest first, in a new
// slice (nil if there were none).
func (q *Pending[T]) Drain() []T {
	if q.size == 0 {
		return nil
	}
	out := make([]T, 0, q.size)
	for q.size > 0 {
		v, _ := q.Pop()
		out = append(out, v)
	}
	return out
}
