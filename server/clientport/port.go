package clientport

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/server/audit"
	"github.com/zkgo/zkgo/server/metrics"
	"github.com/zkgo/zkgo/server/replica"
	"github.com/zkgo/zkgo/server/session"
	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/server/stats"
	"github.com/zkgo/zkgo/watch"
)

// Config is what the client port takes of the server's options
// (server.Options documents each field under the same name); the server
// fills it in New, with its defaults applied.
type Config struct {
	ServerID int64
	// The listeners: Addr (plaintext, or TLS too with PortUnification)
	// and SecureAddr (TLS only). Listener, if set, is Addr's, opened by
	// the caller.
	Addr, SecureAddr string
	Listener         net.Listener
	TLS              *tls.Config
	PortUnification  bool
	X509SuperUser    string
	// Connections: limits, the handshake's deadline, parking.
	MaxClientCnxns, MaxConnections int
	HandshakeTimeout               time.Duration
	IdleAfter                      time.Duration
	ConnectionThrottleTokens       int
	ConnectionThrottleFillTime     time.Duration
	ConnectionThrottleFillCount    int
	// Sessions: the bounds of a negotiated timeout.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// Requests: frames, outstanding requests, queued output, watches.
	MaxBuffer                          int
	MaxOutstanding, GlobalOutstanding  int
	MaxQueuedBytes, MaxQueuedBytesHard int
	MaxWatches                         int
	ExistsWithoutRead                  bool
	LinearizableReads                  bool
	// HoldHandshakes is how long after losing its leader (or starting) the
	// member holds a handshake it cannot serve yet, waiting for a leader,
	// rather than refusing it at once (0: never holds).
	HoldHandshakes time.Duration
	// Authentication.
	SuperDigest        string
	DisableDigestAuth  bool
	SASL               SASLOptions
	EnforceAuthSchemes []string
	// Reconfig: allowed at all, and without authorization.
	ReconfigEnabled, SkipACL bool
	// The audit log.
	Audit      bool
	AuditFile  string
	AuditQueue int
	AuditUser  string
	Logger     *slog.Logger
}

// Parts are the server's parts the client port serves requests with;
// Stats and ReadOnly are the server's (its reports read them too).
type Parts struct {
	SM       *statemachine.Machine
	Watches  *watch.Manager
	Sessions *session.Tracker
	Prop     *replica.Proposer
	Raft     *replica.Replica
	Stats    *stats.Counters
	Metrics  *metrics.Metrics // nil without Prometheus metrics
	// FourLetterWord is the answer to a four-letter word (package
	// server: the whitelist and the reports); r has what the client sent
	// after it. No answer if !ok. The connection closes after it.
	FourLetterWord func(cmd string, r io.Reader) (text string, ok bool)
}

// Port is the client port: its listeners, every client connection (Conn)
// and what a connection does — the handshake, the request pipeline,
// reads, authentication, TLS, parking idle connections, the audit log of
// clients' changes. The server makes one (New), starts it (Listen, Serve)
// and stops it (BeginClose, CloseConns, Wait).
type Port struct {
	opts Config
	log  *slog.Logger

	sm       *statemachine.Machine
	watches  *watch.Manager
	sessions *session.Tracker
	prop     *replica.Proposer
	raft     *replica.Replica
	stats    *stats.Counters
	met      *metrics.Metrics
	word     func(cmd string, r io.Reader) (string, bool)
	reads    readBarrier // linearizable reads' rounds (linread.go)

	ln  net.Listener // plaintext (or unified) client port; nil without one
	sln net.Listener // TLS client port; nil without one

	connsMu sync.Mutex // guards conns, perIP
	conns   map[*Conn]struct{}
	perIP   map[string]int

	throttle *connThrottle // nil when connections are not throttled
	// inflight holds a token per request in flight in the server
	// (GlobalOutstanding); a connection takes one with each of its slots.
	inflight chan struct{}

	readOnly atomic.Bool // serving read-only sessions only (readonlymode)
	draining atomic.Bool // Shutdown began: no new connections or requests
	closing  atomic.Bool
	done     chan struct{} // closed by BeginClose
	wg       sync.WaitGroup
	// spawnMu orders starting connection goroutines (goConn, read-locked)
	// before BeginClose sets closing (write-locked), so that none is
	// added to wg once Wait may be waiting on it.
	spawnMu sync.RWMutex // guards no field: orders goConn before BeginClose
	// idle watches parked connections (connpark.go); nil when parking is
	// off (Config.IdleAfter < 0, or not Linux).
	idle *idlePoller

	// leaderMu guards leaderCh and lostAt (leaderwait.go): leaderCh is
	// closed and replaced when the member has a leader again; lostAt is
	// when it last lost one (or started).
	leaderMu sync.Mutex
	leaderCh chan struct{}
	lostAt   time.Time

	// audit is the audit log, nil when it is off (audit.go); auditUser
	// the user of the server's own events.
	audit     *audit.Writer
	auditUser string
}

// New makes the client port; it listens once Listen is called.
func New(cfg Config, p Parts) *Port {
	s := &Port{opts: cfg, log: cfg.Logger, sm: p.SM, watches: p.Watches, sessions: p.Sessions,
		prop: p.Prop, raft: p.Raft, stats: p.Stats, met: p.Metrics, word: p.FourLetterWord,
		conns: make(map[*Conn]struct{}), perIP: make(map[string]int), done: make(chan struct{}),
		leaderCh: make(chan struct{}), lostAt: time.Now()}
	s.inflight = make(chan struct{}, cfg.GlobalOutstanding)
	s.throttle = newConnThrottle(cfg.ConnectionThrottleTokens, cfg.ConnectionThrottleFillTime, cfg.ConnectionThrottleFillCount, time.Now())
	s.reads.s = s
	return s
}

// clustered reports whether the server is a member of an ensemble.
func (s *Port) clustered() bool { return s.raft.Clustered() }

// hasQuorum reports whether the member is part of a working quorum (it
// knows a leader); a member that is not refuses new sessions.
func (s *Port) hasQuorum() bool { return s.raft.HasQuorum() }
