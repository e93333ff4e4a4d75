// Package raftnode runs one member of a raft group (go.etcd.io/raft) on
// top of package storage: it owns a raft.RawNode (behind a mutex, called
// directly by proposers, the transport and the run loop), its clock and
// its Ready loop, and hands committed entries to a StateMachine.
//
// # Goroutines and ordering
//
// Start launches two goroutines, the run loop and the apply loop. The run
// loop alone ticks raft, takes each raft.Ready and handles it in this
// order (step 3 on the apply loop). Committed entries that an earlier
// Ready already persisted — on a leader and in a group of one, all of
// them — are handed to the apply loop first, so that step 3 for them
// runs while step 1 fsyncs the new entries; a follower's entries that
// are committed in the Ready that brings them, and a snapshot from the
// leader, are handed over after step 1:
//
//  0. send the messages that promise nothing about this member's disk —
//     a leader's appends and heartbeats, vote requests — so that the
//     followers' fsyncs overlap the leader's (sendFirst);
//  1. persist: Storage.SaveSnapshot for a snapshot received from the
//     leader, then Storage.Save of the hard state and new entries, which
//     fsyncs before returning;
//  2. send the rest through the Transport — only after step 1, so that
//     no vote or append acknowledgement leaves the member before what it
//     promises is on disk (raft delivers the leader's acknowledgement of
//     its own entries at Advance, step 5, for the same reason);
//  3. apply: StateMachine.Restore for a received snapshot, then
//     StateMachine.Apply for committed normal entries, in log order, in
//     batches; configuration-change entries are applied to raft
//     (ApplyConfChange) and reported to Config.OnConfChange between
//     batches;
//  4. every SnapCount applied entries (and after a configuration change),
//     StateMachine.Snapshot captures the state; on a goroutine of its own,
//     while applying goes on, the captured state is streamed into
//     Storage.BeginSnapshot's file and Commit (fsync, WAL record,
//     compaction, purge) follows;
//  5. Advance.
//
// Group commit falls out of this loop: proposals that arrive while an
// fsync is in progress are appended and fsynced together in the next
// Ready.
//
// The state machine's methods are only ever called from the apply
// goroutine, never concurrently (the write function a Snapshot returns runs
// on a snapshot goroutine, beside Apply), and must not call the Node's
// blocking methods. All
// other methods (Propose, ProposeConfChange, ReadIndex, WaitApplied,
// AppliedIndex, Status, Leader, Role, LeaderChanges, Stop) may be called
// from any goroutine. The Transport calls the Handler methods (Process,
// ReportUnreachable, ReportSnapshot) from its own goroutines.
//
// # Writes and reads
//
// Propose returns once raft accepted the entry (a follower forwards it to
// the leader); commitment is observed when StateMachine.Apply receives it,
// on every member, at the same index. Callers tag their data with an id to
// recognise their entry, and time out and retry if a leader change loses
// it. ReadIndex + WaitApplied give linearizable reads on any member,
// learners included: after WaitApplied(ReadIndex()) the local state
// reflects every write committed before ReadIndex was called.
//
// # Membership
//
// A fresh member bootstraps from Config.Peers by writing the initial
// configuration as a snapshot at index 1 (so learners can be part of it),
// the same on every member. A member added later starts with Join and
// fresh storage and receives a snapshot from the leader once a member
// proposed its addition with ProposeConfChange. Learners (ZooKeeper
// observers) receive the log but never vote, count towards a quorum, or
// lead.
//
// # Transports
//
// MemNetwork provides in-memory transports for tests, with partitions.
// TCPTransport is the real one: one outbound connection per peer with
// reconnect and backoff, a handshake naming cluster and members, length-
// prefixed bounded frames, and a bounded queue per peer that drops rather
// than blocks.
//
// # Failure
//
// A storage write error, or a snapshot the state machine cannot restore,
// stops the run loop: Done is closed, Err tells why, and every call returns
// ErrStopped. Recovery is a restart: Stop, close the Storage, reopen it and
// Start again. A failed Save is never retried (after a failed fsync the
// kernel may have dropped the unwritten pages, so a retry that succeeds
// proves nothing), and because messages are sent only after Save, the
// entries it failed to write were acknowledged to nobody: a leader never
// counted them, a follower never answered for them. The one disk error
// the node goes on after is a local snapshot whose file could not be
// written or fsynced (storage.ErrSnapshotNotTaken): nothing was installed
// and the log on disk is whole, so it retries later.
package raftnode
