package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// Queue is a distributed FIFO queue (Curator's DistributedQueue). Its
// methods are safe for concurrent use; a Queue keeps no state between
// calls, so producers and consumers may share one or use their own.
type Queue struct{ c core }

// New returns the queue whose items are the children of path.
func New(src zk.Sessions, path string, opts ...Option) *Queue {
	return &Queue{c: newCore(src, path, fifo, opts)}
}

// Put adds value to the end of the queue. It waits while a bounded queue
// is full. An error wrapping ErrUnknownOutcome means the item may or may
// not have been added.
func (q *Queue) Put(ctx context.Context, value []byte) error {
	return q.c.put(ctx, "", [][]byte{value})
}

// PutMulti adds values as one item node (Curator's putMulti): they are
// taken together, by one consumer, in this order. The encoded node must
// fit the node size limit (ErrTooLarge otherwise), and a bounded queue
// counts it as one item.
func (q *Queue) PutMulti(ctx context.Context, values [][]byte) error {
	return q.c.put(ctx, "", values)
}

// Take waits for the first item and takes it; see the package
// documentation for what taking means with and without a lock path. An
// error wrapping ErrCorrupt reports an item that was dropped because it
// did not decode; Take may be called again.
func (q *Queue) Take(ctx context.Context) (*Message, error) { return q.c.take(ctx, true) }

// TryTake takes the first item if there is one now; ok is false if there
// is none (or every item is locked by other consumers).
func (q *Queue) TryTake(ctx context.Context) (m *Message, ok bool, err error) {
	m, err = q.c.take(ctx, false)
	return m, m != nil, err
}

// Consume takes items and calls fn with each of their values, in order,
// until ctx is done (it then returns ctx's error) or the session ends. An
// item is acked once fn has returned for all its values; when fn fails,
// the item is requeued (with a lock path and ErrorMode Requeue) or acked
// anyway. fn's context is cancelled when the item's lock may be lost.
func (q *Queue) Consume(ctx context.Context, fn func(ctx context.Context, value []byte) error) error {
	return q.c.consume(ctx, fn)
}

// Len returns the number of items.
func (q *Queue) Len(ctx context.Context) (int, error) { return q.c.length(ctx) }

// PriorityQueue is a distributed priority queue (Curator's
// DistributedPriorityQueue): lower priority values are taken first, equal
// ones in the order put.
type PriorityQueue struct{ c core }

// NewPriority returns the priority queue whose items are the children of
// path.
func NewPriority(src zk.Sessions, path string, opts ...Option) *PriorityQueue {
	return &PriorityQueue{c: newCore(src, path, priority, opts)}
}

// Put adds value with priority; see Queue.Put.
func (q *PriorityQueue) Put(ctx context.Context, value []byte, priority int32) error {
	return q.c.put(ctx, PriorityInfix(priority), [][]byte{value})
}

// PutMulti adds values as one item node with priority; see
// Queue.PutMulti.
func (q *PriorityQueue) PutMulti(ctx context.Context, values [][]byte, priority int32) error {
	return q.c.put(ctx, PriorityInfix(priority), values)
}

// Take waits for the item of lowest priority value and takes it; see
// Queue.Take.
func (q *PriorityQueue) Take(ctx context.Context) (*Message, error) { return q.c.take(ctx, true) }

// TryTake takes the first item if there is one now; see Queue.TryTake.
func (q *PriorityQueue) TryTake(ctx context.Context) (m *Message, ok bool, err error) {
	m, err = q.c.take(ctx, false)
	return m, m != nil, err
}

// Consume calls fn with the values of the items in priority order; see
// Queue.Consume.
func (q *PriorityQueue) Consume(ctx context.Context, fn func(ctx context.Context, value []byte) error) error {
	return q.c.consume(ctx, fn)
}

// Len returns the number of items.
func (q *PriorityQueue) Len(ctx context.Context) (int, error) { return q.c.length(ctx) }

// DelayQueue is a distributed queue whose items become available at a
// given time (Curator's DistributedDelayQueue), and are then taken in
// due-time order. Due times are compared with the consumer's clock.
type DelayQueue struct{ c core }

// NewDelay returns the delay queue whose items are the children of path.
func NewDelay(src zk.Sessions, path string, opts ...Option) *DelayQueue {
	return &DelayQueue{c: newCore(src, path, delay, opts)}
}

func checkDue(until time.Time) error {
	if until.UnixMilli() <= 0 {
		return fmt.Errorf("queue: due time %v is not after the Unix epoch", until)
	}
	return nil
}

// Put adds value, to be taken no earlier than until (at millisecond
// precision); see Queue.Put.
func (q *DelayQueue) Put(ctx context.Context, value []byte, until time.Time) error {
	if err := checkDue(until); err != nil {
		return err
	}
	return q.c.put(ctx, DelayInfix(until), [][]byte{value})
}

