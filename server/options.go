package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/clientport"
	"github.com/zkgo/zkgo/server/replica"
)

// Options configure a server. Zero values take ZooKeeper's defaults.
type Options struct {
	// Addr is the client address to listen on ("host:port"; port 0 picks
	// a free port). Default ":2181", unless SecureAddr is set: then no
	// plaintext port unless Addr is set.
	Addr string
	// TLS, if set, is the TLS configuration of the client ports (see
	// internal/tlsconf): it is served on SecureAddr (secureClientPort),
	// and on Addr too with PortUnification (client.portUnification: TLS
	// and plaintext on one port, told apart by the first byte).
	TLS             *tls.Config
	SecureAddr      string
	PortUnification bool
	// X509SuperUser is the certificate subject of the super user: a TLS
	// client presenting it is also authenticated as super
	// (X509AuthenticationProvider.superUser).
	X509SuperUser string
	// TickTime is ZooKeeper's basic time unit. Default 2s.
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound negotiated session
	// timeouts. Defaults 2× and 20× TickTime.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxClientCnxns limits concurrent connections per client IP; 0 means
	// unlimited. Default 60 is applied by the config package, not here.
	MaxClientCnxns int
	// MaxConnections limits client connections in all (maxCnxns); 0
	// means unlimited.
	MaxConnections int
	// ConnectionThrottleTokens, if positive, throttles new connections
	// with a token bucket of that size, refilled with
	// ConnectionThrottleFillCount tokens every ConnectionThrottleFillTime
	// (ZooKeeper's connection_throttle_*; defaults 1 and 1 ms): a
	// connection accepted when the bucket is empty is closed at once.
	ConnectionThrottleTokens    int
	ConnectionThrottleFillTime  time.Duration
	ConnectionThrottleFillCount int
	// HandshakeTimeout closes a connection that has not completed its
	// connect handshake (or four-letter word) in time (ZooKeeper's
	// zookeeper.nio.sessionlessCnxnTimeout). Default 10s.
	HandshakeTimeout time.Duration
	// MaxQueuedBytes is the backpressure bound of a connection's unsent
	// replies and notifications: above it the server reads no further
	// request from the connection until its client has taken enough.
	// Default 256 KiB.
	MaxQueuedBytes int
	// IdleAfter parks a plain-TCP connection (on Linux) that has sent no
	// request for this long: its goroutines end and its input buffer
	// goes back to a pool until its next byte arrives (connpark.go); a
	// connection whose last two requests other than pings came less than
	// 4 × IdleAfter apart waits 4 × IdleAfter. Default 250ms; negative:
	// connections never park.
	IdleAfter time.Duration
	// MaxWatches bounds the watches one connection holds (a persistent
	// watch counts twice): a request that would register more is answered
	// Throttled without being executed. Default 1<<20.
	MaxWatches int
	// MaxQueuedBytesHard closes a connection whose unsent output exceeds
	// it (replies of requests read before the backpressure began, and
	// notifications, which no backpressure holds back). Default 64 MiB.
	MaxQueuedBytesHard int
	// MaxBuffer is jute.maxbuffer: the largest accepted frame. Default
	// 0xfffff.
	MaxBuffer int
	// FourLetterWords is the whitelist of enabled four-letter words; "*"
	// enables all. Default: srvr only.
	FourLetterWords []string
	// ExtendedTypes enables TTL nodes.
	ExtendedTypes bool
	// SuperDigest is the DigestAuthenticationProvider.superDigest value
	// ("super:<base64 sha1>"), or "".
	SuperDigest string
	// ServerID (myid) goes in the top byte of session ids.
	ServerID int64
	// ContainerCheckInterval is how often empty containers and expired TTL
	// nodes are reaped. Default 60s.
	ContainerCheckInterval time.Duration
	// MaxOutstanding bounds the requests in flight per connection; the
	// server stops reading from a connection that reaches it. Default 1000.
	MaxOutstanding int
	// GlobalOutstanding bounds the requests in flight in the whole server
	// (globalOutstandingLimit): at the bound the server reads no further
	// request from any connection until some are answered. Default 10
	// times MaxOutstanding.
	GlobalOutstanding int
	// EnforceQuota makes hard quota limits fail writes. Default true via
	// the config package.
	EnforceQuota bool
	// ExistsWithoutRead answers exists on a node the session may not read
	// (ZooKeeper 3.8.0's behaviour). By default exists needs READ on an
	// existing node and answers NoAuth without it, as ZooKeeper 3.8.4+
	// and 3.9.2+ do (ZOOKEEPER-2590); a missing node is NoNode whatever
	// the ACLs. zoo.cfg: zkgo.exists.checkRead=false.
	ExistsWithoutRead bool
	// DisableDigestAuth turns the digest scheme off
	// (DigestAuthenticationProvider.enabled=false).
	DisableDigestAuth bool
	// DataDir holds the durable log and snapshots (in DataDir/zkgo, or
	// DataLogDir/zkgo if set). Empty means in-memory: nothing survives a
	// restart, and the server says so.
	DataDir, DataLogDir string
	// NoSync skips fsync (tests that are not about durability only: an
	// acknowledged write may be lost if the machine crashes).
	NoSync bool
	// NoWALPrefill turns off writing zeros into the WAL's preallocated
	// space (storage.Options.NoPrefill; zkgo.wal.prefill=false).
	NoWALPrefill bool
	// CommitDelay caps how long the leader holds a lone write back from
	// its fsync for a second one to share it, when the recent past says
	// one usually follows (raftnode.Config.CommitDelay; zkgo's key
	// zkgo.groupCommit.maxWaitUs). 0: the default (1 ms); negative: off.
	CommitDelay time.Duration
	// SnapCount is the number of log entries between snapshots
	// (ZooKeeper's snapCount). Default 100000.
	SnapCount int
	// NoTreeDigest turns off the tree digest (ZooKeeper's
	// digest.enabled=false): the hash command then shows none, and
	// writes save its CRCs.
	NoTreeDigest bool
	// SnapBytes makes a snapshot due once the log since the last one
	// holds this many bytes (snapSizeLimitInKb; raftnode.Config.SnapBytes).
	// 0: raftnode.DefaultSnapBytes; negative: no limit by size.
	SnapBytes int64
	// ReturnMemoryAfter: once a snapshot lets go of a log that held at
	// least this many bytes of entry data, the server collects garbage and
	// returns the free memory to the operating system (memrelease.go).
	// 0: DefaultReturnMemoryAfter; negative: never. It waits until no
	// entry was applied for ReturnMemoryQuiet (writes still going on
	// reuse that memory; returning it then stalls them).
	ReturnMemoryAfter int64
	// ReturnMemoryHeld: at the end of any burst of writes (no entry
	// applied for ReturnMemoryQuiet after some were), the server returns
	// memory if the runtime holds at least this many bytes, and 1/16 of
	// the live heap, that it could give back (memrelease.go).
	// 0: DefaultReturnMemoryHeld; negative: never.
	ReturnMemoryHeld int64
	// ReturnMemoryQuiet: how long no entry must be applied before a
	// return of memory (ReturnMemoryAfter) runs. 0: DefaultReturnMemoryQuiet.
	ReturnMemoryQuiet time.Duration
	// SnapRetainCount is how many snapshots (and the log after the oldest
	// of them) are kept (autopurge.snapRetainCount; default and minimum 3).
	// Older ones are deleted after each new snapshot.
	SnapRetainCount int
	// Peers, when it lists more than one member, makes this server (the
	// member ServerID) part of an ensemble (zoo.cfg's server.N lines):
	// writes are replicated with raft over the members' peer addresses,
	// observers are raft learners. Needs DataDir.
	Peers []Peer
	// DisableStandalone (standaloneEnabled=false): a server whose Peers
	// list only itself is an ensemble member all the same, a quorum of
	// one over its peer port, which reconfig can grow. Otherwise such a
	// server runs standalone, as ZooKeeper does by default.
	DisableStandalone bool
	// ReadOnlyMode (readonlymode.enabled): an ensemble member that loses
	// its leader serves read-only clients (local sessions, reads only)
	// until a leader is back.
	ReadOnlyMode bool
	// ConfigText, if set, is the data of /zookeeper/config (the
	// membership in ZooKeeper's dynamic-configuration format; see
	// config.DynamicText).
	ConfigText string
	// PeerTransport, if set, carries this member's raft messages instead
	// of TCP (zktest's in-process clusters use raftnode's in-memory
	// network, whose links tests can cut). PeerListener is then unused.
	PeerTransport raftnode.Transport
	// RaftTicks, if set, replaces raft's wall clock (for tests and
	// embedding; see raftnode.Config.Ticks): each value received is one
	// raft tick, which elections, heartbeats and leader-loss detection
	// count. Session timeouts and the other server timers still use wall
	// time. zktest's clusters drive their members with it.
	RaftTicks <-chan struct{}
	// PeerServerTLS and PeerClientTLS, if set, run the peer connections
	// over mutual TLS (sslQuorum; see raftnode.TCPConfig): the first for
	// connections this member accepts, the second for those it dials.
	PeerServerTLS, PeerClientTLS *tls.Config
	// PeerClientTLSFunc, if set, replaces PeerClientTLS: the configuration
	// of each peer connection this member dials (re-reading certificates
	// that changed on disk; tlsconf.ReloadingClientConfig).
	PeerClientTLSFunc func() *tls.Config
	// PeerPortUnification (portUnification): with PeerServerTLS, the peer
	// port accepts plaintext members too, for the rolling switch between
	// plaintext and TLS. Members dial over TLS only if PeerClientTLS (or
	// PeerClientTLSFunc) is set (sslQuorum).
	PeerPortUnification bool
	// PeerHostnameVerification (ssl.quorum.hostnameVerification): a peer's
	// certificate must be valid for the host of the server.N address of
	// the member it claims to be, on connections this member accepts too.
	PeerHostnameVerification bool
	// ReconfigEnabled (reconfigEnabled) allows the reconfig operation;
	// otherwise it is answered ReconfigDisabled, ZooKeeper's default.
	ReconfigEnabled bool
	// SkipACL (skipACL=yes): reconfig needs no authorization. Otherwise
	// the super user, or write permission on /zookeeper/config.
	SkipACL bool
	// OnConfigChange, if set, is called (on the apply goroutine) with the
	// new /zookeeper/config text and version after every reconfig, on
	// every member: zkgo server writes the dynamic configuration file.
	OnConfigChange func(text string, version int64) error
	// ClientListener, if set, is the listener of the plaintext (or
	// unified) client port, in place of listening on Addr: tests listen
	// first and so keep the port from being taken by another socket
	// before the server starts, as PeerListener does for peers.
	ClientListener net.Listener
	// PeerListener, if set, is this member's listener for peer traffic
	// (tests listen on port 0 first); otherwise the server listens on its
	// own entry's addresses (every one of a multiAddress line), or with
	// PeerListenAll on every interface at their ports.
	PeerListener net.Listener
	// PeerListenAll (quorumListenOnAllIPs=true): listen for peers on
	// every interface, at the peer port(s) of this member's own entry,
	// rather than on the address the entry names.
	PeerListenAll bool
	// MultiAddress (multiAddress.enabled): a reconfig's server lines may
	// give several '|'-separated addresses, as zoo.cfg's then may.
	MultiAddress bool
	// PeerDialAddr, if set, gives the address this member dials to reach
	// member serverID, whose peer address is addr, for every connection
	// it opens to it: raft messages, snapshot streams, and the probes of
	// a member deciding how to start or learning the formation. Peers
	// keep their addresses. For tests that put a proxy on each peer link
	// (zkgo server built with the zkgofaults tag); it must not block.
	PeerDialAddr func(serverID int64, addr string) string
	// SASL configures SASL DIGEST-MD5 authentication (sasl.go).
	SASL SASLOptions
	// MaxSnapshotBytes bounds a snapshot's data (0: the storage's
	// default): also the disk a snapshot stream from the leader may fill
	// before it is checked.
	MaxSnapshotBytes int64
	// LinearizableReads (zkgo.reads=linearizable) answers every read
	// after a ReadIndex round (linread.go): it sees every write
	// acknowledged before it, on any member. Off, reads are ZooKeeper's:
	// sequentially consistent, answered from the member's own tree.
	LinearizableReads bool
	// QuorumAuth configures quorum SASL, the members' authentication of
	// each other on the peer port (quorumauth.go).
	QuorumAuth QuorumAuthOptions
	// EnforceAuthSchemes, if set, are the schemes of which a connection
	// must hold an identity before any request other than auth and SASL
	// (enforce.auth.enabled with enforce.auth.schemes;
	// sessionRequireClientSASLAuth=true means "sasl"). Other requests are
	// answered SessionClosedRequireSaslAuth and the connection is closed.
	// Known schemes: sasl (needs SASL.Users), digest, ip.
	EnforceAuthSchemes []string
	// Logger receives the server's logs. Default slog.Default().
	Logger *slog.Logger
	// Audit turns on ZooKeeper's audit log (audit.enable, or
	// -Dzookeeper.audit.enable; audit.go): a line for every change made
	// by this member's clients, every authentication, and the server's
	// start and stop.
	Audit bool
	// AuditFile is the audit log's file (zkgo.audit.file; the config
	// package's default is dataDir/zookeeper_audit.log). Empty: the
	// events go to Logger.
	AuditFile string
	// AuditQueue bounds the audit events waiting to be written; more are
	// dropped and counted (mntr zkgo_audit_dropped). Default 10000.
	AuditQueue int
	// AuditUser is the user of the server's own events (serverStart,
	// ephemeral nodes of closed sessions). Default: the Kerberos
	// principal of SASL.Kerberos, else the user running the process, as
	// ZooKeeper's ServerCnxnFactory.getUserName.
	AuditUser string
	// ConfigDump, if set, is printed by the conf four-letter word.
	ConfigDump func() []string
	// AdminAddr, if set, is where the AdminServer serves ZooKeeper's
	// commands over HTTP (admin.serverAddress:admin.serverPort; port 0
	// picks a free port, see Server.AdminAddr), and /metrics too when
	// MetricsAddr is set. Empty (the default here; the config package's
	// default is ZooKeeper's, 0.0.0.0:8080): no AdminServer. An address
	// that cannot be bound is logged and the server runs without it.
	AdminAddr string
	// AdminCommandURL is the path of the commands (admin.commandURL),
	// without a trailing slash. Default "/commands".
	AdminCommandURL string
	// AdminIdleTimeout closes AdminServer connections idle that long
	// (admin.idleTimeout). Default 30s.
	AdminIdleTimeout time.Duration
	// AdminPprof also serves Go's profiler under /debug/pprof/ on the
	// AdminServer (zkgo.admin.pprof=true).
	AdminPprof bool
	// AdminConsole, if set, builds the web console served at / of the
	// AdminServer (package console; zkgo.admin.console, on by default in
	// zoo.cfg): the tree, sessions, the ensemble, and the lock queues and
	// elections it recognises; writes only for users who log in with a
	// digest identity the ACLs allow.
	AdminConsole ConsoleFactory
	// AdminAllowedHosts are the names (case insensitive; a port is
	// ignored; ".example.org" for a whole domain; zkgo.admin.allowedHosts)
	// a request's Host header may name on the AdminServer's port besides
	// IP addresses, localhost and this machine's host name. Other Hosts
	// are answered 421 (a DNS-rebinding defence, server/adminhttp/hosts.go); "*"
	// allows any.
	AdminAllowedHosts []string
	// AdminSnapshot serves the snapshot command (admin.snapshot.enabled,
	// on by default in zoo.cfg; admin_snapshot.go), at most one per
	// AdminRateLimit (admin.rateLimiterIntervalInMS; default 5 minutes).
	AdminSnapshot  bool
	AdminRateLimit time.Duration
	// AdminRestore serves the restore command (admin.restore.enabled, on
	// by default in zoo.cfg, as ZooKeeper 3.9; admin_restore.go): a POST of
	// a snapshot that the member stages, then stops with ErrRestored, to
	// start again from it. At most one per AdminRateLimit.
	AdminRestore bool
	// AdminTLS, if set, serves the AdminServer (and the console) over
	// HTTPS (admin.forceHttps; server/adminhttp/tls.go), and over plain HTTP too on
	// the same port with AdminPortUnification (admin.portUnification: a
	// connection whose first byte starts a TLS handshake gets TLS). A
	// verified client certificate gives the request the x509 identity
	// its subject names, as on the client port (X509SuperUser included),
	// for the snapshot command and the console's reads and writes.
	AdminTLS             *tls.Config
	AdminPortUnification bool
	// InitialConfig is the configuration text the AdminServer's
	// initial_configuration reports (zoo.cfg as read); "" without one.
	InitialConfig string
	// MetricsAddr, if set, is where the server serves Prometheus metrics,
	// at http://MetricsAddr/metrics (metricsProvider.className set to
	// PrometheusMetricsProvider, with metricsProvider.httpHost:httpPort;
	// port 0 picks a free port, see Server.MetricsAddr). Empty: nothing
	// listens, and only the counters mntr reports are kept.
	MetricsAddr string
}

