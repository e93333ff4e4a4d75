package faultnet

import "sync/atomic"

// DirStats counts what happened to one Dir's bytes since New, over every
// connection between its nodes.
type DirStats struct {
	// Conns is the number of connections From dialed to To through a
	// proxy (accepted by one of the Dir's links).
	Conns int64
	// Resets is the number of those connections the proxy reset for a
	// fault: ResetConns, or a heal of a connection that lost bytes.
	Resets int64
	// Bytes is the number of bytes delivered to To, frames included.
	Bytes int64
	// BytesLost is the number of bytes a partition discarded.
	BytesLost int64
	// Frames is the number of raft frames delivered, each direction's
	// first frame (hello, ack) included.
	Frames int64
	// FramesLost is the number of raft frames a partition discarded
	// (their bytes are in BytesLost).
	FramesLost int64
	// FramesDropped is the number of raft frames DropFrames dropped.
	FramesDropped int64
	// FramesReordered is the number of raft frames ReorderFrames
	// delivered after the frame that followed them.
	FramesReordered int64
}

// counters are one Dir's DirStats as they are counted.
type counters struct {
	conns, resets, bytes, bytesLost   atomic.Int64
	frames, framesLost, framesDropped atomic.Int64
	framesReordered                   atomic.Int64
}

// Stats returns the counts of every Dir that has a link or had traffic.
// Counts of a direction in flight may be a moment behind one another.
func (n *Net) Stats() map[Dir]DirStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[Dir]DirStats, len(n.counters))
	for d, c := range n.counters {
		out[d] = DirStats{
			Conns:           c.conns.Load(),
			Resets:          c.resets.Load(),
			Bytes:           c.bytes.Load(),
			BytesLost:       c.bytesLost.Load(),
			Frames:          c.frames.Load(),
			FramesLost:      c.framesLost.Load(),
			FramesDropped:   c.framesDropped.Load(),
			FramesReordered: c.framesReordered.Load(),
		}
	}
	return out
}
