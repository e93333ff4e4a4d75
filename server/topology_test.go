package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zk"
)

// Topologies an Apache ZooKeeper operator runs: members that name
// themselves 0.0.0.0, members that reach each other through different
// addresses, server id 0, a standalone's data turned into an ensemble's
// first member. The multi-process versions on distinct addresses and host
// names are in tests/deploy.

// listenAll listens on every interface at a free port, so that a member
// can be reached at 127.0.0.1, 127.0.0.2, … (all loopback addresses) and
// its peers can each name it differently.
func listenAll(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func port(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }

// threePeers listens for three members on every interface and returns
// the listeners and the members' peers, servers 1 to 3 on 127.0.0.1.
func threePeers(t *testing.T) ([]net.Listener, []server.Peer) {
	lns := []net.Listener{listenAll(t), listenAll(t), listenAll(t)}
	var peers []server.Peer
	for i, ln := range lns {
		peers = append(peers, server.Peer{ID: int64(i + 1), Addr: fmt.Sprintf("127.0.0.1:%d", port(ln))})
	}
	return lns, peers
}

// replaceDisk stops member m (server id on dir, listening at ln's port),
// empties its data directory and starts it again, as after a disk
// replacement, and returns the new member.
func replaceDisk(t *testing.T, m *server.Server, id int64, dir string, peers []server.Peer, ln net.Listener, logs *lockedBuffer) *server.Server {
	t.Helper()
	m.Close()
	if err := os.RemoveAll(filepath.Join(dir, "zkgo")); err != nil {
		t.Fatal(err)
	}
	again, err := net.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", port(ln)))
	if err != nil {
		t.Fatal(err)
	}
	return startMember(t, id, dir, peers, again, logs)
}

// standaloneData runs a standalone server on dir, creates the paths and
// stops it: a standalone's data directory.
func standaloneData(t *testing.T, dir string, logs *lockedBuffer, paths ...string) {
	t.Helper()
	standalone := startMember(t, 0, dir, nil, nil, logs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := zk.Connect(ctx, standalone.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if _, err := cl.Create(ctx, p, []byte("s"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	standalone.Close()
}

// startMember starts one in-process member with the given peers (its own
// line included) on ln, with the test's defaults and extra options.
func startMember(t *testing.T, id int64, dir string, peers []server.Peer, ln net.Listener, logs *lockedBuffer, extra ...func(*server.Options)) *server.Server {
	t.Helper()
	o := server.Options{
		Addr: "127.0.0.1:0", TickTime: 50 * time.Millisecond, DataDir: dir, NoSync: true,
		ServerID: id, Peers: peers, PeerListener: ln, FourLetterWords: []string{"*"},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	for _, fn := range extra {
		fn(&o)
	}
	s, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitLeader waits until exactly one of members leads, and returns it.
func waitLeader(t *testing.T, members []*server.Server, logs *lockedBuffer) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		lead, n := -1, 0
		for i, m := range members {
			if m != nil && m.Mode() == "leader" {
				lead, n = i, n+1
			}
		}
		if n == 1 {
			return lead
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no single leader within 30s\n%s", tail(logs.String()))
	return -1
}

// writeRead creates path through member w and waits until member r
// serves it.
func writeRead(t *testing.T, w, r *server.Server, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cw, err := zk.Connect(ctx, w.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cw.Close()
	for {
		_, err := cw.Create(ctx, path, []byte("x"), zk.OpenACLUnsafe, zk.ModePersistent)
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			break
		}
		if !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
			t.Fatalf("create %s: %v", path, err)
		}
	}
	cr, err := zk.Connect(ctx, r.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Close()
	if _, err := cr.Sync(ctx, path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cr.Get(ctx, path); err != nil {
		t.Fatalf("get %s on the other member: %v", path, err)
	}
}

// The official Docker image's idiom: each member lists itself as 0.0.0.0
// and the others by an address that reaches them; here each member also
// names every other by a different loopback address (as members behind
// NAT or a proxy do). Apache ZooKeeper elects a leader on such files; so
// must zkgo, and a write through one member is read on another.
func TestEnsembleMembersAddressEachOtherDifferently(t *testing.T) {
	const n = 3
	var logs lockedBuffer
	lns := make([]net.Listener, n)
	for i := range lns {
		lns[i] = listenAll(t)
	}
	members := make([]*server.Server, n)
	for i := range n {
		var peers []server.Peer
		for j := range n {
			addr := fmt.Sprintf("127.0.0.%d:%d", 2+(i+j)%3, port(lns[j])) // member i's own name for member j
			if j == i {
				addr = fmt.Sprintf("0.0.0.0:%d", port(lns[j]))
			}
			peers = append(peers, server.Peer{ID: int64(j + 1), Addr: addr})
		}
		members[i] = startMember(t, int64(i+1), t.TempDir(), peers, lns[i], &logs)
	}
	lead := waitLeader(t, members, &logs)
	writeRead(t, members[(lead+1)%n], members[(lead+2)%n], "/docker-idiom")
}

// Server ids as ZooKeeper allows them: 0 included (ZooKeeper's own test
// configurations number members from 0). The ensemble forms, and a member
// with id 0 rejoins after its disk was replaced.
func TestEnsembleServerIDZero(t *testing.T) {
	const n = 3
	var logs lockedBuffer
	lns := make([]net.Listener, n)
	var peers []server.Peer
	for i := range lns {
		lns[i] = listenAll(t)
		peers = append(peers, server.Peer{ID: int64(i), Addr: fmt.Sprintf("127.0.0.1:%d", port(lns[i]))})
	}
	dirs := make([]string, n)
	members := make([]*server.Server, n)
	for i := range n {
		dirs[i] = t.TempDir()
		members[i] = startMember(t, int64(i), dirs[i], peers, lns[i], &logs)
	}
	lead := waitLeader(t, members, &logs)
	writeRead(t, members[lead], members[(lead+1)%n], "/zero")
	if got := members[0].FourLetterWord("srvr"); !strings.Contains(got, "Mode: ") {
		t.Fatalf("server 0's srvr: %q", got)
	}
	// Server 0's disk replaced: it rejoins under a new raft identity.
	members[0] = replaceDisk(t, members[0], 0, dirs[0], peers, lns[0], &logs)
	lead = waitLeader(t, members, &logs)
	writeRead(t, members[lead], members[0], "/zero-rejoined")
}

// A standalone server's data restarted as member N of a 3-member zoo.cfg
// with the two others down must not lead alone and take writes (Apache
// ZooKeeper serves nothing there): it says what it waits for. Once the
// others start with empty data directories, they join, receive its
// data, and the ensemble serves it. Both as server 1 (the standalone's
// own raft id) and as server 3.
func TestStandaloneDataBecomesFirstMember(t *testing.T) {
	for _, myid := range []int64{1, 3} {
		t.Run(fmt.Sprintf("as-server-%d", myid), func(t *testing.T) {
			var logs lockedBuffer
			dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
			data := dirs[myid-1]
			var paths []string
			for i := range 20 {
				paths = append(paths, fmt.Sprintf("/standalone-%d", i))
			}
			standaloneData(t, data, &logs, paths...)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			lns, peers := threePeers(t)
			members := make([]*server.Server, 3)
			members[myid-1] = startMember(t, myid, data, peers, lns[myid-1], &logs)
			m := members[myid-1]
			// It says why it does not serve, in its log and in srvr.
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(logs.String(), "waiting for the configured members") {
				if time.Now().After(deadline) {
					t.Fatalf("the converted member does not say what it waits for:\n%s", tail(logs.String()))
				}
				time.Sleep(10 * time.Millisecond)
			}
			if mode := m.Mode(); mode == "leader" {
				t.Fatalf("a standalone's data leads alone as member %d of 3", myid)
			}
			if got := m.FourLetterWord("srvr"); !strings.Contains(got, "not currently serving") || !strings.Contains(got, "server.") {
				t.Fatalf("srvr while waiting: %q", got)
			}
			short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
			if c, err := zk.Connect(short, m.Addr().String()); err == nil {
				_, err := c.Create(short, "/split", nil, zk.OpenACLUnsafe, zk.ModePersistent)
				c.Close()
				if err == nil {
					t.Fatal("a write was accepted by the data member alone")
				}
			}
			cancelShort()
			if _, err := os.Stat(filepath.Join(data, "zkgo.standalone")); err != nil {
				t.Fatalf("the standalone's data is not kept: %v", err)
			}

			// The others start empty; they join and receive the data.
			for i := range 3 {
				if members[i] == nil {
					members[i] = startMember(t, int64(i+1), dirs[i], peers, lns[i], &logs)
				}
			}
			lead := waitLeader(t, members, &logs)
			other := (lead + 1) % 3
			for members[other] == m {
				other = (other + 1) % 3
			}
			writeRead(t, members[lead], members[other], "/after")
			c2, err := zk.Connect(ctx, members[other].Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			if _, _, err := c2.Get(ctx, "/standalone-19"); err != nil {
				t.Fatalf("the standalone's data on a joined member: %v", err)
			}
		})
	}
}

// The unsafe order: the two empty members start first and form an
// ensemble of their own; then the standalone's data starts as member 1.
// Two leaderships must never both take writes: the data member refuses
// their formation and never serves, and says why.
func TestStandaloneDataNeverJoinsAnotherFormation(t *testing.T) {
	var logs lockedBuffer
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	standaloneData(t, dirs[0], &logs, "/mine")
	lns, peers := threePeers(t)
	members := make([]*server.Server, 3)
	members[1] = startMember(t, 2, dirs[1], peers, lns[1], &logs)
	members[2] = startMember(t, 3, dirs[2], peers, lns[2], &logs)
	lead := waitLeader(t, members, &logs)
	writeRead(t, members[lead], members[3-lead], "/theirs")
	members[0] = startMember(t, 1, dirs[0], peers, lns[0], &logs)
	deadline := time.Now().Add(30 * time.Second)
	for l := logs.String(); !strings.Contains(l, "waiting for the configured members") ||
		!strings.Contains(l, "another formation") && !strings.Contains(l, "a member of another ensemble that is forming"); l = logs.String() {
		if time.Now().After(deadline) {
			t.Fatalf("the data member does not say why it waits:\n%s", tail(logs.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if members[0].Mode() == "leader" {
		t.Fatal("the data member leads beside the other formation")
	}
	// The pair goes on serving.
	writeRead(t, members[lead], members[3-lead], "/theirs-2")
}

// readonlymode.enabled from the first second: one member of a new
// 3-member ensemble, alone, serves read-only clients while it waits for
// the others to form (Apache ZooKeeper does), says "ro" to isro and
// refuses writes with NotReadOnly; once the others come, it serves
// read-write.
func TestReadOnlyWhileForming(t *testing.T) {
	var logs lockedBuffer
	lns, peers := threePeers(t)
	ro := func(o *server.Options) { o.ReadOnlyMode = true }
	members := make([]*server.Server, 3)
	members[0] = startMember(t, 1, t.TempDir(), peers, lns[0], &logs, ro)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if ans := members[0].FourLetterWord("isro"); ans != "ro" {
		t.Fatalf("isro while forming = %q", ans)
	}
	c, err := zk.Connect(ctx, members[0].Addr().String(), zk.WithReadOnly(true), zk.WithSessionTimeout(2*time.Second))
	if err != nil {
		t.Fatalf("a read-only client while the ensemble forms: %v", err)
	}
	defer c.Close()
	if _, _, err := c.Get(ctx, "/"); err != nil {
		t.Fatalf("read while forming: %v", err)
	}
	if _, err := c.Create(ctx, "/nope", nil, zk.OpenACLUnsafe, zk.ModePersistent); !errors.Is(err, zk.ErrNotReadOnly) {
		t.Fatalf("write while forming: %v", err)
	}
	members[1] = startMember(t, 2, t.TempDir(), peers, lns[1], &logs, ro)
	members[2] = startMember(t, 3, t.TempDir(), peers, lns[2], &logs, ro)
	waitLeader(t, members, &logs)
	writeRead(t, members[0], members[2], "/formed")
}

// multiAddress (server.N=a:p:e|b:p:e): each member's first address leads
// nowhere (a network that is down), its second one reaches it. Members
// dial the addresses in turn, so the ensemble forms and replicates.
func TestEnsembleMultiAddressFirstDown(t *testing.T) {
	const n = 3
	var logs lockedBuffer
	lns := make([]net.Listener, n)
	var peers []server.Peer
	for i := range lns {
		lns[i] = listenAll(t)
		dead := listenAll(t) // a port that stops answering
		deadAddr := fmt.Sprintf("127.0.0.1:%d", port(dead))
		dead.Close()
		peers = append(peers, server.Peer{ID: int64(i + 1), Addr: deadAddr, More: []string{fmt.Sprintf("127.0.0.1:%d", port(lns[i]))}})
	}
	members := make([]*server.Server, n)
	for i := range n {
		members[i] = startMember(t, int64(i+1), t.TempDir(), peers, lns[i], &logs)
	}
	lead := waitLeader(t, members, &logs)
	writeRead(t, members[(lead+1)%n], members[(lead+2)%n], "/multi")
}

// /zookeeper/config of a new ensemble has a version from the start, as
// ZooKeeper's says version=100000000 (its first leader's first zxid):
// zkgo's is the zxid of the entry that chose the ensemble's formation,
// the same on every member, and it survives a restart.
func TestEnsembleConfigVersionedAtFormation(t *testing.T) {
	c := startCluster(t, 3, 0)
	c.waitFormation()
	version := func(i int) string {
		var v string
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			c.members[i].Tree(func(tr *tree.Tree) {
				if n := tr.Get(tree.ConfigPath); n != nil {
					for _, l := range strings.Split(string(n.Data()), "\n") {
						if x, ok := strings.CutPrefix(l, "version="); ok {
							v = x
						}
					}
				}
			})
			if v != "" && v != "0" {
				return v
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("member %d: /zookeeper/config's version is %q", i+1, v)
		return ""
	}
	v := version(0)
	for i := 1; i < 3; i++ {
		if got := version(i); got != v {
			t.Fatalf("member %d says version=%s, member 1 version=%s", i+1, got, v)
		}
	}
	c.members[1].Close()
	c.members[1] = nil
	c.restart(1)
	if got := version(1); got != v {
		t.Fatalf("after a restart: version=%s, want %s", got, v)
	}
}

// The formation edge case: a new ensemble's member (2) stops before it
// receives the entry that chose the formation, then another member's (3)
// disk is replaced. Member 1 alone holds the formation; member 2, pending,
// refuses it; member 3, empty, asks to join but no leader can admit it
// without member 2. The rule: a member still pending counts the
// formation a joining member took from the ensemble as held, when every
// other voter answering holds or joins that one formation, none another
// or none pending — so member 2 takes it, the ensemble elects, admits
// member 3, and serves without an operator.
func TestEnsembleFormationAfterCrashAndRebuild(t *testing.T) {
	var logs lockedBuffer
	lns, peers := threePeers(t)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	// Members bootstrapped together and not elected yet: seeded from one
	// (empty) tree, their formation pending, as after the bootstrap.
	var snap bytes.Buffer
	if err := tree.New().WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		o := server.Options{DataDir: dirs[i], ServerID: int64(i + 1), Peers: peers, NoSync: true}
		if err := server.SeedDataDir(o, bytes.NewReader(snap.Bytes())); err != nil {
			t.Fatal(err)
		}
	}
	members := make([]*server.Server, 3)
	members[0] = startMember(t, 1, dirs[0], peers, lns[0], &logs)
	members[2] = startMember(t, 3, dirs[2], peers, lns[2], &logs)
	// 1 and 3 elect and choose the formation; 2 never saw it.
	waitFor(t, &logs, func() bool {
		return strings.Count(logs.String(), "recorded the ensemble's formation") >= 2
	}, "members 1 and 3 record the formation")
	writeRead(t, members[0], members[2], "/formed")
	// Member 3's disk is replaced.
	members[2] = replaceDisk(t, members[2], 3, dirs[2], peers, lns[2], &logs)
	members[1] = startMember(t, 2, dirs[1], peers, lns[1], &logs)
	waitLeader(t, members, &logs)
	writeRead(t, members[1], members[2], "/after")
}

// waitFor waits until cond holds, or fails saying what it waited for.
func waitFor(t *testing.T, logs *lockedBuffer, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s\n%s", what, tail(logs.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Members that really disagree about the ensemble — a server.N line that
// points at a member of an ensemble with other server ids — refuse each
// other, and both say which lines differ: here the new members find Y
// formed and ask to join it, Y refuses (one server id runs there, the
// other is no member), and each side names the lines the other lacks.
func TestEnsembleMembersThatDisagreeSayWhichLinesDiffer(t *testing.T) {
	var logsY, logsX lockedBuffer
	// Ensemble Y: servers 1, 2 and 4.
	var peersY []server.Peer
	var lnsY []net.Listener
	for _, id := range []int64{1, 2, 4} {
		ln := listenAll(t)
		lnsY = append(lnsY, ln)
		peersY = append(peersY, server.Peer{ID: id, Addr: fmt.Sprintf("127.0.0.1:%d", port(ln))})
	}
	var y []*server.Server
	for i, p := range peersY {
		y = append(y, startMember(t, p.ID, t.TempDir(), peersY, lnsY[i], &logsY))
	}
	waitLeader(t, y, &logsY)
	// Ensemble X: servers 1, 2 and 3, whose server.1 line is Y's member 1.
	lnsX := []net.Listener{listenAll(t), listenAll(t)}
	peersX := []server.Peer{peersY[0],
		{ID: 2, Addr: fmt.Sprintf("127.0.0.1:%d", port(lnsX[0]))},
		{ID: 3, Addr: fmt.Sprintf("127.0.0.1:%d", port(lnsX[1]))}}
	startMember(t, 2, t.TempDir(), peersX, lnsX[0], &logsX)
	startMember(t, 3, t.TempDir(), peersX, lnsX[1], &logsX)
	waitFor(t, &logsY, func() bool {
		return strings.Contains(logsY.String(), "only here") && strings.Contains(logsX.String(), "only here")
	}, "both sides to log the lines that differ")
	for _, l := range []string{logsY.String(), logsX.String()} {
		if !strings.Contains(l, "server.3=participant") || !strings.Contains(l, "server.4=participant") {
			t.Fatalf("the lines that differ are not named:\n%s", tail(l))
		}
	}
}

// The same between formed ensembles: a member of X (servers 1 to 3)
// restarted with its server.1 line pointing at a member of Y (servers 1,
// 2 and 4). The handshake refuses it on both sides (their recorded
// identities differ), and both members log which lines differ.
func TestEnsembleFormedMembersThatDisagreeSayWhichLinesDiffer(t *testing.T) {
	var logsY, logsX lockedBuffer
	start := func(ids []int64, logs *lockedBuffer) ([]server.Peer, []net.Listener, []string, []*server.Server) {
		var peers []server.Peer
		var lns []net.Listener
		var dirs []string
		for _, id := range ids {
			ln := listenAll(t)
			lns = append(lns, ln)
			dirs = append(dirs, t.TempDir())
			peers = append(peers, server.Peer{ID: id, Addr: fmt.Sprintf("127.0.0.1:%d", port(ln))})
		}
		var ms []*server.Server
		for i, p := range peers {
			ms = append(ms, startMember(t, p.ID, dirs[i], peers, lns[i], logs))
		}
		waitLeader(t, ms, logs)
		return peers, lns, dirs, ms
	}
	peersY, _, _, _ := start([]int64{1, 2, 4}, &logsY)
	peersX, lnsX, dirsX, x := start([]int64{1, 2, 3}, &logsX)
	x[1].Close()
	wrong := slices.Clone(peersX)
	wrong[0] = peersY[0]
	ln, err := net.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", port(lnsX[1])))
	if err != nil {
		t.Fatal(err)
	}
	startMember(t, 2, dirsX[1], wrong, ln, &logsX)
	waitFor(t, &logsY, func() bool {
		return strings.Contains(logsY.String(), "a member of another ensemble") && strings.Contains(logsX.String(), "a member of another ensemble")
	}, "both sides to log the other ensemble")
	for _, l := range []string{logsY.String(), logsX.String()} {
		if !strings.Contains(l, "server.3=participant") || !strings.Contains(l, "server.4=participant") {
			t.Fatalf("the lines that differ are not named:\n%s", tail(l))
		}
	}
}