func (o *Options) setDefaults() {
	if o.Addr == "" && o.SecureAddr == "" {
		o.Addr = ":2181"
	}
	if o.TickTime <= 0 {
		o.TickTime = 2 * time.Second
	}
	if o.MinSessionTimeout <= 0 {
		o.MinSessionTimeout = 2 * o.TickTime
	}
	if o.MaxSessionTimeout <= 0 {
		o.MaxSessionTimeout = 20 * o.TickTime
	}
	if o.MaxBuffer <= 0 {
		o.MaxBuffer = jute.DefaultMaxBuffer
	}
	if o.ReturnMemoryAfter == 0 {
		o.ReturnMemoryAfter = DefaultReturnMemoryAfter
	}
	if o.ReturnMemoryHeld == 0 {
		o.ReturnMemoryHeld = DefaultReturnMemoryHeld
	}
	if o.ReturnMemoryQuiet <= 0 {
		o.ReturnMemoryQuiet = DefaultReturnMemoryQuiet
	}
	if o.FourLetterWords == nil {
		o.FourLetterWords = []string{"srvr"}
	}
	if o.ContainerCheckInterval <= 0 {
		o.ContainerCheckInterval = time.Minute
	}
	if o.MaxOutstanding <= 0 {
		o.MaxOutstanding = 1000
	}
	if o.GlobalOutstanding <= 0 {
		o.GlobalOutstanding = 10 * o.MaxOutstanding
	}
	o.MaxOutstanding = min(o.MaxOutstanding, o.GlobalOutstanding)
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 10 * time.Second
	}
	if o.MaxQueuedBytes <= 0 {
		o.MaxQueuedBytes = 256 << 10
	}
	if o.MaxWatches <= 0 {
		o.MaxWatches = 1 << 20
	}
	if o.IdleAfter == 0 {
		o.IdleAfter = 250 * time.Millisecond
	}
	if o.MaxQueuedBytesHard <= 0 {
		o.MaxQueuedBytesHard = 64 << 20
	}
	o.MaxQueuedBytesHard = max(o.MaxQueuedBytesHard, o.MaxQueuedBytes)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if u := strings.Trim(o.AdminCommandURL, "/"); u != "" {
		o.AdminCommandURL = "/" + u
	} else {
		o.AdminCommandURL = "/commands"
	}
	if o.AdminIdleTimeout <= 0 {
		o.AdminIdleTimeout = 30 * time.Second
	}
	if o.AdminRateLimit <= 0 {
		o.AdminRateLimit = 5 * time.Minute
	}
}

