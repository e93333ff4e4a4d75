package raftnode

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/goleak"

	"github.com/zkgo/zkgo/storage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var logFlag = flag.Bool("raftnode.log", false, "log members' raft and transport messages to stderr")

func testLogger(id uint64) *slog.Logger {
	if !*logFlag {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

const (
	testTick    = 10 * time.Millisecond
	waitTimeout = 15 * time.Second
)

// testSM is a state machine that records every applied entry.
type testSM struct {
	notify func()
	// writeDelay makes writing a snapshot take at least this long;
	// snapCalls records when Snapshot was called.
	writeDelay time.Duration

	mu        sync.Mutex // guards the fields below
	log       []appliedEntry
	keys      map[string]uint64
	restores  int
	snapCalls []time.Time
	snapAt    []int // len(log) at each Snapshot call
}

type appliedEntry struct {
	Index uint64
	Data  string
}

func newTestSM(notify func()) *testSM {
	if notify == nil {
		notify = func() {}
	}
	return &testSM{notify: notify, keys: map[string]uint64{}}
}

func (s *testSM) Apply(ents []raftpb.Entry) {
	s.mu.Lock()
	for _, e := range ents {
		if len(s.log) > 0 && e.Index <= s.log[len(s.log)-1].Index {
			panic(fmt.Sprintf("entry %d applied after %d", e.Index, s.log[len(s.log)-1].Index))
		}
		s.log = append(s.log, appliedEntry{e.Index, string(e.Data)})
		s.keys[string(e.Data)] = e.Index
	}
	s.mu.Unlock()
	s.notify()
}

func (s *testSM) Snapshot() (func(io.Writer) error, error) {
	s.mu.Lock()
	data, err := json.Marshal(s.log)
	s.snapCalls = append(s.snapCalls, time.Now())
	s.snapAt = append(s.snapAt, len(s.log))
	s.mu.Unlock()
	return func(w io.Writer) error {
		if w == nil {
			return nil
		}
		time.Sleep(s.writeDelay)
		_, err := w.Write(data)
		return err
	}, err
}

func (s *testSM) Restore(r io.Reader, index uint64) error {
	var l []appliedEntry
	var data []byte
	if r != nil {
		var err error
		if data, err = io.ReadAll(r); err != nil {
			return err
		}
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &l); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.log = l
	s.keys = map[string]uint64{}
	for _, e := range l {
		s.keys[e.Data] = e.Index
	}
	s.restores++
	s.mu.Unlock()
	s.notify()
	return nil
}

func (s *testSM) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.keys[key]
	return ok
}

func (s *testSM) entries() []appliedEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func (s *testSM) restoreCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restores
}

// testCluster runs members on a MemNetwork (or TCP) with their own data
// directories. Waits are event-driven: every apply and every leader change
// wakes waitFor, which re-checks its condition.
type testCluster struct {
	t         *testing.T
	net       *MemNetwork
	peers     []Peer
	noSync    bool
	mod       func(*Config)             // adjusts each member's Config
	stOpts    func(*storage.Options)    // adjusts each member's storage options
	snapDelay time.Duration             // testSM.writeDelay of each member
	trans     func(id uint64) Transport // nil: the MemNetwork
	watch     sync.WaitGroup

	nodes  map[uint64]*Node
	sms    map[uint64]*testSM
	stores map[uint64]*storage.Storage
	dirs   map[uint64]string
	base   string // the members' directories are made in it

	mu          sync.Mutex // guards changed, leadersSeen and leaderChanges
	changed     chan struct{}
	leadersSeen map[uint64]bool
	confChanges map[uint64][]raftpb.ConfState
	// leaderChanges are the LeaderChanges each member reported since it
	// last started.
	leaderChanges map[uint64][]LeaderChange
}

