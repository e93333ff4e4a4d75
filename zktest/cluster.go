package zktest

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server"
)

// Cluster is an in-process ensemble: n members on loopback client ports,
// each with its own data directory (no fsync), talking raft over an
// in-memory network whose links the test can cut and heal. Members can be
// stopped and restarted with their data and their client address.
//
//	c := zktest.StartCluster(t, 3)
//	conn, err := zk.Connect(ctx, c.ConnectString())
//	c.Stop(c.Leader())
type Cluster struct {
	t     testing.TB
	net   *raftnode.MemNetwork
	peers []server.Peer
	dirs  []string
	addrs []string
	opts  []Option

	mu      sync.Mutex // guards members
	members []*Server  // nil while stopped
}

// StartCluster starts n members; the last `observers` of them (see
// WithObservers) are observers. Options apply to every member.
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t, net: raftnode.NewMemNetwork(), opts: opts, members: make([]*Server, n)}
	probe := server.Options{}
	for _, fn := range opts {
		fn(&probe)
	}
	for i := 0; i < n; i++ {
		observer := false
		for _, id := range probe.Peers { // WithObservers marks them
			if id.ID == int64(i+1) && id.Observer {
				observer = true
			}
		}
		c.peers = append(c.peers, server.Peer{ID: int64(i + 1), Addr: "mem", Observer: observer})
		c.dirs = append(c.dirs, t.TempDir())
		c.addrs = append(c.addrs, "127.0.0.1:0")
	}
	for i := 0; i < n; i++ {
		c.Restart(i)
	}
	t.Cleanup(func() {
		for i := range c.members {
			c.Stop(i)
		}
	})
	return c
}

// WithObservers makes the members with these ids (1-based) observers.
func WithObservers(ids ...int) Option {
	return func(o *server.Options) {
		for _, id := range ids {
			o.Peers = append(o.Peers, server.Peer{ID: int64(id), Observer: true})
		}
	}
}

// Restart starts member i (0-based) again with its data directory and
// client address; it is a no-op if the member runs.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.members[i] != nil {
		return
	}
	o := server.Options{
		Addr:                   c.addrs[i],
		TickTime:               50 * time.Millisecond,
		FourLetterWords:        []string{"*"},
		ContainerCheckInterval: 200 * time.Millisecond,
		EnforceQuota:           true,
		Logger:                 slog.New(slog.NewTextHandler(logOutput(), &slog.HandlerOptions{Level: slog.LevelWarn})).With("member", i+1),
	}
	for _, fn := range c.opts {
		fn(&o)
	}
	o.ServerID = int64(i + 1)
	o.Peers = c.peers
	o.DataDir = c.dirs[i]
	o.NoSync = true
	o.PeerTransport = c.net.Transport(uint64(i + 1))
	var s *server.Server
	var err error
	// The client port of a restarted member may still be held briefly.
	for try := 0; try < 100; try++ {
		if s, err = server.New(o); err != nil {
			break
		}
		if err = s.Start(); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatalf("zktest: start member %d: %v", i+1, err)
	}
	c.addrs[i] = s.Addr().String()
	c.members[i] = &Server{s}
}

// Stop stops member i (0-based), keeping its data.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	s := c.members[i]
	c.members[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// Member returns member i (0-based), or nil while it is stopped.
func (c *Cluster) Member(i int) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[i]
}

// Addr returns member i's client address.
func (c *Cluster) Addr(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addrs[i]
}

// ConnectString returns "host:port,host:port,..." of every member.
func (c *Cluster) ConnectString() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.addrs, ",")
}

// Leader waits (up to 30 s) until exactly one running member leads and
// returns its index.
func (c *Cluster) Leader() int {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		lead, n := -1, 0
		c.mu.Lock()
		for i, m := range c.members {
			if m != nil && m.Mode() == "leader" {
				lead, n = i, n+1
			}
		}
		c.mu.Unlock()
		if n == 1 {
			return lead
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("zktest: no single leader within 30s")
	return -1
}

// Isolate cuts every link of member i (0-based).
func (c *Cluster) Isolate(i int) { c.net.Isolate(uint64(i + 1)) }

// Cut cuts the link between members i and j (0-based), both ways.
func (c *Cluster) Cut(i, j int) { c.net.Cut(uint64(i+1), uint64(j+1)) }

// Heal restores every link.
func (c *Cluster) Heal() { c.net.Heal() }
