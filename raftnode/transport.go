package raftnode

import (
	"context"
	"io"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Transport carries raft messages between members. raft tolerates lost,
// duplicated and reordered messages, so a transport may drop messages
// (and should, rather than block or buffer without bound); it should keep
// the order of the messages to one peer when it can, as that avoids
// needless retransmission.
//
// The Node calls Start once, before any other method, then Send from its
// run goroutine, and Stop once from Stop after the run goroutine exited.
// AddPeer and RemovePeer may be called from any goroutine (typically from
// Config.OnConfChange).
type Transport interface {
	// Start begins delivering inbound messages to h. h's methods may be
	// called from any number of goroutines until Stop returns.
	Start(h Handler) error
	// Send queues messages for their destinations (Message.To) and
	// returns without blocking on the network. It may keep the messages
	// (raft does not modify them afterwards). A message that cannot be
	// delivered is dropped and, if the peer is unreachable, reported with
	// Handler.ReportUnreachable; the fate of a MsgSnap is reported with
	// Handler.ReportSnapshot (SnapshotFinish once it was sent whole,
	// SnapshotFailure if it was dropped).
	Send(msgs []raftpb.Message)
	// AddPeer makes member id reachable at addr (replacing a previous
	// address).
	AddPeer(id uint64, addr string)
	// RemovePeer forgets member id; messages to it are dropped.
	RemovePeer(id uint64)
	// Stop closes connections and waits for the transport's goroutines.
	// Handler methods are not called after Stop returns.
	Stop()
}

// Handler receives what a Transport delivers. Node implements it.
type Handler interface {
	// Process hands an inbound message to raft. It blocks until raft has
	// taken it (briefly) or ctx is done; a transport that reads a
	// connection calls it in order, which gives back-pressure. An error
	// means the node is stopped: the transport may drop the message.
	Process(ctx context.Context, m raftpb.Message) error
	// ReportUnreachable tells raft that the last message to id may have
	// been lost, so the leader probes the follower instead of streaming
	// to it.
	ReportUnreachable(id uint64)
	// ReportSnapshot tells raft whether a MsgSnap to id was sent.
	ReportSnapshot(id uint64, status raft.SnapshotStatus)
	// ReportProposalLost tells the node that a proposal it forwarded to
	// id (a MsgProp) was dropped or may have been lost with a broken
	// connection. raft never resends one, so the node tells whoever waits
	// for proposals (see Node.LeaderChanges).
	ReportProposalLost(id uint64)
	// ProcessSnapshot takes a snapshot streamed by a transport that
	// streams them (see SnapshotStreamer): m is the MsgSnap without its
	// data, data yields the data until io.EOF (or an error if the stream
	// broke or its checksum failed). It consumes data, stores it, then
	// steps m into raft. An error means the snapshot was not taken.
	ProcessSnapshot(ctx context.Context, m raftpb.Message, data io.Reader) error
}

// PeerDownHandler is implemented by Handlers that act when a peer's
// process is found gone: its connection broke and its peer port refuses
// new ones (ECONNREFUSED: the host answers, nothing listens). The TCP
// transport calls PeerDown from the goroutine that watched the
// connection; it must not block.
type PeerDownHandler interface {
	PeerDown(id uint64)
}

// SnapshotResumer is implemented by Handlers that keep what a broken
// snapshot stream delivered (Node does, in the storage's partial file), so
// that the next stream of the same snapshot sends only the rest. The
// transport's snapshot receiver calls HeldSnapshot when a stream starts,
// tells the sender to skip that many bytes, and then calls ResumeSnapshot
// (off > 0) or ProcessSnapshot (off == 0); it runs one receive at a time.
type SnapshotResumer interface {
	// HeldSnapshot returns how many bytes of the data of m's snapshot
	// are held and their CRC-32C (Castagnoli); 0 when none.
	HeldSnapshot(m raftpb.Message) (off int64, crc uint32, err error)
	// ResumeSnapshot is ProcessSnapshot for data that starts at byte off.
	ResumeSnapshot(ctx context.Context, m raftpb.Message, off int64, data io.Reader) error
}

// SnapshotStreamer is implemented by transports that send a snapshot's
// data as a stream, read from the snapshot file, instead of inside one
// message: no snapshot is ever needed whole in memory, and its size is not
// bounded by a message size. The Node calls SendSnapshot on a goroutine of
// its own for each MsgSnap; it returns once the snapshot was sent (or
// failed), reports the outcome with Handler.ReportSnapshot and closes
// data.
type SnapshotStreamer interface {
	SendSnapshot(m raftpb.Message, data io.ReadCloser, size int64)
}
