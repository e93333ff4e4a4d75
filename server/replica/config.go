package replica

import (
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/zkgo/zkgo/raftnode"
)

// Config is what the replica takes of the server's options (server.Options
// documents each field under the same name); the server fills it in New.
type Config struct {
	// ServerID is this member's server id (myid); Addr its client
	// address, the client port of its entry in a Membership it makes up.
	ServerID int64
	Addr     string
	// Peers are the members (zoo.cfg's server.N lines); with
	// DisableStandalone one member is an ensemble too.
	Peers             []Peer
	DisableStandalone bool
	// ConfigText is /zookeeper/config's initial text; MultiAddress lets
	// a reconfig's server lines give several addresses.
	ConfigText   string
	MultiAddress bool
	// TickTime is ZooKeeper's time unit; RaftTicks, if set, drives raft's
	// clock instead of the wall clock.
	TickTime  time.Duration
	RaftTicks <-chan struct{}
	// The data directory and the log's: "" keeps the log in memory.
	DataDir, DataLogDir  string
	NoSync, NoWALPrefill bool
	// CommitDelay is raftnode.Config.CommitDelay (group commit).
	CommitDelay time.Duration
	// Snapshots: every SnapCount entries or SnapBytes of log, keeping
	// SnapRetainCount, each at most MaxSnapshotBytes of data.
	SnapCount        int
	SnapBytes        int64
	SnapRetainCount  int
	MaxSnapshotBytes int64
	// MaxBuffer is jute.maxbuffer, the bound of a snapshot's records.
	MaxBuffer int
	// The peer transport: an in-memory one (PeerTransport), or TCP on
	// PeerListener or this member's own peer addresses.
	PeerTransport            raftnode.Transport
	PeerListener             net.Listener
	PeerListenAll            bool
	PeerServerTLS            *tls.Config
	PeerClientTLS            *tls.Config
	PeerClientTLSFunc        func() *tls.Config
	PeerPortUnification      bool
	PeerHostnameVerification bool
	PeerDialAddr             func(serverID int64, addr string) string
	QuorumAuth               QuorumAuthOptions
	Logger                   *slog.Logger
}

// Peer is a member of an ensemble.
type Peer struct {
	ID int64
	// Addr is the member's peer address (host:peerPort).
	Addr string
	// More are further peer addresses of the member (ZooKeeper's
	// multiAddress, server.N=a:p:e|b:p:e): dialled in turn after Addr
	// when it does not answer.
	More []string
	// Observer members replicate and serve clients but never vote.
	Observer bool
}

// Clustered reports whether the configuration makes an ensemble member:
// more than one member, or one without standalone mode.
func (o *Config) Clustered() bool {
	return len(o.Peers) > 1 || len(o.Peers) == 1 && o.DisableStandalone
}

// addrs returns every peer address of p, Addr first.
func (p Peer) addrs() []string { return append([]string{p.Addr}, p.More...) }

// dialAddr is p's addresses as the peer transport takes them: separated
// by '|', tried in turn.
func (p Peer) dialAddr() string { return strings.Join(p.addrs(), "|") }
