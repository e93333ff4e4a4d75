package zktest

import (
	"log/slog"
	"slices"
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
//
// # The cluster clock
//
// Raft's clock is the cluster's, not each member's wall clock (see
// server.Options.RaftTicks): elections and heartbeats count ticks, and the
// cluster hands them out. By default a lockstep clock gives every running
// member one tick per tick interval (a server's own: half the tick time,
// 25 ms by default) and waits for each member to take it, so a member
// that is slow (a starved CPU, a GC pause, the race detector) holds back
// everyone's ticks instead of falling behind while the others elect
// without it: followers count no ticks that a slow leader did not get to
// heartbeat in. (Messages still take wall time, but an election timeout
// is ten rounds or more, each as slow as the slowest member.) Stopped
// members get no ticks (a restarted member gets a new clock); isolated
// and cut-off members go on ticking, so they notice they are cut off. A
// member that takes no tick for 10 s (its raft loop failed) is logged and
// no longer waited for until it takes one again.
//
// With WithManualClock nothing ticks until the test says so, with Tick and
// TickUntil: no member campaigns, no leader steps down, no learner gives
// up on its leader in between.
//
//	c := zktest.StartCluster(t, 3, zktest.WithManualClock())
//	if !c.TickUntil(func() bool { return c.CurrentLeader() >= 0 }, 500) {
//		t.Fatal("no leader")
//	}
//
// Session timeouts and the servers' other timers still run on wall time.
type Cluster struct {
	t      testing.TB
	net    *raftnode.MemNetwork
	peers  []server.Peer
	dirs   []string
	addrs  []string
	opts   []Option
	manual bool          // WithManualClock
	period time.Duration // the tick interval

	mu      sync.Mutex     // guards members, clocks and addrs
	members []*Server      // nil while stopped
	clocks  []*memberClock // nil while stopped

	tickMu    sync.Mutex    // serializes tick rounds
	clockStop chan struct{} // closed at cleanup: no more ticks
	clockDone chan struct{} // closed when the lockstep clock has returned
}

// memberClock is a running member's end of the cluster clock. A member
// restarted gets a new one.
type memberClock struct {
	id    int           // 1-based, for messages
	ticks chan struct{} // unbuffered: a send is a tick taken
	quit  chan struct{} // closed when the member is stopped
	stuck bool          // did not take a tick for stuckAfter; guarded by tickMu
}

// stuckAfter is how long a tick waits for a member before the clock gives
// up on it: only a member whose raft loop is gone (it failed) takes that
// long, and the clock must not stop for the others. A variable for tests.
var stuckAfter = 10 * time.Second

// manualClock is the RaftTicks value by which WithManualClock marks the
// options; it is never ticked.
var manualClock = make(chan struct{})

// WithManualClock makes a cluster's raft clock manual: members tick only
// when the test calls Tick or TickUntil. Start (a single server) ignores it.
func WithManualClock() Option {
	return func(o *server.Options) { o.RaftTicks = manualClock }
}

// StartCluster starts n members; the last `observers` of them (see
// WithObservers) are observers. Options apply to every member.
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{
		t: t, net: raftnode.NewMemNetwork(), opts: opts,
		members: make([]*Server, n), clocks: make([]*memberClock, n),
		clockStop: make(chan struct{}), clockDone: make(chan struct{}),
	}
	probe := c.options()
	c.manual = probe.RaftTicks == manualClock
	// The members' raft tick interval: one clock round per tick.
	c.period = server.RaftTickInterval(probe.TickTime)
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
	t.Cleanup(func() {
		close(c.clockStop)
		if !c.manual {
			<-c.clockDone
		}
		for i := range c.members {
			c.Stop(i)
		}
	})
	if !c.manual {
		go c.runClock()
	}
	for i := 0; i < n; i++ {
		c.Restart(i)
	}
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
	o := c.options()
	o.Addr = c.addrs[i]
	o.Logger = o.Logger.With("member", i+1)
	o.ServerID = int64(i + 1)
	o.Peers = c.peers
	o.DataDir = c.dirs[i]
	o.NoSync = true
	o.PeerTransport = c.net.Transport(uint64(i + 1))
	clock := &memberClock{id: i + 1, ticks: make(chan struct{}), quit: make(chan struct{})}
	o.RaftTicks = clock.ticks
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
	c.clocks[i] = clock
}