// Peer is a member of an ensemble.
type Peer = replica.Peer

// QuorumAuthOptions configures quorum SASL, the members' authentication
// of each other on the peer port (server/replica/quorumauth.go).
type QuorumAuthOptions = replica.QuorumAuthOptions

// clustered reports whether the options make an ensemble member: more
// than one member, or one without standalone mode.
func (o *Options) clustered() bool {
	return len(o.Peers) > 1 || len(o.Peers) == 1 && o.DisableStandalone
}

// replicaConfig is what the replica takes of the options.
func (o *Options) replicaConfig() replica.Config {
	return replica.Config{
		ServerID: o.ServerID, Addr: o.Addr, Peers: o.Peers, DisableStandalone: o.DisableStandalone,
		ConfigText: o.ConfigText, MultiAddress: o.MultiAddress,
		TickTime: o.TickTime, RaftTicks: o.RaftTicks,
		DataDir: o.DataDir, DataLogDir: o.DataLogDir, NoSync: o.NoSync, NoWALPrefill: o.NoWALPrefill,
		CommitDelay: o.CommitDelay,
		SnapCount:   o.SnapCount, SnapBytes: o.SnapBytes, SnapRetainCount: o.SnapRetainCount,
		MaxSnapshotBytes: o.MaxSnapshotBytes, MaxBuffer: o.MaxBuffer,
		PeerTransport: o.PeerTransport, PeerListener: o.PeerListener, PeerListenAll: o.PeerListenAll,
		PeerServerTLS: o.PeerServerTLS, PeerClientTLS: o.PeerClientTLS, PeerClientTLSFunc: o.PeerClientTLSFunc,
		PeerPortUnification: o.PeerPortUnification, PeerHostnameVerification: o.PeerHostnameVerification,
		PeerDialAddr: o.PeerDialAddr, QuorumAuth: o.QuorumAuth, Logger: o.Logger,
	}
}

