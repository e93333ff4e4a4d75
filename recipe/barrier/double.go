package barrier

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// ReadyNode is the name of the node the member that completes a double
// barrier creates under its path (Curator's READY_NODE).
const ReadyNode = "ready"

// Errors of DoubleBarrier.
var (
	// ErrNotEntered: Leave on a member that has not entered.
	ErrNotEntered = errors.New("barrier: not entered")
	// ErrEntered: Enter on a member that has already entered.
	ErrEntered = errors.New("barrier: already entered")
	// ErrMemberMissing: this member's node vanished while it was in the
	// barrier (its session ended, or someone deleted it). Curator throws
	// IllegalStateException("Our path (...) is missing") here.
	ErrMemberMissing = errors.New("barrier: our member node is gone")
	// ErrForeignLast: while leaving, the one node left is not this
	// member's (Curator's "Last path (...) is not ours").
	ErrForeignLast = errors.New("barrier: the last member node is not ours")
)

// DoubleBarrier lets N members enter together and leave together
// (Curator's DistributedDoubleBarrier). A DoubleBarrier value is one
// member: it enters once and leaves once; make a new one for the next
// round. Its methods are safe for concurrent use, but Enter and Leave are
// meant to be called in that order by one goroutine.
type DoubleBarrier struct {
	conn *zk.Conn
	path string
	n    int
	name string // our member node's name: a random UUID
	opts options

	mu      sync.Mutex // guards entered and left
	entered bool
	left    bool
}

// NewDouble returns a member of the double barrier at path that waits for
// n members (n > 0; a threshold, not a limit).
func NewDouble(src zk.Sessions, path string, n int, opts ...Option) (*DoubleBarrier, error) {
	conn := src.Current() // a member lives in one session
	if n <= 0 {
		return nil, fmt.Errorf("barrier: member count %d must be positive", n)
	}
	id, err := newUUID()
	if err != nil {
		return nil, err
	}
	return &DoubleBarrier{conn: conn, path: path, n: n, name: id, opts: buildOptions(opts)}, nil
}

// Path returns the path of this member's node.
func (d *DoubleBarrier) Path() string { return d.path + "/" + d.name }

func (d *DoubleBarrier) readyPath() string { return d.path + "/" + ReadyNode }

// Enter joins the barrier and waits until n members have joined (or the
// barrier was already complete). A cancelled Enter deletes the member's
// node and returns ctx's error.
func (d *DoubleBarrier) Enter(ctx context.Context) error {
	d.mu.Lock()
	if d.entered {
		d.mu.Unlock()
		return ErrEntered
	}
	d.entered = true
	d.mu.Unlock()
	err := d.enter(ctx)
	if err != nil {
		d.withdraw(ctx)
	}
	return err
}

