// Package zktest runs an in-process zkgo server for tests: yours and ours.
//
//	srv := zktest.Start(t)
//	conn, err := zk.Connect(ctx, srv.Addr())
//
// The server listens on a free loopback port, uses a short tick time so
// sessions expire quickly, keeps its data in memory, and is closed by
// t.Cleanup.
//
// StartCluster runs an ensemble in-process, over an in-memory network
// whose links tests cut and heal. Its members' raft clocks are driven by
// the cluster, not the wall clock: in lockstep by default, so that a slow
// machine slows the whole cluster down rather than causing elections, or
// tick by tick under the test's control with WithManualClock (see
// Cluster).
package zktest

import (
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
)

// Option adjusts the server options before start.
type Option func(*server.Options)

// WithTickTime sets the tick time (default 100ms here).
func WithTickTime(d time.Duration) Option { return func(o *server.Options) { o.TickTime = d } }

// WithExtendedTypes enables TTL nodes.
func WithExtendedTypes() Option { return func(o *server.Options) { o.ExtendedTypes = true } }

// WithSuperDigest sets the super user digest ("super:<base64 sha1>").
func WithSuperDigest(d string) Option { return func(o *server.Options) { o.SuperDigest = d } }

// WithContainerCheckInterval sets how often containers and TTL nodes are reaped.
func WithContainerCheckInterval(d time.Duration) Option {
	return func(o *server.Options) { o.ContainerCheckInterval = d }
}

// WithOptions lets a test change any server option.
func WithOptions(fn func(*server.Options)) Option { return Option(fn) }

// Server is a running in-process server.
type Server struct {
	*server.Server
}

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return s.Server.Addr().String() }

// New starts a server without a testing.TB; the caller must Close it.
func New(opts ...Option) (*Server, error) {
	o := server.Options{
		Addr:                   "127.0.0.1:0",
		TickTime:               100 * time.Millisecond,
		FourLetterWords:        []string{"*"},
		ContainerCheckInterval: 200 * time.Millisecond,
		EnforceQuota:           true,
		// Connections park after 2 ms without a request (250 ms in
		// production), so that tests exercise parking and resuming.
		IdleAfter: 2 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(logOutput(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	for _, fn := range opts {
		fn(&o)
	}
	if o.RaftTicks == manualClock {
		o.RaftTicks = nil // a cluster option; a server alone leads at once
	}
	s, err := server.New(o)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return &Server{s}, nil
}

// Start starts a server for the test and closes it when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := New(opts...)
	if err != nil {
		t.Fatalf("zktest: start server: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func logOutput() io.Writer {
	if os.Getenv("ZKGO_TEST_LOG") != "" {
		return os.Stderr
	}
	return io.Discard
}

// FreePort returns a loopback TCP port that was free a moment ago, for
// configurations that must name a port before a process listens on it
// (zoo.cfg's server.N lines).
func FreePort(t testing.TB) int {
	t.Helper()
	// The kernel may hand a port it gave before, once it is closed again:
	// two calls in one test (a peer port and a client port) must not get
	// the same one.
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		freePortsMu.Lock()
		_, dup := freePorts[port]
		freePorts[port] = struct{}{}
		freePortsMu.Unlock()
		if !dup {
			return port
		}
	}
	t.Fatal("zktest: no fresh free port in 100 tries")
	return 0
}

var (
	freePortsMu sync.Mutex // guards freePorts
	// freePorts are the ports FreePort handed out in this process.
	freePorts = map[int]struct{}{}
)