func newCluster(t *testing.T, peers []Peer) *testCluster {
	c := &testCluster{
		t:           t,
		net:         NewMemNetwork(),
		peers:       peers,
		noSync:      true,
		nodes:       map[uint64]*Node{},
		sms:         map[uint64]*testSM{},
		stores:      map[uint64]*storage.Storage{},
		dirs:        map[uint64]string{},
		changed:     make(chan struct{}),
		leadersSeen: map[uint64]bool{},
		confChanges: map[uint64][]raftpb.ConfState{},

		leaderChanges: map[uint64][]LeaderChange{},
	}
	// The directory first: cleanups run last-registered first, so the
	// members stop (and their background snapshots finish) before their
	// directories are removed.
	c.base = t.TempDir()
	t.Cleanup(c.shutdown)
	return c
}

// newTCPCluster is newCluster of n members over TCP transports on
// loopback, with the listeners by member id.
func newTCPCluster(t *testing.T, n uint64) (*testCluster, map[uint64]net.Listener) {
	lns := map[uint64]net.Listener{}
	var peers []Peer
	for id := uint64(1); id <= n; id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[id] = ln
		peers = append(peers, Peer{ID: id, Addr: ln.Addr().String()})
	}
	c := newCluster(t, peers)
	c.trans = func(id uint64) Transport {
		tr, err := NewTCPTransport(TCPConfig{ID: id, ClusterID: 0xc1, Listener: lns[id]})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	return c, lns
}

func voters(ids ...uint64) []Peer {
	var ps []Peer
	for _, id := range ids {
		ps = append(ps, Peer{ID: id})
	}
	return ps
}

func (c *testCluster) notify() {
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// waitFor blocks until cond holds, re-checking it after every event.
func (c *testCluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			c.t.Fatalf("timed out waiting for %s; status: %s", what, c.describe())
		}
	}
}

func (c *testCluster) describe() string {
	s := ""
	for _, id := range c.ids() {
		st := c.nodes[id].Status()
		s += fmt.Sprintf("[%d %v leader=%d term=%d commit=%d applied=%d] ", id, st.Role, st.Leader, st.Term, st.Commit, st.Applied)
	}
	return s
}