func (d *DoubleBarrier) enter(ctx context.Context) error {
	// Watch the ready node before joining, as Curator does: its creation
	// by the last member to arrive is what releases the waiters.
	st, ev, err := d.existsReady(ctx)
	if err != nil {
		return err
	}
	if err := d.join(ctx); err != nil {
		return err
	}
	if st != nil {
		return nil // the barrier is complete already
	}
	for {
		children, err := d.children(ctx)
		if err != nil {
			return err
		}
		if len(children) >= d.n {
			_, err := d.conn.Create(ctx, d.readyPath(), nil, d.opts.acl, zk.ModePersistent)
			for errors.Is(err, zk.ErrConnectionLoss) {
				_, err = d.conn.Create(ctx, d.readyPath(), nil, d.opts.acl, zk.ModePersistent)
			}
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		}
		select {
		case e := <-ev:
			switch e.Type {
			case zk.EventNotWatching:
				return e.Err
			case zk.EventNodeCreated:
				return nil // the last member arrived
			}
			// A ready node left over from an earlier round was deleted:
			// watch again.
			if st, ev, err = d.existsReady(ctx); err != nil {
				return err
			}
			if st != nil {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// join creates our ephemeral member node (and the barrier's parents, as
// containers). The name is fixed, so a create whose reply was lost with
// the connection finds the node existing.
func (d *DoubleBarrier) join(ctx context.Context) error {
	for {
		_, err := d.conn.CreateAll(ctx, d.Path(), nil, d.opts.acl, zk.ModeEphemeral, zk.AsContainers())
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue
		default:
			return err
		}
	}
}

func (d *DoubleBarrier) existsReady(ctx context.Context) (*zk.Stat, <-chan zk.Event, error) {
	for {
		st, ev, err := d.conn.ExistsW(ctx, d.readyPath())
		if !errors.Is(err, zk.ErrConnectionLoss) {
			return st, ev, err
		}
	}
}

// children lists the barrier's children (all of them, the ready node
// included, as Curator's count does); a missing barrier node has none.
func (d *DoubleBarrier) children(ctx context.Context) ([]string, error) {
	for {
		ch, _, err := d.conn.Children(ctx, d.path)
		switch {
		case err == nil:
			return ch, nil
		case errors.Is(err, zk.ErrNoNode):
			return nil, nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue
		default:
			return nil, err
		}
	}
}

// withdraw deletes our member node, also when ctx is done (bounded by the
// session timeout).
func (d *DoubleBarrier) withdraw(ctx context.Context) {
	to := d.conn.SessionTimeout()
	if to <= 0 {
		to = 10 * time.Second
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), to)
	defer cancel()
	for {
		err := d.conn.Delete(dctx, d.Path(), zk.AnyVersion)
		if !errors.Is(err, zk.ErrConnectionLoss) {
			return
		}
	}
}

// Leave leaves the barrier and waits until the other members have left
// too: a member other than the lowest returns once every member but the
// lowest has left, the lowest once all others have (ZooKeeper's and
// Curator's double-barrier leave). The ready node is deleted on the way
// out. A cancelled Leave deletes the member's node and returns ctx's error.
func (d *DoubleBarrier) Leave(ctx context.Context) error {
	d.mu.Lock()
	if !d.entered {
		d.mu.Unlock()
		return ErrNotEntered
	}
	if d.left {
		d.mu.Unlock()
		return nil
	}
	d.left = true
	d.mu.Unlock()
	err := d.leave(ctx)
	if err != nil {
		d.withdraw(ctx)
		return err
	}
	return nil
}

func (d *DoubleBarrier) leave(ctx context.Context) error {
	ourNodeShouldExist := true
	for {
		all, err := d.children(ctx)
		if err != nil {
			return err
		}
		children := slices.DeleteFunc(all, func(s string) bool { return s == ReadyNode })
		slices.Sort(children)
		if len(children) == 0 {
			break
		}
		i := slices.Index(children, d.name)
		if i < 0 && ourNodeShouldExist {
			return ErrMemberMissing
		}
		if len(children) == 1 {
			if ourNodeShouldExist && children[0] != d.name {
				return ErrForeignLast
			}
			if ourNodeShouldExist {
				if err := d.deleteOurs(ctx); err != nil {
					return err
				}
			}
			break
		}
		// The lowest member waits for the highest to go; every other
		// member goes, then waits for the lowest.
		watch := children[0]
		if i == 0 {
			watch = children[len(children)-1]
		}
		st, ev, err := d.conn.ExistsW(ctx, d.path+"/"+watch)
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err != nil {
			return err
		}
		if i != 0 && ourNodeShouldExist {
			if err := d.deleteOurs(ctx); err != nil {
				return err
			}
			ourNodeShouldExist = false
		}
		if st == nil {
			continue
		}
		select {
		case e := <-ev:
			if e.Type == zk.EventNotWatching {
				return e.Err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		err := d.conn.Delete(ctx, d.readyPath(), zk.AnyVersion)
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue
		default:
			return err
		}
	}
}

func (d *DoubleBarrier) deleteOurs(ctx context.Context) error {
	for {
		err := d.conn.Delete(ctx, d.Path(), zk.AnyVersion)
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue
		default:
			return err
		}
	}
}

// newUUID returns a random (version 4) UUID in its canonical form, as
// Java's UUID.randomUUID().toString() writes it.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], nil
}
