package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zkgo/zkgo/zk"
)

// SimplePrefix is the name prefix of a Simple queue's item nodes, which
// are "<path>/qn-<10-digit sequence>" (Curator's SimpleDistributedQueue,
// and ZooKeeper's own recipes' DistributedQueue).
const SimplePrefix = "qn-"

// ErrEmpty is returned by Simple.Element and Simple.Remove when the queue
// has no item (Curator's NoSuchElementException).
var ErrEmpty = errors.New("queue: empty")

// Simple is a distributed FIFO queue of raw byte values with the node
// layout of Curator's SimpleDistributedQueue: each value is the data of a
// persistent sequential node "<path>/qn-<seq>", and the first item is the
// one whose name sorts first. There is no envelope, no lock path and no
// bound; a Java SimpleDistributedQueue (or a ZooKeeper recipes
// DistributedQueue) on the same path produces and consumes the same
// items. Its methods are safe for concurrent use.
//
// Taking an item reads it and then deletes it (with the version read); of
// consumers racing for the same item only the one whose delete succeeds
// gets it, the others go on to the next item. Delivery is at most once:
// a value whose consumer fails after taking it is lost.
type Simple struct {
	src  zk.Sessions
	path string
	acl  []zk.ACL
}

// NewSimple returns the simple queue whose items are the children of
// path. Of the options, only WithACL applies (to the item nodes and to
// the queue node and its parents, which the first use creates as
// containers, as Curator 5 does).
func NewSimple(src zk.Sessions, path string, opts ...Option) *Simple {
	o := buildOptions(opts)
	return &Simple{src: src, path: path, acl: o.acl}
}

// Offer adds value at the end of the queue (Curator's offer). As with
// Queue.Put, an error wrapping ErrUnknownOutcome means the connection was
// lost before the reply: the item may or may not have been added, and it
// is not repeated (Curator repeats it, and may add it twice).
func (q *Simple) Offer(ctx context.Context, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	p := q.path + "/" + SimplePrefix
	for attempt := 0; ; attempt++ {
		_, err := q.src.Current().Create(ctx, p, value, q.acl, zk.ModePersistentSequential)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode) && attempt < 3:
			// First use, or the container queue node was reaped.
			if err := q.ensure(ctx); err != nil {
				return err
			}
		case errors.Is(err, zk.ErrConnectionLoss):
			return fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
		default:
			return err
		}
	}
}

// ensure creates the queue node and its missing parents as containers.
func (q *Simple) ensure(ctx context.Context) error {
	for {
		err := q.src.Current().EnsurePath(ctx, q.path, q.acl, zk.AsContainers())
		if !errors.Is(err, zk.ErrConnectionLoss) {
			return err
		}
	}
}

// Peek returns the value of the first item without removing it; ok is
// false when the queue is empty (Curator's peek returning null).
func (q *Simple) Peek(ctx context.Context) (value []byte, ok bool, err error) {
	value, ok, _, err = q.first(ctx, false, false)
	return value, ok, err
}

// Element is Peek with ErrEmpty for an empty queue (Curator's element).
func (q *Simple) Element(ctx context.Context) ([]byte, error) {
	v, ok, err := q.Peek(ctx)
	if err == nil && !ok {
		err = ErrEmpty
	}
	return v, err
}

// Poll removes the first item and returns its value; ok is false when the
// queue is empty (Curator's poll()).
func (q *Simple) Poll(ctx context.Context) (value []byte, ok bool, err error) {
	value, ok, _, err = q.first(ctx, true, false)
	return value, ok, err
}

// Remove is Poll with ErrEmpty for an empty queue (Curator's remove).
func (q *Simple) Remove(ctx context.Context) ([]byte, error) {
	v, ok, err := q.Poll(ctx)
	if err == nil && !ok {
		err = ErrEmpty
	}
	return v, err
}

// Take removes the first item and returns its value, waiting (with a
// watch on the queue node's children) until there is one (Curator's
// take). A context with a deadline makes it Curator's poll(timeout): it
// then returns the context's error when no item came in time.
func (q *Simple) Take(ctx context.Context) ([]byte, error) {
	for {
		v, ok, ev, err := q.first(ctx, true, true)
		if err != nil || ok {
			return v, err
		}
		select {
		case e := <-ev:
			if e.Type == zk.EventNotWatching {
				return nil, e.Err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Len returns the number of items.
func (q *Simple) Len(ctx context.Context) (int, error) {
	for {
		names, _, err := q.src.Current().Children(ctx, q.path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return 0, nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue
		case err != nil:
			return 0, err
		}
		return len(simpleItems(names)), nil
	}
}

// simpleItems returns the item names among children, in queue order:
// children without the "qn-" prefix are ignored (Curator logs them as
// foreign), the rest sorted by name, which with Curator's fixed-width
// sequence suffix is the order they were added.
func simpleItems(children []string) []string {
	items := children[:0:0]
	for _, c := range children {
		if strings.HasPrefix(c, SimplePrefix) {
			items = append(items, c)
		}
	}
	slices.Sort(items)
	return items
}

// first reads (and with remove, deletes) the first item that is still
// there. With watch, the children read leaves a watch whose channel is
// returned when there is no item; a missing queue node is created then,
// so that the watch is on it.
func (q *Simple) first(ctx context.Context, remove, watch bool) ([]byte, bool, <-chan zk.Event, error) {
	for {
		var names []string
		var ev <-chan zk.Event
		var err error
		if watch {
			names, _, ev, err = q.src.Current().ChildrenW(ctx, q.path)
		} else {
			names, _, err = q.src.Current().Children(ctx, q.path)
		}
		if errors.Is(err, zk.ErrNoNode) {
			if !watch {
				return nil, false, nil, nil
			}
			if err := q.ensure(ctx); err != nil {
				return nil, false, nil, err
			}
			continue
		}
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err != nil {
			return nil, false, nil, err
		}
		for _, name := range simpleItems(names) {
			v, ok, err := q.read(ctx, q.path+"/"+name, remove)
			if err != nil || ok {
				return v, ok, nil, err
			}
		}
		return nil, false, ev, nil
	}
}

// read gets the item at p and, with remove, deletes it. ok is false when
// the item is gone (someone else took it).
func (q *Simple) read(ctx context.Context, p string, remove bool) ([]byte, bool, error) {
	for {
		data, st, err := q.src.Current().Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, false, nil
		}
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if !remove {
			return data, true, nil
		}
		err = q.src.Current().Delete(ctx, p, st.Version)
		switch {
		case err == nil:
			return data, true, nil
		case errors.Is(err, zk.ErrConnectionLoss):
			// If the item is still there our delete did not land; if
			// it is gone, it counts as someone else's (at most once).
			continue
		case errors.Is(err, zk.ErrNoNode):
			return nil, false, nil
		case errors.Is(err, zk.ErrBadVersion):
			continue // changed by hand meanwhile: read it again
		default:
			return nil, false, err
		}
	}
}