// options returns the options every member starts from: zktest's
// defaults, then the cluster's options.
func (c *Cluster) options() server.Options {
	o := server.Options{
		TickTime:               50 * time.Millisecond,
		FourLetterWords:        []string{"*"},
		ContainerCheckInterval: 200 * time.Millisecond,
		EnforceQuota:           true,
		IdleAfter:              2 * time.Millisecond, // as zktest.New
		Logger:                 slog.New(slog.NewTextHandler(logOutput(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	for _, fn := range c.opts {
		fn(&o)
	}
	return o
}

// Stop stops member i (0-based), keeping its data. It gets no more ticks.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	s, clock := c.members[i], c.clocks[i]
	c.members[i], c.clocks[i] = nil, nil
	c.mu.Unlock()
	if clock != nil {
		close(clock.quit) // first: a tick must not wait for a closing member
	}
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
// returns its index. It does not tick a manual clock: use TickUntil with
// CurrentLeader there.
func (c *Cluster) Leader() int {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if lead := c.CurrentLeader(); lead >= 0 {
			return lead
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("zktest: no single leader within 30s")
	return -1
}

// CurrentLeader returns the index of the running member that leads if
// exactly one does, or -1.
func (c *Cluster) CurrentLeader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	lead, n := -1, 0
	for i, m := range c.members {
		if m != nil && m.Mode() == "leader" {
			lead, n = i, n+1
		}
	}
	if n != 1 {
		return -1
	}
	return lead
}

// Tick gives n ticks to every running member of a cluster with a manual
// clock (WithManualClock), one round at a time: a round ends when every
// member has taken its tick. Tick does not wait for what the ticks cause
// (votes, heartbeats and appends may still be on their way when it
// returns); TickUntil does.
func (c *Cluster) Tick(n int) {
	c.t.Helper()
	c.mustBeManual("Tick")
	for range n {
		if !c.tickRound() {
			return
		}
	}
}

// TickUntil ticks a cluster with a manual clock until cond holds, at most
// maxTicks rounds, and reports whether cond held. It checks cond before each
// round and gives the members one tick interval of wall time to act on a
// round before the next (so that an election's messages are exchanged
// before the next timeout rather than ticks racing ahead of them).
func (c *Cluster) TickUntil(cond func() bool, maxTicks int) bool {
	c.t.Helper()
	c.mustBeManual("TickUntil")
	pause := time.NewTimer(0)
	defer pause.Stop()
	<-pause.C
	for range maxTicks {
		if cond() {
			return true
		}
		if !c.tickRound() {
			return cond()
		}
		pause.Reset(c.period)
		select {
		case <-pause.C:
		case <-c.clockStop:
		}
	}
	return cond()
}

func (c *Cluster) mustBeManual(what string) {
	c.t.Helper()
	if !c.manual {
		c.t.Fatalf("zktest: %s needs a cluster started WithManualClock", what)
	}
}

// runClock is the lockstep clock: a round of ticks every tick interval,
// the next round starting no earlier than the end of the one before.
func (c *Cluster) runClock() {
	defer close(c.clockDone)
	t := time.NewTicker(c.period)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-c.clockStop:
			return
		}
		if !c.tickRound() {
			return
		}
	}
}

// tickRound gives one tick to every running member, in turn, waiting for
// each to take it. A member stopped meanwhile is skipped. It returns false
// once the cluster is being cleaned up.
func (c *Cluster) tickRound() bool {
	c.tickMu.Lock()
	defer c.tickMu.Unlock()
	c.mu.Lock()
	clocks := slices.Clone(c.clocks)
	c.mu.Unlock()
	for _, m := range clocks {
		if m == nil {
			continue
		}
		select {
		case m.ticks <- struct{}{}:
			m.stuck = false
			continue
		case <-m.quit:
			continue
		case <-c.clockStop:
			return false
		default:
		}
		if m.stuck {
			continue // no waiting for it until it takes a tick again
		}
		timeout := time.NewTimer(stuckAfter)
		select {
		case m.ticks <- struct{}{}:
		case <-m.quit:
		case <-c.clockStop:
			timeout.Stop()
			return false
		case <-timeout.C:
			m.stuck = true
			c.t.Logf("zktest: member %d has not taken a raft tick for %v; the clock goes on without it", m.id, stuckAfter)
		}
		timeout.Stop()
	}
	return true
}

// Isolate cuts every link of member i (0-based).
func (c *Cluster) Isolate(i int) { c.net.Isolate(uint64(i + 1)) }

// Cut cuts the link between members i and j (0-based), both ways.
func (c *Cluster) Cut(i, j int) { c.net.Cut(uint64(i+1), uint64(j+1)) }

// HoldProposals holds back the proposals member i (0-based) forwards to
// its leader, neither delivered nor lost, as a paused member would, until
// ReleaseProposals delivers them in order.
func (c *Cluster) HoldProposals(i int) { c.net.HoldProposals(uint64(i + 1)) }

// HeldProposals returns how many of member i's proposals are held back.
func (c *Cluster) HeldProposals(i int) int { return c.net.HeldProposals(uint64(i + 1)) }

// ReleaseProposals delivers member i's held proposals and stops holding
// them.
func (c *Cluster) ReleaseProposals(i int) { c.net.ReleaseProposals(uint64(i + 1)) }

// Heal restores every link.
func (c *Cluster) Heal() { c.net.Heal() }