// checkAuth validates the SASL and enforcement options (as ZooKeeper's
// AuthenticationHelper refuses to start with an enforced scheme that has no
// provider) and copies what the caller could still change.
func (o *Options) checkAuth() error {
	o.SASL.Users = maps.Clone(o.SASL.Users)
	if o.SASL.Kerberos != nil {
		// A server that accepts GSSAPI has the sasl scheme.
		o.SASL.Provider = true
	}
	o.EnforceAuthSchemes = slices.Clone(o.EnforceAuthSchemes)
	for _, scheme := range o.EnforceAuthSchemes {
		switch scheme {
		case acl.SchemeSASL:
			// With the provider but no users, as ZooKeeper with
			// SASLAuthenticationProvider and no JAAS Server section:
			// the server runs and no client can authenticate.
			if len(o.SASL.Users) == 0 && !o.SASL.Provider { // Provider is set with Kerberos
				return errors.New("authentication scheme sasl is enforced but no SASL users are configured (nor SASL.Provider)")
			}
		case acl.SchemeDigest:
			if o.DisableDigestAuth {
				return errors.New("authentication scheme digest is enforced but digest authentication is disabled")
			}
		case acl.SchemeIP:
		default:
			return fmt.Errorf("authentication scheme %q is not available", scheme)
		}
	}
	return nil
}

