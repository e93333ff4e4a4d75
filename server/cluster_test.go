package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

type cluster struct {
	t       testing.TB
	opts    []func(*server.Options)
	peers   []server.Peer
	dirs    []string
	members []*server.Server
}

// startCluster starts n in-process members on loopback (the last
// `observers` of them observers), each with its own data directory.
func startCluster(t testing.TB, n, observers int, opts ...func(*server.Options)) *cluster {
	t.Helper()
	c := &cluster{t: t, opts: opts}
	lns := make([]net.Listener, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		c.peers = append(c.peers, server.Peer{ID: int64(i + 1), Addr: ln.Addr().String(), Observer: i >= n-observers})
		c.dirs = append(c.dirs, t.TempDir())
	}
	c.members = make([]*server.Server, n)
	for i := range lns {
		c.start(i, lns[i])
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			if m != nil {
				m.Close()
			}
		}
	})
	return c
}

func (c *cluster) start(i int, ln net.Listener) {
	c.t.Helper()
	o := server.Options{
		Addr: "127.0.0.1:0", TickTime: 50 * time.Millisecond, DataDir: c.dirs[i], NoSync: true,
		ServerID: int64(i + 1), Peers: c.peers, PeerListener: ln,
		FourLetterWords: []string{"*"},
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, fn := range c.opts {
		fn(&o)
	}
	s, err := server.New(o)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.members[i] = s
}

// restart starts member i again on its peer address (after Close or a
// wipe), with the cluster's options.
func (c *cluster) restart(i int) {
	c.t.Helper()
	ln, err := net.Listen("tcp", c.peers[i].Addr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.start(i, ln)
}

// createOnLeader waits for a leader, creates path with data through it
// and returns the leader's index.
func (c *cluster) createOnLeader(path, data string) int {
	c.t.Helper()
	lead := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := zk.Connect(ctx, c.addr(lead))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Create(ctx, path, []byte(data), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		c.t.Fatal(err)
	}
	return lead
}

// leader waits until exactly one live member is leader and returns it.
func (c *cluster) leader() int {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		lead := -1
		n := 0
		for i, m := range c.members {
			if m != nil && m.Mode() == "leader" {
				lead, n = i, n+1
			}
		}
		if n == 1 {
			return lead
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no single leader within 30s")
	return -1
}

func (c *cluster) addr(i int) string { return c.members[i].Addr().String() }

// waitNode waits until member i has path (with data want).
func (c *cluster) waitNode(i int, path, want string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var got *string
		c.members[i].Tree(func(t *tree.Tree) {
			if n := t.Get(path); n != nil {
				d := string(n.Data())
				got = &d
			}
		})
		if got != nil && *got == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("member %d never had %s = %q", i+1, path, want)
}

func (c *cluster) waitGone(i int, path string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		gone := false
		c.members[i].Tree(func(t *tree.Tree) { gone = t.Get(path) == nil })
		if gone {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("member %d still has %s", i+1, path)
}

// TestClusterReplicates: three voters and an observer. A write through any
// member reaches all; srvr reports the roles; the leader's failure elects
// another and writes go on; a session moves between members with its
// ephemeral; a session whose client is gone expires on the new leader and
// its ephemeral goes everywhere.
func TestClusterReplicates(t *testing.T) {
	c := startCluster(t, 4, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lead := c.leader()
	if m := c.members[3].Mode(); m != "observer" {
		t.Fatalf("member 4 mode %q", m)
	}
	out, err := zk.FourLetterWord(ctx, c.addr(lead), "srvr")
	if err != nil || !strings.Contains(out, "Mode: leader") {
		t.Fatalf("srvr of the leader: %q %v", out, err)
	}
	follower := (lead + 1) % 3
	for i := 0; i < 4; i++ {
		cl, err := zk.Connect(ctx, c.addr(i), zk.WithSessionTimeout(2*time.Second))
		if err != nil {
			t.Fatalf("member %d: %v", i+1, err)
		}
		p := fmt.Sprintf("/via%d", i+1)
		if _, err := cl.Create(ctx, p, []byte("x"), acl.OpenACLUnsafe, proto.ModePersistent); err != nil {
			t.Fatalf("create through member %d: %v", i+1, err)
		}
		cl.Close()
		for j := 0; j < 4; j++ {
			c.waitNode(j, p, "x")
		}
	}

	// sync on a follower and on the observer goes through the log and
	// answers with the path; a read after it sees every earlier write.
	for _, i := range []int{follower, 3} {
		cl, err := zk.Connect(ctx, c.addr(i), zk.WithSessionTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zk.Connect(ctx, c.addr(lead), zk.WithSessionTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		p := fmt.Sprintf("/synced%d", i)
		if _, err := w.Create(ctx, p, []byte("s"), acl.OpenACLUnsafe, proto.ModePersistent); err != nil {
			t.Fatal(err)
		}
		if got, err := cl.Sync(ctx, p); err != nil || got != p {
			t.Fatalf("sync on member %d: %q %v", i+1, got, err)
		}
		if data, _, err := cl.Get(ctx, p); err != nil || string(data) != "s" {
			t.Fatalf("read after sync on member %d: %q %v", i+1, data, err)
		}
		cl.Close()
		w.Close()
	}

	// A session on a follower with an ephemeral, and one whose client
	// will vanish.
	// Its dialer can be cut, so that the test can take the session over
	// (below) without this client taking it back.
	var dialMu sync.Mutex
	var keepConns []net.Conn
	keepCut := false
	keepDial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialMu.Lock()
		defer dialMu.Unlock()
		if keepCut {
			return nil, errors.New("cut by the test")
		}
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			keepConns = append(keepConns, nc)
		}
		return nc, err
	}
	keep, err := zk.Connect(ctx, c.addr(follower)+","+c.addr(3), zk.WithSessionTimeout(2*time.Second), zk.WithHostShuffle(false), zk.WithDialer(keepDial))
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	if _, err := keep.Create(ctx, "/eph-keep", []byte("k"), acl.OpenACLUnsafe, proto.ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	gone, err := zk.Connect(ctx, c.addr(follower), zk.WithSessionTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Create(ctx, "/eph-gone", []byte("g"), acl.OpenACLUnsafe, proto.ModeEphemeral); err != nil {
		t.Fatal(err)
	}

	// Stop the leader: the others elect a new one, the kept session
	// survives (its follower keeps reporting it), writes go on.
	c.members[lead].Close()
	c.members[lead] = nil
	newLead := c.leader()
	if newLead == lead {
		t.Fatal("stopped member still leads")
	}
	// The follower may learn of the new leader after the test does, and
	// then drops the connection of a write in flight (outcome unknown,
	// as on ZooKeeper): the client retries, as applications do.
	for {
		_, err := keep.Create(ctx, "/after-failover", []byte("y"), acl.OpenACLUnsafe, proto.ModePersistent)
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			break
		}
		if !zk.IsRetryable(err) || ctx.Err() != nil {
			t.Fatal(err)
		}
	}
	for j := 0; j < 4; j++ {
		if c.members[j] != nil {
			c.waitNode(j, "/after-failover", "y")
		}
	}
	// The vanished client's session expires on the new leader.
	gone.Close() // closes the session: its ephemeral must go everywhere
	for j := 0; j < 4; j++ {
		if c.members[j] != nil {
			c.waitGone(j, "/eph-gone")
		}
	}
	// The kept session resumes on the observer (same id and password)
	// and still owns its ephemeral there. The Go client is cut off first:
	// it would resume the session elsewhere, and the session moves to
	// the newest connection.
	sid, pw := keep.SessionID(), keep.SessionPassword()
	dialMu.Lock()
	keepCut = true
	for _, nc := range keepConns {
		nc.Close()
	}
	dialMu.Unlock()
	rc, err := rawzk.Dial(c.addr(3), rawzk.Options{SessionID: sid, Passwd: pw, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if rc.Session.SessionID != sid || rc.Session.TimeOut <= 0 {
		t.Fatalf("resume on the observer: %+v", rc.Session)
	}
	var ex proto.ExistsResponse
	h, err := rc.Call(proto.OpExists, &proto.ExistsRequest{Path: "/eph-keep"}, &ex)
	if err != nil || h.Err != proto.ErrOk || ex.Stat.EphemeralOwner != sid {
		t.Fatalf("exists on the observer: %+v %+v %v", h, ex.Stat, err)
	}
}

// TestClusterExpiresVanishedSession: a client on a follower that vanishes
// without closing its session is expired by the leader after its timeout,
// and its ephemeral disappears from every member; a client that stays
// (pinging a follower) is kept alive by the follower's touch reports.
func TestClusterExpiresVanishedSession(t *testing.T) {
	c := startCluster(t, 3, 0)
	lead := c.leader()
	follower := (lead + 1) % 3
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stay, err := zk.Connect(ctx, c.addr(follower), zk.WithSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer stay.Close()
	if _, err := stay.Create(ctx, "/stay", nil, acl.OpenACLUnsafe, proto.ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	rc, err := rawzk.Dial(c.addr(follower), rawzk.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h, err := rc.Call(proto.OpCreate, &proto.CreateRequest{Path: "/vanish", ACL: acl.OpenACLUnsafe, Flags: proto.ModeEphemeral}, &proto.CreateResponse{})
	if err != nil || h.Err != proto.ErrOk {
		t.Fatalf("create: %+v %v", h, err)
	}
	rc.Close() // no closeSession
	for j := 0; j < 3; j++ {
		c.waitGone(j, "/vanish")
	}
	// Several session timeouts later the pinging session is still there.
	if st, err := stay.Exists(ctx, "/stay"); err != nil || st == nil {
		t.Fatalf("kept session's ephemeral: %+v %v", st, err)
	}
	c.waitNode(lead, "/stay", "")
}

// TestClusterReadOnlyMode: with readonlymode.enabled, a member whose
// quorum is gone serves read-only clients (local sessions, reads, writes
// refused with NotReadOnly, isro "ro") and refuses read-write ones; when
// the quorum is back it serves read-write again and the client moves on.
func TestClusterReadOnlyMode(t *testing.T) {
	c := startCluster(t, 3, 0, func(o *server.Options) { o.ReadOnlyMode = true })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.leader()
	w, err := zk.Connect(ctx, c.addr(0), zk.WithSessionTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Create(ctx, "/ro-data", []byte("v"), acl.OpenACLUnsafe, proto.ModePersistent); err != nil {
		t.Fatal(err)
	}
	w.Close()
	c.waitNode(2, "/ro-data", "v")
	// Stop two members: the third loses its quorum.
	for _, i := range []int{0, 1} {
		c.members[i].Close()
		c.members[i] = nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for !c.members[2].ReadOnly() {
		if time.Now().After(deadline) {
			t.Fatal("the isolated member never became read-only")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ans, err := zk.FourLetterWord(ctx, c.addr(2), "isro"); err != nil || ans != "ro" {
		t.Fatalf("isro = %q %v", ans, err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = zk.Connect(rctx, c.addr(2), zk.WithConnectBackoff(10*time.Millisecond, 50*time.Millisecond))
	rcancel()
	if err == nil {
		t.Fatal("a read-write client got a session from a read-only member")
	}
	ro, err := zk.Connect(ctx, c.addr(2), zk.WithReadOnly(true), zk.WithSessionTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ro.State() != zk.StateReadOnly {
		t.Fatalf("state %v", ro.State())
	}
	if data, _, err := ro.Get(ctx, "/ro-data"); err != nil || string(data) != "v" {
		t.Fatalf("read on the read-only member: %q %v", data, err)
	}
	if _, err := ro.Create(ctx, "/nope", nil, acl.OpenACLUnsafe, proto.ModePersistent); !errors.Is(err, zk.ErrNotReadOnly) {
		t.Fatalf("write on the read-only member: %v", err)
	}
	// The quorum comes back: the member leaves read-only mode and the
	// client, dropped, reconnects read-write.
	states, stop := ro.NotifyState()
	defer stop()
	for _, i := range []int{0, 1} {
		ln, err := net.Listen("tcp", c.peers[i].Addr)
		if err != nil {
			t.Fatal(err)
		}
		c.start(i, ln)
	}
	for {
		select {
		case s := <-states:
			if s == zk.StateReconnected || s == zk.StateConnected {
				if _, err := ro.Create(ctx, "/rw-again", nil, acl.OpenACLUnsafe, proto.ModePersistent); err != nil {
					t.Fatal(err)
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("the client never got back to read-write")
		}
	}
}

// TestClusterFailoverUnderLoad: writers on the followers keep creating
// nodes while the leader is stopped; every acknowledged create is on every
// surviving member, and their trees are identical once they converge.
func TestClusterFailoverUnderLoad(t *testing.T) {
	c := startCluster(t, 3, 0)
	lead := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w, i := range []int{(lead + 1) % 3, (lead + 2) % 3} {
		cl, err := zk.Connect(ctx, c.addr(i), zk.WithSessionTimeout(4*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("/load-%d-%d", w, n)
				if _, err := cl.Create(ctx, p, []byte("x"), acl.OpenACLUnsafe, proto.ModePersistent); err == nil {
					mu.Lock()
					acked = append(acked, p)
					mu.Unlock()
				}
			}
		}()
	}
	waitAcked := func(n int) {
		for {
			mu.Lock()
			got := len(acked)
			mu.Unlock()
			if got >= n {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("only %d writes acknowledged", got)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitAcked(100)
	c.members[lead].Close()
	c.members[lead] = nil
	c.leader()
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	waitAcked(before + 100) // writes resumed on the new leader
	close(stop)
	wg.Wait()
	// Converge: a sync barrier on each survivor, then compare.
	var trees [][]string
	for i, m := range c.members {
		if m == nil {
			continue
		}
		cl, err := zk.Connect(ctx, c.addr(i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Sync(ctx, "/"); err != nil {
			t.Fatal(err)
		}
		cl.Close()
		for _, p := range acked {
			c.waitNode(i, p, "x")
		}
		var d []string
		m.Tree(func(tr *tree.Tree) { d = dumpTree(tr) })
		trees = append(trees, d)
	}
	if fmt.Sprint(trees[0]) != fmt.Sprint(trees[1]) {
		t.Fatal("surviving members' trees differ")
	}
	t.Logf("%d acknowledged creates, %d before the failover", len(acked), before)
}

// TestClusterLostQuorum: when two of three voters stop, the remaining
// voter and the observer (a raft learner, which never campaigns and so
// must notice the silence itself) stop serving: four-letter words say so
// as ZooKeeper's do, and new sessions are refused. When the voters return,
// both serve again.
func TestClusterLostQuorum(t *testing.T) {
	c := startCluster(t, 4, 1)
	c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopped, left := []int{0, 1}, 2 // voters that stop, the voter that stays
	for _, i := range stopped {
		c.members[i].Close()
		c.members[i] = nil
	}
	notServing := "This ZooKeeper instance is not currently serving requests\n"
	for _, i := range []int{left, 3} {
		deadline := time.Now().Add(30 * time.Second)
		for c.members[i].FourLetterWord("srvr") != notServing {
			if time.Now().After(deadline) {
				t.Fatalf("member %d still serving: %q", i+1, c.members[i].FourLetterWord("srvr"))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := c.members[i].FourLetterWord("mntr"); got != notServing {
			t.Fatalf("mntr of member %d: %q", i+1, got)
		}
		if got := c.members[i].FourLetterWord("ruok"); got != "imok" {
			t.Fatalf("ruok of member %d: %q", i+1, got)
		}
		rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := zk.Connect(rctx, c.addr(i), zk.WithConnectBackoff(10*time.Millisecond, 50*time.Millisecond))
		rcancel()
		if err == nil {
			t.Fatalf("member %d without a quorum gave a session", i+1)
		}
	}
	for _, i := range stopped {
		ln, err := net.Listen("tcp", c.peers[i].Addr)
		if err != nil {
			t.Fatal(err)
		}
		c.start(i, ln)
	}
	for _, i := range []int{left, 3} {
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(c.members[i].FourLetterWord("srvr"), "Mode: ") {
			if time.Now().After(deadline) {
				t.Fatalf("member %d does not serve again", i+1)
			}
			time.Sleep(10 * time.Millisecond)
		}
		// Well within the client's 30 s handshake timeout: a session
		// proposal forwarded over a peer connection that broke (the
		// leader restarted) must not be waited for until then.
		cctx, ccancel := context.WithTimeout(ctx, 15*time.Second)
		s, err := zk.Connect(cctx, c.addr(i))
		ccancel()
		if err != nil {
			t.Fatalf("member %d after the quorum returned: %v", i+1, err)
		}
		s.Close()
	}
}

// TestClusterExpiresVanishedSessionAcrossFailover: a client on a follower
// vanishes without closing its session and the leader dies before the
// session times out. The new leader, which never saw the old leader's
// deadlines, gives every session a fresh timeout and then expires the
// vanished one: its ephemeral disappears from both survivors.
func TestClusterExpiresVanishedSessionAcrossFailover(t *testing.T) {
	c := startCluster(t, 3, 0)
	lead := c.leader()
	follower := (lead + 1) % 3
	rc, err := rawzk.Dial(c.addr(follower), rawzk.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h, err := rc.Call(proto.OpCreate, &proto.CreateRequest{Path: "/vanish-failover", ACL: acl.OpenACLUnsafe, Flags: proto.ModeEphemeral}, &proto.CreateResponse{})
	if err != nil || h.Err != proto.ErrOk {
		t.Fatalf("create: %+v %v", h, err)
	}
	for j := 0; j < 3; j++ {
		c.waitNode(j, "/vanish-failover", "")
	}
	rc.Close() // no closeSession
	c.members[lead].Close()
	c.members[lead] = nil
	newLead := c.leader()
	if newLead == lead {
		t.Fatal("the stopped member still leads")
	}
	for j := 0; j < 3; j++ {
		if j != lead {
			c.waitGone(j, "/vanish-failover")
		}
	}
}

// TestClusterFollowerCutOffDropsClients: a follower cut off from the
// others stops trusting its leader after one election timeout without a
// message from it, as a ZooKeeper follower drops its leader: it closes its
// client connections (their sessions live on elsewhere) and refuses
// handshakes until it has a leader again.
func TestClusterFollowerCutOffDropsClients(t *testing.T) {
	c := zktest.StartCluster(t, 3, zktest.WithManualClock())
	if !c.TickUntil(func() bool { return c.CurrentLeader() >= 0 }, 200) {
		t.Fatal("no leader")
	}
	f := (c.CurrentLeader() + 1) % 3
	conn, err := rawzk.Dial(c.Addr(f), rawzk.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c.Isolate(f)
	serving := func() bool { return strings.Contains(c.Member(f).FourLetterWord("srvr"), "Mode: ") }
	// raftnode.DefaultElectionTick of silence, and a tick or two for the
	// report to reach the server.
	if !c.TickUntil(func() bool { return !serving() }, raftnode.DefaultElectionTick+3) {
		t.Fatalf("the cut-off follower still serves after %d ticks", raftnode.DefaultElectionTick+3)
	}
	waitClosed(t, conn)
	if c2, err := rawzk.Dial(c.Addr(f), rawzk.Options{Timeout: time.Minute}); err == nil {
		c2.Close()
		t.Fatal("a follower without a leader gave a session")
	}
	c.Heal()
	if !c.TickUntil(serving, 200) {
		t.Fatal("the follower does not serve again after the partition healed")
	}
	c3, err := rawzk.Dial(c.Addr(f), rawzk.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatalf("after the partition healed: %v", err)
	}
	c3.Close()
}

// TestClusterHandshakeHeldThroughElection: a member that lost its leader
// a moment ago holds a new client's handshake until it has a leader again
// and then gives it a session, where it used to refuse it at once (every
// client of an ensemble whose leader died then backed off and came back
// a second or more after the new leader was there). Past the window it
// refuses, as a cut-off member must.
func TestClusterHandshakeHeldThroughElection(t *testing.T) {
	c := zktest.StartCluster(t, 3, zktest.WithManualClock(), zktest.WithTickTime(200*time.Millisecond))
	if !c.TickUntil(func() bool { return c.CurrentLeader() >= 0 }, 200) {
		t.Fatal("no leader")
	}
	f := (c.CurrentLeader() + 1) % 3
	c.Isolate(f)
	serving := func() bool { return strings.Contains(c.Member(f).FourLetterWord("srvr"), "Mode: ") }
	if !c.TickUntil(func() bool { return !serving() }, raftnode.DefaultElectionTick+3) {
		t.Fatal("the cut-off follower still serves")
	}
	type dialed struct {
		conn *rawzk.Conn
		err  error
	}
	got := make(chan dialed, 1)
	go func() {
		conn, err := rawzk.Dial(c.Addr(f), rawzk.Options{Timeout: time.Minute})
		got <- dialed{conn, err}
	}()
	// The handshake waits on the member; nothing answers it yet.
	select {
	case d := <-got:
		if d.err == nil {
			d.conn.Close()
		}
		t.Fatalf("a member without a leader answered a handshake at once: %v", d.err)
	case <-time.After(100 * time.Millisecond):
	}
	c.Heal()
	if !c.TickUntil(serving, 200) {
		t.Fatal("the follower does not serve again after the partition healed")
	}
	d := <-got
	if d.err != nil {
		t.Fatalf("the held handshake: %v", d.err)
	}
	d.conn.Close()
	// Past the window, a member without a leader refuses at once.
	c.Isolate(f)
	if !c.TickUntil(func() bool { return !serving() }, raftnode.DefaultElectionTick+3) {
		t.Fatal("the cut-off follower still serves")
	}
	time.Sleep(2*time.Duration(raftnode.DefaultElectionTick)*server.RaftTickInterval(200*time.Millisecond) + 100*time.Millisecond)
	start := time.Now()
	if conn, err := rawzk.Dial(c.Addr(f), rawzk.Options{Timeout: time.Minute}); err == nil {
		conn.Close()
		t.Fatal("a member cut off for longer than the window gave a session")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("past the window the refusal took %v", took)
	}
}

// TestClusterResumeOnLaggingMember: a client resumes its session on a
// member that has not applied the session's creation yet (it missed the
// leader's appends). The member catches up first, as a ZooKeeper
// follower asks its leader to revalidate a session it does not know,
// and resumes the session, where it used to tell the client its session
// had expired.
func TestClusterResumeOnLaggingMember(t *testing.T) {
	c := zktest.StartCluster(t, 3, zktest.WithManualClock())
	if !c.TickUntil(func() bool { return c.CurrentLeader() >= 0 }, 200) {
		t.Fatal("no leader")
	}
	lead := c.CurrentLeader()
	lag, other := (lead+1)%3, (lead+2)%3
	// The lagging member misses the leader's appends; without ticks it
	// does not notice the silence, and keeps its leader.
	c.Cut(lead, lag)
	a, err := rawzk.Dial(c.Addr(other), rawzk.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !strings.Contains(c.Member(lag).FourLetterWord("srvr"), "Mode: ") {
		t.Fatal("the lagging member does not serve")
	}
	c.Heal()
	b, err := rawzk.Dial(c.Addr(lag), rawzk.Options{Timeout: time.Minute, SessionID: a.Session.SessionID, Passwd: a.Session.Passwd})
	if err != nil {
		t.Fatalf("resuming on the lagging member: %v", err)
	}
	defer b.Close()
	if b.Session.SessionID != a.Session.SessionID {
		t.Fatalf("resumed session %#x, want %#x", b.Session.SessionID, a.Session.SessionID)
	}
}

// TestClusterSessionMoves: a client that resumes its session on another
// member takes it along: the member that served it closes the old
// connection (a request still arriving there gets SessionMoved); moving
// back closes the second connection, and the newest keeps working.
func TestClusterSessionMoves(t *testing.T) {
	c := zktest.StartCluster(t, 3)
	c.Leader()
	a := dialRetry(t, c.Addr(0), rawzk.Options{Timeout: time.Minute})
	if code := call(t, a, proto.OpCreate, &proto.CreateRequest{Path: "/moving", ACL: openACL, Flags: proto.ModeEphemeral}, nil); code != proto.ErrOk {
		t.Fatal(code)
	}
	resume := func(i int) *rawzk.Conn {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; {
			r, err := rawzk.Dial(c.Addr(i), rawzk.Options{Timeout: time.Minute, SessionID: a.Session.SessionID, Passwd: a.Session.Passwd})
			if err == nil && r.Session.SessionID == a.Session.SessionID {
				t.Cleanup(func() { r.Close() })
				return r
			}
			if err == nil {
				r.Close()
			}
			if time.Now().After(deadline) {
				t.Fatalf("resuming on member %d: %v", i+1, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	b := resume(1)
	waitMovedOrClosed(t, a)
	if code := call(t, b, proto.OpExists, &proto.ExistsRequest{Path: "/moving"}, &proto.ExistsResponse{}); code != proto.ErrOk {
		t.Fatalf("exists on the new connection: %v", code)
	}
	back := resume(0)
	waitMovedOrClosed(t, b)
	for i := 0; i < 3; i++ {
		if code := call(t, back, proto.OpExists, &proto.ExistsRequest{Path: "/moving"}, &proto.ExistsResponse{}); code != proto.ErrOk {
			t.Fatalf("exists after moving back: %v", code)
		}
	}
}

// waitMovedOrClosed sends requests on c until the server answers
// SessionMoved or closes the connection.
func waitMovedOrClosed(t *testing.T, c *rawzk.Conn) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c.NetConn().SetDeadline(time.Now().Add(5 * time.Second))
		h, err := c.Call(proto.OpExists, &proto.ExistsRequest{Path: "/"}, &proto.ExistsResponse{})
		if err != nil || h.Err == proto.ErrSessionMoved {
			return
		}
	}
	t.Fatal("the old connection still serves the moved session")
}

// TestClusterStaleProposalAfterSessionMove: a create proposed through a
// member whose proposals are held up (a paused process, a congested link)
// reaches the log only after its client has resumed the session on
// another member and carried on there. It is refused (SessionMoved), as
// ZooKeeper's leader refuses a request from a server that no longer owns
// the session: applied, it would leave a node that the client does not
// know it made and that lives as long as the session (a lock nobody
// releases). The client's new connection sees everything the log ordered
// before its move, and its own writes apply.
func TestClusterStaleProposalAfterSessionMove(t *testing.T) {
	c := zktest.StartCluster(t, 3)
	lead := c.Leader()
	f, other := (lead+1)%3, (lead+2)%3
	a := dialRetry(t, c.Addr(f), rawzk.Options{Timeout: time.Minute})
	if code := call(t, a, proto.OpCreate, &proto.CreateRequest{Path: "/before", ACL: openACL, Flags: proto.ModeEphemeral}, nil); code != proto.ErrOk {
		t.Fatal(code)
	}
	c.HoldProposals(f)
	released := false
	defer func() {
		if !released {
			c.ReleaseProposals(f)
		}
	}()
	if _, err := a.Send(proto.OpCreate, &proto.CreateRequest{Path: "/stale", ACL: openACL, Flags: proto.ModeEphemeral}); err != nil {
		t.Fatal(err)
	}
	for c.HeldProposals(f) == 0 {
		time.Sleep(time.Millisecond)
	}
	// The client gives up on member f and resumes its session elsewhere.
	b := dialRetry(t, c.Addr(other), rawzk.Options{Timeout: time.Minute, SessionID: a.Session.SessionID, Passwd: a.Session.Passwd})
	if b.Session.SessionID != a.Session.SessionID {
		t.Fatalf("resuming the session on member %d: got session %#x", other+1, b.Session.SessionID)
	}
	if code := call(t, b, proto.OpExists, &proto.ExistsRequest{Path: "/before"}, &proto.ExistsResponse{}); code != proto.ErrOk {
		t.Fatalf("/before on the new connection: %v", code)
	}
	if code := call(t, b, proto.OpExists, &proto.ExistsRequest{Path: "/stale"}, &proto.ExistsResponse{}); code != proto.ErrNoNode {
		t.Fatalf("/stale before its proposal was released: %v", code)
	}
	c.ReleaseProposals(f)
	released = true
	// Proposed after the release, so the log orders it after /stale's.
	if code := call(t, b, proto.OpCreate, &proto.CreateRequest{Path: "/after", ACL: openACL, Flags: proto.ModeEphemeral}, nil); code != proto.ErrOk {
		t.Fatalf("create on the new connection: %v", code)
	}
	for i := range 3 {
		var after, stale bool
		for deadline := time.Now().Add(30 * time.Second); !after; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("member %d never applied /after", i+1)
			}
			c.Member(i).Tree(func(tr *tree.Tree) { after, stale = tr.Get("/after") != nil, tr.Get("/stale") != nil })
		}
		if stale {
			t.Fatalf("member %d applied the create its client's old connection proposed before the session moved", i+1)
		}
	}
}

// dialRetry connects to addr, trying again for up to 30 s while the
// member refuses (it has not heard from a leader yet, or the proposal
// that makes or moves the session was lost in an election).
func dialRetry(t *testing.T, addr string, o rawzk.Options) *rawzk.Conn {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := rawzk.Dial(addr, o)
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("connecting to %s: %v", addr, err)
		}
	}
}

// TestClusterDigestsAgree: every member keeps ZooKeeper's tree digest as it
// applies the log; they log the same digest at the same zxids, and the
// hash four-letter word and AdminServer command show that log.
func TestClusterDigestsAgree(t *testing.T) {
	c := zktest.StartCluster(t, 3, zktest.WithOptions(func(o *server.Options) { o.FourLetterWords = []string{"*"} }))
	a := dialRetry(t, c.Addr(c.Leader()), rawzk.Options{Timeout: time.Minute})
	if code := call(t, a, proto.OpCreate, &proto.CreateRequest{Path: "/d", ACL: openACL}, nil); code != proto.ErrOk {
		t.Fatal(code)
	}
	for i := range 300 {
		if code := call(t, a, proto.OpSetData, &proto.SetDataRequest{Path: "/d", Data: []byte(fmt.Sprint(i)), Version: -1}, &proto.SetDataResponse{}); code != proto.ErrOk {
			t.Fatal(code)
		}
	}
	var want int64
	c.Member(c.Leader()).Tree(func(tr *tree.Tree) { want = tr.LastZxid() })
	logs := make([][]tree.ZxidDigest, 3)
	for i := range 3 {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			var last int64
			c.Member(i).Tree(func(tr *tree.Tree) {
				last = tr.LastZxid()
				if last >= want {
					logs[i] = tr.DigestLog()
					if d := tr.ComputeDigest(); d != tr.Digest() {
						t.Errorf("member %d: digest %#x kept, %#x computed", i+1, tr.Digest(), d)
					}
				}
			})
			if last >= want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d never applied zxid %d", i+1, want)
			}
		}
	}
	if len(logs[0]) < 2 {
		t.Fatalf("member 1 logged %d digests over %d zxids", len(logs[0]), want)
	}
	at := map[int64]uint64{}
	for _, d := range logs[0] {
		at[d.Zxid] = d.Digest
	}
	for i := 1; i < 3; i++ {
		common := 0
		for _, d := range logs[i] {
			if v, ok := at[d.Zxid]; ok {
				common++
				if v != d.Digest {
					t.Errorf("zxid %#x: member 1 logged digest %d, member %d %d", d.Zxid, v, i+1, d.Digest)
				}
			}
		}
		if common == 0 {
			t.Errorf("members 1 and %d logged no digest at the same zxid", i+1)
		}
	}
	var text strings.Builder
	for _, d := range logs[0] {
		fmt.Fprintf(&text, "%x: %d\n", d.Zxid, d.Digest)
	}
	if got := c.Member(0).FourLetterWord("hash"); !strings.HasPrefix(got, text.String()) {
		t.Errorf("hash on member 1:\n%s\nwant it to begin with\n%s", got, text.String())
	}
}

// With the digest off (digest.enabled=false) the hash command shows none.
func TestNoTreeDigest(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.NoTreeDigest = true }))
	c := dial(t, srv.Addr())
	for i := range tree.DigestLogInterval + 1 {
		if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("/n%d", i), ACL: openACL}, nil); code != proto.ErrOk {
			t.Fatal(code)
		}
	}
	var d uint64
	srv.Tree(func(tr *tree.Tree) { d = tr.Digest() })
	if got := srv.FourLetterWord("hash"); got != "" || d != 0 {
		t.Errorf("digest %d, hash %q; want none", d, got)
	}
}
