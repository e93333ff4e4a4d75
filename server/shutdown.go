package server

import (
	"context"
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
	if !s.port.Draining() {
		if handedOver = s.raft.HandOverBeforeStop(ctx); handedOver {
			// A write proposed here around the handover may have been
			// dropped on its way to the new leader: its connection
			// closes now (outcome unknown), and its client goes on
			// through another member instead of waiting for drain.
			s.port.AbortPendingWrites(0)
		}
	}
	s.port.Drain(ctx, handedOver)
	ch := make(chan struct{})
	go func() { s.Close(); close(ch) }()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
