package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/storage"
)

// Defaults for Config fields left zero.
const (
	DefaultTickInterval  = 100 * time.Millisecond
	DefaultElectionTick  = 10
	DefaultHeartbeatTick = 1
	DefaultSnapCount     = 100000 // ZooKeeper's snapCount
	// DefaultSnapBytes: a snapshot is due once this many bytes of
	// entries were applied since the last one, whatever their count —
	// the log between snapshots is held in memory (ZooKeeper's
	// snapSizeLimitInKb bounds its on-disk log at 4 GiB instead).
	DefaultSnapBytes       = 64 << 20
	DefaultMaxSizePerMsg   = 1 << 20
	DefaultMaxInflightMsgs = 256
	// DefaultMaxUncommittedBytes bounds the proposals a leader holds that
	// are not committed yet; further proposals fail with
	// ErrProposalDropped until some commit.
	DefaultMaxUncommittedBytes = 256 << 20
	// DefaultCommitDelay caps how long a leader holds a lone new entry
	// for a second one to share its fsync (Config.CommitDelay).
	DefaultCommitDelay = time.Millisecond
)

// Peer is a member of the group.
type Peer struct {
	ID uint64
	// Addr is where the member's transport listens ("host:port" for the
	// TCP transport; unused by the in-memory one).
	Addr string
	// Learner members (ZooKeeper observers) receive the log but never
	// vote, count towards a quorum, or lead.
	Learner bool
}

// StateMachine is the replicated state. The Node calls its methods from
// one goroutine, the apply goroutine, never concurrently, in log order.
// Meanwhile the run goroutine goes on ticking, persisting and sending.
type StateMachine interface {
	// Apply applies committed entries in index order. Entries are raft's
	// normal entries with non-empty Data (raft's empty no-op entries and
	// configuration changes are not passed; see Config.OnConfChange).
	// Apply must be deterministic and must not fail: every member applies
	// the same entries to the same state. It must not modify the entries.
	// The slice is reused once Apply returns (copy the Entry values to keep
	// them); their Data is never modified and may be kept. Apply
	// must not call the Node's blocking methods (Propose, ReadIndex,
	// WaitApplied, Stop): the run loop may be waiting for Apply to return.
	Apply(entries []raftpb.Entry)
	// Snapshot captures the state as of the last applied entry and returns
	// a function that writes it (to the snapshot file, streamed). Snapshot
	// is called on the apply goroutine between Apply calls, every
	// SnapCount entries and after each configuration change (so that a
	// joining member is sent a snapshot whose configuration names it); keep
	// it short. The node calls write exactly once, on another goroutine,
	// while Apply goes on: it must write the state as of the capture. With
	// a nil writer (the snapshot was abandoned before its file was
	// created), write only releases what the capture holds. The file's
	// fsync and the compaction of the log follow, still beside Apply. An
	// error from either, or a disk error while the file is written or
	// fsynced, is logged and the snapshot retried after another SnapCount
	// entries; a disk error once the file is being installed (renamed, its
	// WAL record written) stops the node, as a failed WAL write does.
	Snapshot() (write func(w io.Writer) error, err error)
	// Restore replaces the state with a snapshot taken at index: at start
	// (from the newest local snapshot) and when the leader sends one to a
	// lagging member. It reads the snapshot's data from r until io.EOF
	// (streamed from its file: a snapshot is never needed whole in
	// memory); an error from r means the data is damaged. A nil r means
	// the initial, empty state. An error stops the node.
	Restore(r io.Reader, index uint64) error
}

// SnapshotChecker is implemented by state machines that can check a
// snapshot's data before it is installed. A snapshot a peer streams is
// checked after it is received and before raft takes it; one that does
// not load is deleted and the leader's stream fails (it sends again), so
// a snapshot that cannot be restored is never installed — Restore failing
// on it would stop the member at every start. The state machine may keep
// what it loaded for the Restore at index that follows (on the apply
// goroutine), instead of reading the data again. Called on a transport's
// goroutine, one snapshot at a time.
type SnapshotChecker interface {
	CheckSnapshot(r io.Reader, index uint64) error
}