// PutMulti adds values as one item node due at until; see Queue.PutMulti.
func (q *DelayQueue) PutMulti(ctx context.Context, values [][]byte, until time.Time) error {
	if err := checkDue(until); err != nil {
		return err
	}
	return q.c.put(ctx, DelayInfix(until), values)
}

// Take waits for the first due item and takes it; see Queue.Take.
func (q *DelayQueue) Take(ctx context.Context) (*Message, error) { return q.c.take(ctx, true) }

// TryTake takes the first due item if there is one now; see
// Queue.TryTake.
func (q *DelayQueue) TryTake(ctx context.Context) (m *Message, ok bool, err error) {
	m, err = q.c.take(ctx, false)
	return m, m != nil, err
}

// Consume calls fn with the values of the items as they fall due; see
// Queue.Consume.
func (q *DelayQueue) Consume(ctx context.Context, fn func(ctx context.Context, value []byte) error) error {
	return q.c.consume(ctx, fn)
}

// Len returns the number of items, due or not.
func (q *DelayQueue) Len(ctx context.Context) (int, error) { return q.c.length(ctx) }

// IDQueue is a distributed FIFO queue whose items carry an id by which
// they can be removed before they are taken (Curator's
// DistributedIdQueue). Ids need not be unique.
type IDQueue struct{ c core }

// NewID returns the id queue whose items are the children of path, which
// must not contain "|".
func NewID(src zk.Sessions, path string, opts ...Option) (*IDQueue, error) {
	if strings.Contains(path, "|") {
		return nil, fmt.Errorf("queue: id queue path %q contains |", path)
	}
	return &IDQueue{c: newCore(src, path, byID, opts)}, nil
}

// Put adds value with id (not empty; "/" and "|" in it are stored as
// "_"); see Queue.Put.
func (q *IDQueue) Put(ctx context.Context, value []byte, id string) error {
	if id == "" {
		return errors.New("queue: empty id")
	}
	return q.c.put(ctx, IDInfix(id), [][]byte{value})
}

// Take waits for the first item and takes it; see Queue.Take.
func (q *IDQueue) Take(ctx context.Context) (*Message, error) { return q.c.take(ctx, true) }

// TryTake takes the first item if there is one now; see Queue.TryTake.
func (q *IDQueue) TryTake(ctx context.Context) (m *Message, ok bool, err error) {
	m, err = q.c.take(ctx, false)
	return m, m != nil, err
}

// Consume calls fn with the values of the items in order; see
// Queue.Consume.
func (q *IDQueue) Consume(ctx context.Context, fn func(ctx context.Context, value []byte) error) error {
	return q.c.consume(ctx, fn)
}

// Len returns the number of items.
func (q *IDQueue) Len(ctx context.Context) (int, error) { return q.c.length(ctx) }

// ID returns the id stored in an item's name (as FixID made it).
func ID(m *Message) string {
	id, _, _ := ParseID(m.Name)
	return id
}

// Remove removes the items with id that are not being consumed, and
// returns how many it removed. With a lock path it takes each item's lock
// first, so an item a consumer holds is left alone. (Curator compares the
// stored id with id as given, so its remove never finds an id that had
// "/" or "|" in it; this compares with FixID(id).)
func (q *IDQueue) Remove(ctx context.Context, id string) (int, error) {
	want := FixID(id)
	var children []string
	for {
		ch, _, err := q.c.conn().Children(ctx, q.c.path)
		if errors.Is(err, zk.ErrNoNode) {
			return 0, nil
		}
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err != nil {
			return 0, err
		}
		children = ch
		break
	}
	n := 0
	for _, name := range sortItems(byID, children) {
		if got, _, ok := ParseID(name); !ok || got != want {
			continue
		}
		ok, err := q.remove(ctx, name)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

func (q *IDQueue) remove(ctx context.Context, name string) (bool, error) {
	if !q.c.lockSafe() {
		for {
			err := q.c.conn().Delete(ctx, q.c.path+"/"+name, zk.AnyVersion)
			switch {
			case err == nil:
				return true, nil
			case errors.Is(err, zk.ErrNoNode):
				return false, nil
			case errors.Is(err, zk.ErrConnectionLoss):
				continue
			default:
				return false, err
			}
		}
	}
	m, _, err := q.c.claimLocked(ctx, name)
	if err != nil || m == nil {
		if errors.Is(err, ErrCorrupt) {
			return true, nil // dropped
		}
		return false, err
	}
	if err := m.Ack(ctx); err != nil {
		if errors.Is(err, ErrItemGone) || errors.Is(err, ErrLockLost) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