// portConfig is what the client port takes of the options.
func (o *Options) portConfig() clientport.Config {
	return clientport.Config{
		ServerID: o.ServerID, Addr: o.Addr, Listener: o.ClientListener, SecureAddr: o.SecureAddr, TLS: o.TLS,
		PortUnification: o.PortUnification, X509SuperUser: o.X509SuperUser,
		MaxClientCnxns: o.MaxClientCnxns, MaxConnections: o.MaxConnections,
		HandshakeTimeout: o.HandshakeTimeout, IdleAfter: o.IdleAfter,
		ConnectionThrottleTokens: o.ConnectionThrottleTokens, ConnectionThrottleFillTime: o.ConnectionThrottleFillTime,
		ConnectionThrottleFillCount: o.ConnectionThrottleFillCount,
		HoldHandshakes:              o.holdHandshakes(),
		MinSessionTimeout:           o.MinSessionTimeout, MaxSessionTimeout: o.MaxSessionTimeout,
		MaxBuffer: o.MaxBuffer, MaxOutstanding: o.MaxOutstanding, GlobalOutstanding: o.GlobalOutstanding,
		MaxQueuedBytes: o.MaxQueuedBytes, MaxQueuedBytesHard: o.MaxQueuedBytesHard, MaxWatches: o.MaxWatches,
		ExistsWithoutRead: o.ExistsWithoutRead, LinearizableReads: o.LinearizableReads,
		SuperDigest: o.SuperDigest, DisableDigestAuth: o.DisableDigestAuth, SASL: o.SASL,
		EnforceAuthSchemes: o.EnforceAuthSchemes, ReconfigEnabled: o.ReconfigEnabled, SkipACL: o.SkipACL,
		Audit: o.Audit, AuditFile: o.AuditFile, AuditQueue: o.AuditQueue, AuditUser: o.AuditUser,
		Logger: o.Logger,
	}
}

// SASLOptions configure SASL authentication (ZooKeeper's JAAS "Server"
// section with DigestLoginModule, and zookeeper.superUser).
type SASLOptions = clientport.SASLOptions

// holdHandshakes is how long a member that lost its leader holds the
// handshakes it cannot serve yet (clientport.Config.HoldHandshakes): two
// election timeouts, time for raft to elect; a standalone server always
// has its leader.
func (o *Options) holdHandshakes() time.Duration {
	if !o.clustered() {
		return 0
	}
	return 2 * time.Duration(raftnode.DefaultElectionTick) * replica.RaftTickInterval(o.TickTime)
}