// Config configures a Node. ID, Peers (unless Join), Storage,
// StateMachine and Transport are required.
type Config struct {
	// ID is this member's id, non-zero and unique in the group.
	ID uint64
	// ClusterID identifies the group. It is recorded in the storage
	// metadata (see Metadata) and checked by the TCP transport's
	// handshake.
	ClusterID uint64
	// Peers is the initial membership, this member included. A fresh
	// storage is bootstrapped with it (the same list, in any order, on
	// every member); afterwards membership comes from the log and Peers
	// only provides addresses to the transport.
	Peers []Peer
	// Join starts a member with fresh storage without bootstrapping: it
	// waits for the leader, which must already have added it with
	// ProposeConfChange, to send it a snapshot.
	Join bool
	// Storage is the member's opened storage. The caller keeps ownership:
	// Close it after Stop.
	Storage *storage.Storage
	// StateMachine receives committed entries.
	StateMachine StateMachine
	// Transport carries raft messages. The Node starts it and stops it in
	// Stop.
	Transport Transport
	// OnConfChange, if set, is called on the apply goroutine after a
	// configuration change entry has been applied to raft, in log order
	// with StateMachine.Apply. cs is the configuration from now on. The
	// transport is not updated automatically: add the new member's address
	// (Transport.AddPeer) here, and remove removed members. A removed
	// member stops receiving entries; the caller should Stop it.
	OnConfChange func(index uint64, cc raftpb.ConfChangeV2, cs raftpb.ConfState)

	// TickInterval is the length of a raft tick (default 100 ms).
	TickInterval time.Duration
	// Ticks, if not nil, replaces the wall clock: each value received is
	// one raft tick, so tests can drive elections and heartbeats without
	// depending on the machine's speed. TickInterval then only paces the
	// retries of ReadIndex.
	Ticks <-chan struct{}
	// ElectionTick is the election timeout in ticks (default 10); a
	// follower that hears no leader for ElectionTick..2*ElectionTick ticks
	// campaigns.
	ElectionTick int
	// HeartbeatTick is the leader's heartbeat interval in ticks (default 1).
	HeartbeatTick int
	// SnapCount is the number of applied entries between snapshots
	// (default 100000, ZooKeeper's snapCount).
	SnapCount uint64
	// SnapBytes makes a snapshot due once the entries applied since the
	// last one hold this many bytes of data, before SnapCount of them
	// (default DefaultSnapBytes; math.MaxUint64: never by size). The log
	// between two snapshots is held in memory: this bounds it by size
	// (with the snapshots' duty-cycle limit, snapDuty, as the exception:
	// a snapshot that takes long delays the next).
	SnapBytes uint64
	// MaxSizePerMsg bounds the entries in one append message (default 1 MiB).
	MaxSizePerMsg uint64
	// MaxInflightMsgs bounds the append messages in flight to one follower
	// (default 256).
	MaxInflightMsgs int
	// MaxUncommittedBytes bounds the leader's uncommitted proposals
	// (default 256 MiB).
	MaxUncommittedBytes uint64
	// Logger receives raft's and the node's messages; nil discards them.
	Logger *slog.Logger
	// OnSnapshot, if set, is told of each snapshot this member took and
	// installed: the size of its file and the time from the start of
	// writing the file to the end of its installation (not the capture on
	// the apply goroutine, which is short). It is for metrics, called on
	// the goroutine that wrote the snapshot; it must not block.
	OnSnapshot func(bytes int64, d time.Duration)
	// OnLogCompacted, if set, is told after each snapshot this member took
	// and installed how many bytes of entry data were applied between the
	// previous snapshot and this one: about what the in-memory log let go
	// (less the entries kept for followers to catch up), garbage from
	// then on. Called on the goroutine that wrote the snapshot; it must
	// not block.
	OnLogCompacted func(dataBytes uint64)
	// ValidateEntry, if set, checks the data of a normal entry a peer
	// sends (appended by a leader, forwarded to this leader) before raft
	// stores it: StateMachine.Apply must be able to apply whatever it
	// accepts. A message with an entry it refuses is dropped and logged
	// (screen.go), so an entry no member can apply never reaches a log.
	// It is called concurrently, from the transport's goroutines, and
	// must not block.
	ValidateEntry func(data []byte) error
	// CommitDelay caps how long the leader holds a lone new entry back
	// from its fsync when a second one usually follows within that
	// time (group commit, groupcommit.go); the hold is also never longer
	// than the mean fsync. 0 means DefaultCommitDelay; negative turns
	// group commit off.
	CommitDelay time.Duration
	// ProposalSource, if set, names who proposed an entry (the server:
	// the client session in the entry's data; false: unknown). Group
	// commit waits longer than an fsync for a second entry only from
	// another source than the first's, so that one client's sequential
	// writes are never held (groupcommit.go). It is called under the
	// raft lock for every proposal and must be fast.
	ProposalSource func(data []byte) (uint64, bool)
	// Notifications, if set, knows which clients were just told of a
	// change and have not written since (the server: its watch
	// notifications, and the owner of the node after each deleted
	// sequential one, which a lock's next holder on any member watches).
	// Group commit waits longer than an fsync for a
	// second entry only when such a client exists and the lone entry is
	// not its own: a lock's next holder, notified, deletes its node soon
	// after the releaser's create.
	Notifications Notifications
}

