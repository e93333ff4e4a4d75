package server

import (
	"context"
	"time"
)

// Shutdown stops the server gracefully (zkgo server on SIGTERM): a
// leader first hands leadership over to the most caught-up voter (within
// two election timeouts; leadership.go), then it stops accepting
// connections and reading requests, waits (up to drainTimeout,
// and half of what ctx leaves) until the writes this member already
// proposed have applied and their replies have been written, then Closes:
// the log is closed after its last fsynced entry, and an entry that was
// persisted but not yet applied applies at the next start. Client
// sessions are not closed (no closeSession is proposed): as with
// ZooKeeper, they resume, with their ephemerals and watches, when the
// clients reconnect to the restarted member (or another one) within
// their timeout. Shutdown returns ctx.Err() if ctx ends before the
// server has stopped; it goes on stopping.
func (s *Server) Shutdown(ctx context.Context) error {
	handedOver := false
	if !s.draining.Load() {
		if handedOver = s.raft.HandOverBeforeStop(ctx); handedOver {
			// A write proposed here around the handover may have been
			// dropped on its way to the new leader: its connection
			// closes now (outcome unknown), and its client goes on
			// through another member instead of waiting for drain.
			s.abortPendingWrites(0)
		}
	}
	s.drain(ctx, handedOver)
	ch := make(chan struct{})
	go func() { s.Close(); close(ch) }()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain is the graceful part of Shutdown.
//
// handedOver: this member led and handed leadership over; what it
// proposed and was not applied by then is lost (its outcome is unknown
// to its clients), so drain does not wait for it: the connections close
// once their queued replies are written, and their clients go on
// through another member at once.
func (s *Server) drain(ctx context.Context, handedOver bool) {
	if s.draining.Swap(true) || s.closing.Load() {
		return
	}
	if s.ln != nil {
		s.ln.Close()
	}
	if s.sln != nil {
		s.sln.Close()
	}
	// A connection still in its handshake gets no session here: it
	// closes at once, and its client connects to another member instead
	// of waiting for this one to stop.
	s.connsMu.Lock()
	var handshaking []*Conn
	for c := range s.conns {
		if !c.handshaken.Load() {
			handshaking = append(handshaking, c)
		}
	}
	s.connsMu.Unlock()
	for _, c := range handshaking {
		c.close("server shutting down")
	}
	deadline := time.Now().Add(drainTimeout)
	if d, ok := ctx.Deadline(); ok {
		if half := time.Now().Add(time.Until(d) / 2); half.Before(deadline) {
			deadline = half
		}
	}
	wait := func(done func() bool) bool {
		for !done() {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return false
			}
			select {
			case <-s.done:
				return false
			case <-time.After(5 * time.Millisecond):
			}
		}
		return true
	}
	if !handedOver && !wait(func() bool { return s.prop.Waiting() == 0 }) {
		s.log.Warn("shutting down with writes proposed here not yet applied: their clients see the connection close", "waiting", s.prop.Waiting())
	}
	// Each connection closes once its queued replies are written.
	for _, c := range s.connList() {
		c.closeAfterFlush()
	}
	wait(func() bool {
		s.connsMu.Lock()
		defer s.connsMu.Unlock()
		return len(s.conns) == 0
	})
}
