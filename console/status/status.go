// Package status holds the types of what the web console (package
// console) asks a server about itself: its member, the ensemble and the
// sessions. It imports nothing of zkgo, so that package server can
// implement Source without importing the console (which is a ZooKeeper
// client of the server, and whose tests start servers).
package status

import (
	"context"
	"errors"
	"time"
)

// Source is what the console asks the server about itself: this
// member and its view of the ensemble, and the sessions. Package server
// implements it (server/console.go; the server mounts the console on its admin
// HTTP port and passes it as console.Config.Status); the console's tests
// use console.FakeStatus.
//
// Who calls: the console's HTTP handlers (overview, sessions and session
// pages) and the overview's live-update loop (about every two seconds
// while an overview page is open), from net/http's and the console's own
// goroutines, concurrently. Implementations must be safe for concurrent
// use, answer from memory (no raft round trip, no disk I/O) and return
// promptly; ctx carries the HTTP request's deadline and a method that
// cannot answer before it ends returns ctx.Err().
//
// Ownership: every slice returned is the caller's (a fresh copy); the
// console never modifies it and never keeps it beyond the request, except
// for comparing the last Member answer with the next.
//
// Errors: ErrNoSession from Session means the session does not exist (any
// more); any other error is shown on the page as "status unavailable:
// <err>" and the rest of the page is still rendered from the tree.
type Source interface {
	// Member reports this member's role, log positions, snapshot and
	// fsync figures and its view of the ensemble.
	Member(ctx context.Context) (Member, error)
	// Sessions returns up to limit sessions whose id is greater than
	// after, in increasing id order, and the total number of sessions
	// (server-side paging: the console never asks for all of them).
	// Detail fields (SessionInfo.Ephemerals, Watches) may be left empty
	// here; the counts must be set.
	Sessions(ctx context.Context, after int64, limit int) (page []SessionInfo, total int, err error)
	// Session returns one session with its detail: the paths of its
	// ephemeral nodes and of its watches, each list sorted and cut to at
	// most limit entries (the counts stay the full numbers).
	Session(ctx context.Context, id int64, limit int) (SessionInfo, error)
}

// ErrNoSession is returned by Source.Session for an unknown session.
var ErrNoSession = errors.New("console: no such session")

// Role is a member's role in the ensemble as srvr's "Mode:" line says it.
type Role string

// Roles.
const (
	RoleStandalone Role = "standalone"
	RoleLeader     Role = "leader"
	RoleFollower   Role = "follower"
	RoleObserver   Role = "observer"
	// RoleCandidate: an election is under way (no leader known).
	RoleCandidate Role = "candidate"
	// RoleJoining: a member waiting to form or join an ensemble.
	RoleJoining Role = "joining"
	// RoleUnknown: a member this member cannot reach or has no news of.
	RoleUnknown Role = "unknown"
)

// Member is this member's state, as the console's overview shows it.
type Member struct {
	ID      int64  // myid (0 when standalone)
	Role    Role   // this member's role
	Version string // server version string, as srvr shows it
	// Zxid is the last zxid applied to this member's tree.
	Zxid int64
	// RaftTerm, CommitIndex and AppliedIndex are raft's: the current term,
	// the highest log index known committed, the highest index applied.
	RaftTerm     uint64
	CommitIndex  uint64
	AppliedIndex uint64
	// Started is when this server started.
	Started time.Time
	// Connections, Sessions and Znodes are current counts on this member.
	Connections int
	Sessions    int
	Znodes      int64
	// LastSnapshot describes the newest snapshot on disk (zero when none).
	LastSnapshot Snapshot
	// FsyncLatency is the recent fsync latency of the log (an average over
	// the last minute or so; zero when not measured, e.g. in memory).
	FsyncLatency time.Duration
	// FsyncLatencyMax is the largest fsync latency over the same window.
	FsyncLatencyMax time.Duration
	// Ensemble lists every member of the configuration, this one included,
	// in id order. Empty when standalone.
	Ensemble []Peer
	// Waiting says what the member waits for before it serves clients
	// (forming the ensemble, joining it, the configured members); "" when
	// it waits for nothing of the kind.
	Waiting string
}

// Snapshot describes a snapshot file.
type Snapshot struct {
	Zxid  int64     // the last zxid it contains
	Index uint64    // the raft index it was taken at
	Size  int64     // bytes on disk
	Time  time.Time // when it was written
}

// Peer is one member of the ensemble as this member sees it.
type Peer struct {
	ID         int64
	ClientAddr string // host:port of its client port ("" if unknown)
	PeerAddr   string // host:port of its peer (quorum) port
	Role       Role   // RoleUnknown when this member has no news of it
	Voting     bool   // a voter (false: observer or non-voting learner)
	Reachable  bool   // this member's transport reaches it now
	// Match is the highest raft index known replicated to it (meaningful
	// on the leader; zero elsewhere).
	Match uint64
	// Lag is how many committed entries it is behind the leader (leader's
	// commit index − Match; meaningful on the leader, zero elsewhere).
	Lag uint64
}

// SessionInfo is one client session.
type SessionInfo struct {
	ID int64
	// ClientAddr is the remote address of its connection when the session
	// is connected to this member, "" when it is connected elsewhere or
	// not at all.
	ClientAddr string
	Timeout    time.Duration // negotiated session timeout
	// LastSeen is when the session last showed life (a request or ping)
	// as far as this member knows.
	LastSeen time.Time
	// AuthIDs are the session's identities, "scheme:id" (e.g.
	// "digest:bob:<hash>", "ip:10.0.0.7"); empty when unknown.
	AuthIDs []string
	// EphemeralCount and WatchCount are the full numbers.
	EphemeralCount int
	WatchCount     int
	// Ephemerals and Watches are filled by Session (sorted, at most its
	// limit); Sessions may leave them nil.
	Ephemerals []string
	Watches    []Watch
}

// Watch is one watch registration of a session.
type Watch struct {
	Path string
	// Kind is "data", "exist", "child", "persistent" or
	// "persistentRecursive".
	Kind string
}