func (c Config) withDefaults() Config {
	if c.TickInterval <= 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.ElectionTick <= 0 {
		c.ElectionTick = DefaultElectionTick
	}
	if c.HeartbeatTick <= 0 {
		c.HeartbeatTick = DefaultHeartbeatTick
	}
	if c.SnapCount == 0 {
		c.SnapCount = DefaultSnapCount
	}
	if c.SnapBytes == 0 {
		c.SnapBytes = DefaultSnapBytes
	}
	if c.MaxSizePerMsg == 0 {
		c.MaxSizePerMsg = DefaultMaxSizePerMsg
	}
	if c.MaxInflightMsgs <= 0 {
		c.MaxInflightMsgs = DefaultMaxInflightMsgs
	}
	if c.MaxUncommittedBytes == 0 {
		c.MaxUncommittedBytes = DefaultMaxUncommittedBytes
	}
	if c.CommitDelay == 0 {
		c.CommitDelay = DefaultCommitDelay
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.ID == 0:
		return fmt.Errorf("%w: ID is 0", ErrConfig)
	case c.Storage == nil:
		return fmt.Errorf("%w: no Storage", ErrConfig)
	case c.StateMachine == nil:
		return fmt.Errorf("%w: no StateMachine", ErrConfig)
	case c.Transport == nil:
		return fmt.Errorf("%w: no Transport", ErrConfig)
	case c.HeartbeatTick >= c.ElectionTick:
		return fmt.Errorf("%w: HeartbeatTick %d must be below ElectionTick %d", ErrConfig, c.HeartbeatTick, c.ElectionTick)
	}
	seen := map[uint64]bool{}
	self := false
	for _, p := range c.Peers {
		if p.ID == 0 || seen[p.ID] {
			return fmt.Errorf("%w: peer id %d is zero or repeated", ErrConfig, p.ID)
		}
		seen[p.ID] = true
		self = self || p.ID == c.ID
	}
	if !c.Join && isEmpty(c.Storage) && !self {
		return fmt.Errorf("%w: bootstrapping member %d is not in Peers", ErrConfig, c.ID)
	}
	return nil
}

// Metadata returns the storage metadata identifying a member: pass it as
// storage.Options.Metadata when opening the member's directory, so that a
// directory of another member or cluster is refused (by storage.Open, and
// by Start, which checks metadata in this format against Config).
func Metadata(id, clusterID uint64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, id)
	binary.BigEndian.PutUint64(b[8:], clusterID)
	return b
}

func checkMetadata(md []byte, id, clusterID uint64) error {
	if len(md) != 16 {
		return nil // not ours: nothing to check
	}
	gotID, gotCluster := binary.BigEndian.Uint64(md), binary.BigEndian.Uint64(md[8:])
	if gotID != id || gotCluster != clusterID {
		return fmt.Errorf("%w: storage belongs to member %d of cluster %x, config says member %d of cluster %x",
			ErrIDMismatch, gotID, gotCluster, id, clusterID)
	}
	return nil
}

// Errors. Compare with errors.Is.
var (
	// ErrConfig means Start was given an invalid Config.
	ErrConfig = errors.New("raftnode: invalid config")
	// ErrIDMismatch means the storage was created for another member or
	// cluster.
	ErrIDMismatch = errors.New("raftnode: storage belongs to another member")
	// ErrStopped is returned by calls on a Node that was stopped or that
	// failed (then Err tells why).
	ErrStopped = errors.New("raftnode: stopped")
	// ErrEmptyProposal means Propose was given no data; empty entries are
	// raft's own and are not passed to the state machine.
	ErrEmptyProposal = errors.New("raftnode: empty proposal")
	// ErrProposalDropped (raft's own sentinel) means raft dropped the
	// proposal without appending it: the member that received it knows no
	// leader, leadership is being transferred, or too many uncommitted
	// proposals are pending. Retrying later is safe.
	ErrProposalDropped = raft.ErrProposalDropped
	// ErrLogBehind means raft stopped the member because its log
	// contradicts what the group knows of it: it lacks entries it once
	// acknowledged (a data directory restored from an old backup). Such
	// a member must rejoin with a fresh data directory.
	ErrLogBehind = errors.New("raftnode: this member's log is behind what it acknowledged")
)

// Notifications is what group commit learns of clients told of a change
// (Config.Notifications). The node calls it from the goroutines that
// propose (under its raft lock) and from its run goroutine; it must be
// safe for concurrent use and fast.
type Notifications interface {
	// Pending reports whether a client other than src was told of a
	// change within d and has not proposed since, and whether src was.
	Pending(src uint64, d time.Duration) (other, self bool)
	// Proposed tells that src proposed an entry.
	Proposed(src uint64)
}
