package zk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zkgo/zkgo/proto"
)

// guaranteedDeletes are the guaranteed deletes of a Conn still being
// retried in the background (DeleteGuaranteed).
type guaranteedDeletes struct {
	// mu guards pending, changed and abandoned. It is taken by the
	// background goroutines and by PendingDeletes and WaitDeletes, never
	// together with Conn.mu.
	mu      sync.Mutex    // guards pending, changed, abandoned, abandonErr
	pending []string      // paths still being deleted, one entry per call
	changed chan struct{} // closed (and replaced) whenever pending shrinks
	// abandoned are the paths given up because the Conn was closed or its
	// session ended, with that error (WaitDeletes reports them once).
	abandoned  []string
	abandonErr error
}

// DeleteGuaranteed deletes path like Delete, and keeps deleting it if the
// outcome is unknown or it may be retried (Curator's
// delete().guaranteed()): when the request fails with a retryable error
// (IsRetryable: a connection loss, or SessionMoved — the session was
// resumed elsewhere, which refused the delete), or ctx is done while it
// may be in flight,
// the delete is retried in the background, across reconnections, until it
// is applied or the node is gone (ErrNoNode counts as done) or fails for
// another reason (ErrBadVersion, ErrNotEmpty: the retry then stops, as
// Curator's does). The error returned is the first attempt's; in the two
// unknown-outcome cases the path is listed by PendingDeletes until the
// background delete ends.
//
// A background delete stops when the Conn is closed or its session ends:
// WaitDeletes then reports it. Use Redialer.DeleteGuaranteed to carry it
// over to the next session.
func (c *Conn) DeleteGuaranteed(ctx context.Context, path string, version int32) error {
	err := c.Delete(ctx, path, version)
	if err == nil || !unknownOutcome(ctx, err) {
		return err
	}
	c.startGuaranteed(path, version, nil)
	return err
}

// unknownOutcome reports whether a failed write should be tried again:
// it may or may not have been applied (its connection broke, or its caller
// stopped waiting for it), or it was refused for a reason that a retry on
// the next connection removes (IsRetryable: SessionMoved, throttling).
func unknownOutcome(ctx context.Context, err error) bool {
	return IsRetryable(err) || (ctx.Err() != nil && errors.Is(err, ctx.Err()))
}

// startGuaranteed retries the delete on a goroutine of its own until it is
// done. onEnd, if set, is called with nil when the delete is done, or with
// the session's error when it is abandoned.
func (c *Conn) startGuaranteed(path string, version int32, onEnd func(error)) {
	g := &c.deletes
	g.mu.Lock()
	g.pending = append(g.pending, path)
	g.mu.Unlock()
	go func() {
		err := c.retryDelete(path, version)
		g.mu.Lock()
		if i := slices.Index(g.pending, path); i >= 0 {
			g.pending = slices.Delete(g.pending, i, i+1)
		}
		if err != nil {
			g.abandoned = append(g.abandoned, path)
			g.abandonErr = err
		}
		if g.changed != nil {
			close(g.changed)
			g.changed = nil
		}
		g.mu.Unlock()
		if onEnd != nil {
			onEnd(err)
		}
	}()
}

// retryDelete deletes until done; it returns nil when the node was deleted
// or is gone (or the delete failed for good), and the session's error when
// the Conn can no longer delete it.
func (c *Conn) retryDelete(path string, version int32) error {
	pause := 10 * time.Millisecond
	for {
		err := c.Delete(c.ctx, path, version)
		switch {
		case err == nil, errors.Is(err, ErrNoNode):
			return nil
		case errors.Is(err, ErrClosing), errors.Is(err, ErrSessionExpired), c.ctx.Err() != nil:
			// The session's own end (expiry) is reported as such even when
			// the Conn was closed afterwards.
			c.mu.Lock()
			term := c.termErr
			c.mu.Unlock()
			if errors.Is(term, ErrSessionExpired) {
				return &Error{Code: ErrCode(proto.ErrSessionExpired), Err: ErrSessionExpired, Op: "delete", Path: path}
			}
			return &Error{Err: ErrClosing, Op: "delete", Path: path}
		case !IsRetryable(err):
			c.cfg.logger.Warn("zk: guaranteed delete gave up", "path", path, "err", err)
			return nil
		}
		// The Conn waits for the next connection itself; the pause only
		// keeps a flapping connection from turning this into a busy loop.
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
		}
		pause = min(2*pause, time.Second)
	}
}

// PendingDeletes returns the paths of the guaranteed deletes still being
// retried in the background, in the order they were started.
func (c *Conn) PendingDeletes() []string {
	c.deletes.mu.Lock()
	defer c.deletes.mu.Unlock()
	return slices.Clone(c.deletes.pending)
}

// WaitDeletes waits until no guaranteed delete is pending. It returns nil
// if every one was done, ctx's error if ctx ends first, and an error
// wrapping ErrClosing or ErrSessionExpired, naming the paths, if some were
// abandoned because the Conn was closed or its session ended (reported
// once).
func (c *Conn) WaitDeletes(ctx context.Context) error {
	g := &c.deletes
	for {
		g.mu.Lock()
		if len(g.pending) == 0 {
			ab, err := g.abandoned, g.abandonErr
			g.abandoned, g.abandonErr = nil, nil
			g.mu.Unlock()
			if len(ab) > 0 {
				return fmt.Errorf("zk: guaranteed deletes abandoned %q: %w", ab, err)
			}
			return nil
		}
		if g.changed == nil {
			g.changed = make(chan struct{})
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
