package raftnode

import (
	"context"
	"encoding/binary"
	"time"

	"go.etcd.io/raft/v3"
)

// ReadIndex is a linearizable read barrier: it returns an index such that
// the state after applying it reflects every write committed before
// ReadIndex was called. The caller waits until AppliedIndex reaches it
// (WaitApplied) and then reads its local state. On a follower or learner
// the request goes to the leader, which confirms its leadership with a
// quorum round first (raft's ReadOnlySafe). Requests lost to a leader
// change are retried until ctx is done.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	rctx := make([]byte, 16)
	ch := make(chan uint64, 1)
	n.readMu.Lock()
	n.readSeq++
	copy(rctx, n.readNonce[:])
	binary.BigEndian.PutUint64(rctx[8:], n.readSeq)
	n.reads[string(rctx)] = ch
	n.readMu.Unlock()
	defer func() {
		n.readMu.Lock()
		delete(n.reads, string(rctx))
		n.readMu.Unlock()
	}()

	retry := time.NewTicker(n.readRetryInterval())
	defer retry.Stop()
	for {
		if err := n.withRaft(func(rn *raft.RawNode) error { rn.ReadIndex(rctx); return nil }); err != nil {
			return 0, n.mapErr(err)
		}
		select {
		case idx := <-ch:
			return idx, nil
		case <-retry.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-n.done:
			return 0, n.stoppedErr()
		}
	}
}

func (n *Node) readRetryInterval() time.Duration {
	return max(time.Duration(n.cfg.ElectionTick)*n.cfg.TickInterval/2, 2*time.Duration(n.cfg.HeartbeatTick)*n.cfg.TickInterval)
}

func (n *Node) deliverRead(rs raft.ReadState) {
	n.readMu.Lock()
	ch := n.reads[string(rs.RequestCtx)]
	n.readMu.Unlock()
	if ch != nil {
		select {
		case ch <- rs.Index:
		default: // an answer to a retry already arrived
		}
	}
}

// AppliedIndex returns the index of the last entry applied to the state
// machine (or of the snapshot it was restored from).
func (n *Node) AppliedIndex() uint64 { return n.applied.Load() }

// WaitApplied blocks until AppliedIndex ≥ index, ctx is done (its error)
// or the node stops (ErrStopped).
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	for {
		n.appliedMu.Lock()
		ch := n.appliedCh
		n.appliedMu.Unlock()
		if n.applied.Load() >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.done:
			if n.applied.Load() >= index {
				return nil
			}
			return n.stoppedErr()
		}
	}
}