func (c *testCluster) ids() []uint64 {
	var ids []uint64
	for id := range c.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (c *testCluster) startAll() {
	for _, p := range c.peers {
		c.start(p.ID, false)
	}
}

// start starts member id with a fresh state machine on its directory
// (created on first start).
func (c *testCluster) start(id uint64, join bool) {
	c.t.Helper()
	if c.dirs[id] == "" {
		dir, err := os.MkdirTemp(c.base, fmt.Sprintf("member%d-", id))
		if err != nil {
			c.t.Fatal(err)
		}
		c.dirs[id] = dir
	}
	opts := storage.Options{NoSync: c.noSync, Metadata: Metadata(id, 0xc1), Logger: testLogger(id)}
	if c.stOpts != nil {
		c.stOpts(&opts)
	}
	st, err := storage.Open(c.dirs[id], opts)
	if err != nil {
		c.t.Fatal(err)
	}
	sm := newTestSM(c.notify)
	sm.writeDelay = c.snapDelay
	var tr Transport = c.net.Transport(id)
	if c.trans != nil {
		tr = c.trans(id)
	}
	cfg := Config{
		ID:           id,
		ClusterID:    0xc1,
		Peers:        c.peers,
		Join:         join,
		Storage:      st,
		StateMachine: sm,
		Transport:    tr,
		TickInterval: testTick,
		Logger:       testLogger(id),
		OnConfChange: func(index uint64, cc raftpb.ConfChangeV2, cs raftpb.ConfState) {
			c.mu.Lock()
			c.confChanges[id] = append(c.confChanges[id], cs)
			c.mu.Unlock()
			c.notify()
		},
	}
	if c.mod != nil {
		c.mod(&cfg)
	}
	n, err := Start(cfg)
	if err != nil {
		st.Close()
		c.t.Fatal(err)
	}
	c.nodes[id], c.sms[id], c.stores[id] = n, sm, st
	c.mu.Lock()
	c.leaderChanges[id] = nil
	c.mu.Unlock()
	c.watch.Add(1)
	go func() {
		defer c.watch.Done()
		for {
			select {
			case lc := <-n.LeaderChanges():
				c.mu.Lock()
				if lc.Leader != 0 {
					c.leadersSeen[lc.Leader] = true
				}
				c.leaderChanges[id] = append(c.leaderChanges[id], lc)
				c.mu.Unlock()
				c.notify()
			case <-n.Done():
				return
			}
		}
	}()
}

func (c *testCluster) stop(id uint64) {
	c.t.Helper()
	c.nodes[id].Stop()
	if err := c.nodes[id].Err(); err != nil {
		c.t.Errorf("member %d failed: %v", id, err)
	}
	if err := c.stores[id].Close(); err != nil {
		c.t.Errorf("closing storage of %d: %v", id, err)
	}
	delete(c.nodes, id)
	delete(c.stores, id)
}

// shutdown stops every member and checks the invariant of state machine
// replication: members that applied an index applied the same entry.
func (c *testCluster) shutdown() {
	for _, id := range c.ids() {
		c.stop(id)
	}
	c.watch.Wait()
	byIndex := map[uint64]string{}
	for id, sm := range c.sms {
		for _, e := range sm.entries() {
			if d, ok := byIndex[e.Index]; ok && d != e.Data {
				c.t.Errorf("member %d applied %q at %d, another member %q", id, e.Data, e.Index, d)
			}
			byIndex[e.Index] = e.Data
		}
	}
}

// waitLeader waits until the running members agree on one leader among
// them, and returns it.
func (c *testCluster) waitLeader() uint64 {
	c.t.Helper()
	var lead uint64
	c.waitFor("a leader", func() bool {
		lead = 0
		for _, id := range c.ids() {
			n := c.nodes[id]
			if n.Role() == RoleLeader {
				if lead != 0 {
					return false
				}
				lead = id
			}
		}
		if lead == 0 {
			return false
		}
		for _, id := range c.ids() {
			if c.nodes[id].Leader() != lead {
				return false
			}
		}
		return true
	})
	return lead
}

// propose proposes key via member id until it is applied on every member
// in on (all running members if on is empty), re-proposing if a leader
// change loses it.
func (c *testCluster) propose(via uint64, key string, on ...uint64) {
	c.t.Helper()
	if len(on) == 0 {
		on = c.ids()
	}
	applied := func() bool {
		for _, id := range on {
			if !c.sms[id].has(key) {
				return false
			}
		}
		return true
	}
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			c.t.Fatalf("proposal %q never applied; status: %s", key, c.describe())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.nodes[via].Propose(ctx, []byte(key))
		cancel()
		if err != nil && !errors.Is(err, ErrProposalDropped) && !errors.Is(err, context.DeadlineExceeded) {
			c.t.Fatalf("Propose(%q) via %d: %v", key, via, err)
		}
		if err == nil && c.waitForQuiet(time.Second, applied) {
			return
		}
		if err != nil {
			// No leader yet, or it dropped the proposal: wait for an event.
			c.waitForQuiet(50*time.Millisecond, applied)
		}
		if applied() {
			return
		}
	}
}

// waitForQuiet is waitFor with a timeout that reports instead of failing.
func (c *testCluster) waitForQuiet(d time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return cond()
		}
	}
}

func (c *testCluster) waitKeys(keys []string, on ...uint64) {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("%d keys on %v", len(keys), on), func() bool {
		for _, id := range on {
			for _, k := range keys {
				if !c.sms[id].has(k) {
					return false
				}
			}
		}
		return true
	})
}

// tickAll ticks the members' manual clocks (Config.Ticks) round-robin,
// one round per tickPace, until the returned function is called, which
// returns once the ticking has stopped. The pace keeps an election
// timeout (10 ticks) longer than a heartbeat's round trip on a loaded
// machine: ticked as fast as the members take them, a leader could miss
// its quorum check in microseconds and step down with its last tick,
// after the clocks stopped and nobody could elect another.
func tickAll(ticks map[uint64]chan struct{}, ids ...uint64) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		pace := time.NewTicker(tickPace)
		defer pace.Stop()
		for {
			select {
			case <-pace.C:
			case <-quit:
				return
			}
			for _, id := range ids {
				select {
				case ticks[id] <- struct{}{}:
				case <-quit:
					return
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// tickPace is tickAll's time between rounds of ticks.
const tickPace = time.Millisecond
