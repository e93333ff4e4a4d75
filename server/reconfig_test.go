package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// configText is the dynamic configuration of the members (election ports
// unused but required by the format).
func configText(t *testing.T, peers []server.Peer) string {
	var b strings.Builder
	for _, p := range peers {
		role := "participant"
		if p.Observer {
			role = "observer"
		}
		fmt.Fprintf(&b, "server.%d=%s:%d:%s\n", p.ID, p.Addr, zktest.FreePort(t), role)
	}
	return b.String() + "version=0"
}

// Incremental reconfig, as zkCli's reconfig -add / -remove does it: a new
// server started from a configuration listing the ensemble and itself
// waits, serving nothing, until a reconfig adds it; it then receives the
// data, becomes a voter once caught up, and /zookeeper/config and its
// watchers follow; removing it takes it out again. The error paths answer
// ZooKeeper's codes: NoAuth without the super user, BadVersion for a stale
// fromConfig, NewConfigNoQuorum when no quorum of the new configuration is
// in sync. A server that is not there yet may be added (as in ZooKeeper:
// the quorum does not need it) and removed again.
func TestReconfigAddRemove(t *testing.T) {
	var cfg string
	var peers4 []server.Peer
	c := startCluster(t, 3, 0, func(o *server.Options) {
		o.ReconfigEnabled = true
		o.SuperDigest = acl.DigestID("super", "secret")
		if cfg == "" {
			cfg = configText(t, o.Peers)
		}
		o.ConfigText = cfg
	})
	lead := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := zk.Connect(ctx, c.addr(lead))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Create(ctx, "/before", []byte("b"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}

	// The fourth server.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peers4 = append(slices.Clone(c.peers), server.Peer{ID: 4, Addr: ln.Addr().String()})
	addr4 := fmt.Sprintf("127.0.0.1:%d", zktest.FreePort(t))
	line4 := fmt.Sprintf("server.4=%s:%d:participant;%s", ln.Addr().String(), zktest.FreePort(t), addr4)
	s4, err := server.New(server.Options{
		Addr: addr4, TickTime: 50 * time.Millisecond, DataDir: t.TempDir(), NoSync: true,
		ServerID: 4, Peers: peers4, PeerListener: ln, FourLetterWords: []string{"*"}, ReconfigEnabled: true,
		ConfigText: strings.Replace(cfg, "version=0", line4+"\nversion=0", 1),
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s4.Start(); err != nil {
		t.Fatal(err)
	}
	defer s4.Close()

	// Without the super user: a reconfig that would go ahead is NoAuth;
	// the other checks come first, in ZooKeeper's order.
	_, _, err = cl.IncrementalReconfig(ctx, nil, []string{"3"}, -1)
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("reconfig without the super user: %v", err)
	}
	ghost := fmt.Sprintf("server.5=127.0.0.1:%d:%d:participant;%d", zktest.FreePort(t), zktest.FreePort(t), zktest.FreePort(t))
	for _, tt := range []struct {
		joining []string
		from    int64
		want    error
	}{
		{[]string{line4}, 0x12345, zk.ErrBadVersion},
		{[]string{"server.5=nonsense"}, -1, zk.ErrBadArguments},
		{[]string{strings.Split(ghost, ";")[0]}, -1, zk.ErrBadArguments}, // no client port
		{[]string{ghost}, -1, zk.ErrNoAuth},                              // a quorum is in sync: the authorization decides
	} {
		if _, _, err := cl.IncrementalReconfig(ctx, tt.joining, nil, tt.from); !errors.Is(err, tt.want) {
			t.Fatalf("reconfig %q from %x without the super user: %v, want %v", tt.joining, tt.from, err, tt.want)
		}
	}
	// Two of three members replaced by servers that are not there: no
	// quorum of the new configuration is in sync (checked before the
	// authorization, as ZooKeeper does).
	ghost6 := fmt.Sprintf("server.6=127.0.0.1:%d:%d:participant;%d", zktest.FreePort(t), zktest.FreePort(t), zktest.FreePort(t))
	line1 := strings.Split(cfg, "\n")[0] + ";" + c.addr(0)
	if _, _, err := cl.Reconfig(ctx, []string{line1, ghost, ghost6}, -1); !errors.Is(err, zk.ErrNewConfigNoQuorum) {
		t.Fatalf("reconfig to one member and two absent servers: %v", err)
	}
	if err := cl.AddAuth(ctx, "digest", []byte("super:secret")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cl.IncrementalReconfig(ctx, []string{line4}, nil, 0x12345); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("reconfig from a stale version: %v", err)
	}
	// A server not started yet is added (a voter the quorum does not
	// need), and removed again.
	if data, _, err := cl.IncrementalReconfig(ctx, []string{ghost}, nil, -1); err != nil || !strings.Contains(string(data), "server.5=") {
		t.Fatalf("reconfig adding a server that is not there yet: %v\n%s", err, data)
	}
	if data, _, err := cl.IncrementalReconfig(ctx, nil, []string{"5"}, -1); err != nil || strings.Contains(string(data), "server.5=") {
		t.Fatalf("removing it: %v\n%s", err, data)
	}
	if _, _, err := cl.IncrementalReconfig(ctx, []string{"server.5=nonsense"}, nil, -1); !errors.Is(err, zk.ErrBadArguments) {
		t.Fatalf("reconfig with a bad line: %v", err)
	}

	_, _, watch, err := cl.GetConfigW(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	var stat *zk.Stat
	for {
		// The new server must have asked to join first.
		data, stat, err = cl.IncrementalReconfig(ctx, []string{line4}, nil, -1)
		if !errors.Is(err, zk.ErrNewConfigNoQuorum) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), line4) || !strings.Contains(string(data), fmt.Sprintf("version=%x", stat.Mzxid)) {
		t.Fatalf("new config (mzxid %x):\n%s", stat.Mzxid, data)
	}
	select {
	case ev := <-watch:
		if ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("config watch: %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("the /zookeeper/config watch did not fire")
	}
	// The new server has the data and is a voter; every member shows the
	// new configuration.
	cl4, err := zk.Connect(ctx, s4.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl4.Close()
	if got, _, err := cl4.Get(ctx, "/before"); err != nil || string(got) != "b" {
		t.Fatalf("the new server: %q, %v", got, err)
	}
	for deadline := time.Now().Add(30 * time.Second); mntrKey(c.members[lead], "zkgo_raft_voters") != "4"; {
		if time.Now().After(deadline) {
			t.Fatalf("voters %s after adding a participant", mntrKey(c.members[lead], "zkgo_raft_voters"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 3 {
		var got string
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(got, line4) && time.Now().Before(deadline) {
			cfgData, _, _ := configOf(ctx, t, c.addr(i))
			got = string(cfgData)
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(got, line4) {
			t.Fatalf("member %d's /zookeeper/config:\n%s", i+1, got)
		}
	}

	// Remove it again.
	data, _, err = cl.IncrementalReconfig(ctx, nil, []string{"4"}, -1)
	if err != nil {
		t.Fatal(err)
	}
	// Answered once committed: the leader has applied it.
	if strings.Contains(string(data), "server.4=") {
		t.Fatalf("server 4 still in the config:\n%s", data)
	}
	if v := mntrKey(c.members[lead], "zkgo_raft_voters"); v != "3" {
		t.Fatalf("voters %s after removing it", v)
	}
	if _, err := cl.Create(ctx, "/after", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
}

func configOf(ctx context.Context, t *testing.T, addr string) ([]byte, *zk.Stat, error) {
	c, err := zk.Connect(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	return c.GetConfig(ctx)
}

// startReconfigCluster starts 3 members with reconfig enabled and ACLs
// skipped, sharing one dynamic configuration (returned), logging into
// logs.
func startReconfigCluster(t *testing.T) (c *cluster, cfg string, logs *lockedBuffer) {
	logs = new(lockedBuffer)
	c = startCluster(t, 3, 0, func(o *server.Options) {
		o.ReconfigEnabled, o.SkipACL = true, true
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		if cfg == "" {
			cfg = configText(t, o.Peers)
		}
		o.ConfigText = cfg
	})
	return c, cfg, logs
}

// Non-incremental reconfig and role changes: the member list given whole
// turns a participant into an observer (raft demotes it to a learner) and
// back (promoted once caught up); fromConfig equal to the current version
// is accepted; removing the leader hands the leadership over first.
func TestReconfigMembersAndRoles(t *testing.T) {
	c, cfg, logs := startReconfigCluster(t)
	lead := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := zk.Connect(ctx, c.addr(lead))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, stat, err := cl.GetConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(cfg, "\n")[:3]
	other := (lead + 1) % 3
	asObserver := slices.Clone(lines)
	asObserver[other] = strings.Replace(asObserver[other], ":participant", ":observer", 1)
	data, _, err := cl.Reconfig(ctx, asObserver, stat.Mzxid)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), asObserver[other]) {
		t.Fatalf("new config:\n%s", data)
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.members[other].Mode() != "observer" || mntrKey(c.members[lead], "zkgo_raft_voters") != "2" {
		if time.Now().After(deadline) {
			t.Fatalf("member %d is %s; leader's voters %s", other+1, c.members[other].Mode(), mntrKey(c.members[lead], "zkgo_raft_voters"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, _, err := cl.Reconfig(ctx, lines, -1); err != nil {
		t.Fatal(err)
	}
	for c.members[other].Mode() == "observer" || mntrKey(c.members[lead], "zkgo_raft_voters") != "3" {
		if time.Now().After(deadline) {
			t.Fatalf("member %d is %s; leader's voters %s", other+1, c.members[other].Mode(), mntrKey(c.members[lead], "zkgo_raft_voters"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Remove the leader (asked through a member that stays: the leader's
	// own clients lose their connection when it steps down); the two
	// others carry on. It commits and answers in one call, and the
	// members that stay keep their clients' connections through the
	// handover (ZooKeeper's members restart their client service there).
	cl2, err := zk.Connect(ctx, c.addr(other))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	third := 3 - lead - other
	cl3, err := zk.Connect(ctx, c.addr(third))
	if err != nil {
		t.Fatal(err)
	}
	defer cl3.Close()
	states2, stop2 := cl2.NotifyState()
	defer stop2()
	states3, stop3 := cl3.NotifyState()
	defer stop3()
	data, _, err = cl2.IncrementalReconfig(ctx, nil, []string{fmt.Sprint(lead + 1)}, -1)
	if err != nil {
		t.Fatalf("removing the leader: %v", err)
	}
	for _, ch := range []<-chan zk.State{states2, states3} {
	drain:
		for {
			select {
			case st := <-ch:
				if st == zk.StateSuspended || st == zk.StateLost {
					t.Fatalf("a client of a member that stays saw %v while the leadership moved", st)
				}
			default:
				break drain
			}
		}
	}
	if strings.Contains(string(data), fmt.Sprintf("server.%d=", lead+1)) {
		t.Fatalf("after removing the leader:\n%s", data)
	}
	for {
		_, err := cl2.Create(ctx, "/after-leader-left", nil, zk.OpenACLUnsafe, zk.ModePersistent)
		if err == nil {
			break
		}
		if !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c.members[lead].Mode() == "leader" {
		t.Fatal("the removed member still leads")
	}
	// The leadership was handed over before the removal.
	waitLogs(t, logs, "handing leadership over first", logs, "handing leadership over first")
	if strings.Contains(logs.String(), "was not handed over in time") {
		var keep []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "handing") || strings.Contains(l, "handed") || strings.Contains(l, "transfer") || strings.Contains(l, "became leader") || strings.Contains(l, "raft leader") {
				keep = append(keep, l)
			}
		}
		t.Fatalf("leadership not handed over:\n%s", strings.Join(keep, "\n"))
	}
}

// standaloneEnabled=false: a server whose membership lists only itself is
// a quorum of one (leader, reconfig allowed), as ZooKeeper's QuorumPeerMain
// runs it. A reconfig that changes nothing still commits a new version
// (its watchers fire), as ZooKeeper's does; a second server is added and
// removed again. Found here: a second server added before the first
// leader chose the ensemble's formation took it as pending and refused
// the first (two voters, one holding it: no majority), and was promoted
// to voter before it had acknowledged anything; the ensemble stopped
// (2 runs in 40).
func TestReconfigQuorumOfOne(t *testing.T) {
	var logs lockedBuffer
	e := zktest.StartEnsemble(t, 2, 1, func(o *server.Options) {
		o.DisableStandalone, o.ReconfigEnabled, o.SkipACL = true, true, true
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil)).With("me", o.ServerID)
	})
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := zk.Connect(ctx, e.ClientAddrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if m := e.Members[0].Mode(); m != "leader" {
		t.Fatalf("mode %q, want leader", m)
	}
	if _, err := cl.Create(ctx, "/one", []byte("1"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	data, stat, watch, err := cl.GetConfigW(ctx)
	if err != nil {
		t.Fatal(err)
	}
	same, stat2, err := cl.IncrementalReconfig(ctx, nil, []string{"7"}, stat.Mzxid)
	if err != nil {
		t.Fatalf("a reconfig that changes nothing: %v", err)
	}
	if stat2.Mzxid <= stat.Mzxid || strings.Replace(string(same), fmt.Sprintf("version=%x", stat2.Mzxid), fmt.Sprintf("version=%x", stat.Mzxid), 1) != string(data) {
		t.Fatalf("a reconfig that changes nothing: %q (mzxid %x) after %q (mzxid %x)", same, stat2.Mzxid, data, stat.Mzxid)
	}
	select {
	case ev := <-watch:
		if ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("config watch: %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("the /zookeeper/config watch did not fire")
	}
	if _, _, err := cl.IncrementalReconfig(ctx, nil, []string{"1"}, -1); !errors.Is(err, zk.ErrBadArguments) {
		t.Fatalf("removing the only member: %v", err)
	}
	// Back to back: raft drops a configuration change proposed before it
	// counts the previous one applied, which it may learn after the
	// previous answer went out (each of these waited 10 s and failed
	// with NewConfigNoQuorum now and then).
	for i := range 50 {
		start := time.Now()
		if _, _, err := cl.IncrementalReconfig(ctx, nil, []string{"7"}, -1); err != nil || time.Since(start) > 5*time.Second {
			t.Fatalf("reconfig %d of a burst: %v after %v", i, err, time.Since(start))
		}
	}

	e.Start(1, 1) // knows the first and itself; waits to be added
	for {
		data, _, err = cl.IncrementalReconfig(ctx, []string{e.Line(1)}, nil, -1)
		if !errors.Is(err, zk.ErrNewConfigNoQuorum) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the second has not asked to join yet
	}
	if err != nil || !strings.Contains(string(data), e.Line(1)) {
		t.Fatalf("adding the second: %q, %v", data, err)
	}
	for deadline := time.Now().Add(30 * time.Second); mntrKey(e.Members[0], "zkgo_raft_voters") != "2"; {
		if time.Now().After(deadline) {
			t.Fatalf("voters %s after adding a participant", mntrKey(e.Members[0], "zkgo_raft_voters"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cl2, err := zk.Connect(ctx, e.ClientAddrs[1])
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	if got, _, err := cl2.Get(ctx, "/one"); err != nil || string(got) != "1" {
		t.Fatalf("the second server: %q, %v", got, err)
	}
	if data, _, err = cl.IncrementalReconfig(ctx, nil, []string{"2"}, -1); err != nil || strings.Contains(string(data), "server.2=") {
		t.Fatalf("removing the second: %q, %v", data, err)
	}
	if _, err := cl.Create(ctx, "/alone-again", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
}

// Reconfig on a standalone server: ReconfigDisabled without
// reconfigEnabled, Unimplemented with it, as ZooKeeper's standalone server
// answers (kazoo 2.8 knows Unimplemented, and hung on ReconfigDisabled).
func TestReconfigStandalone(t *testing.T) {
	for _, tt := range []struct {
		enabled bool
		want    error
	}{{false, zk.ErrReconfigDisabled}, {true, zk.ErrUnimplemented}} {
		srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.ReconfigEnabled = tt.enabled }))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cl, err := zk.Connect(ctx, srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := cl.IncrementalReconfig(ctx, nil, []string{"2"}, -1); !errors.Is(err, tt.want) {
			t.Errorf("reconfigEnabled=%v: %v, want %v", tt.enabled, err, tt.want)
		}
		cl.Close()
		cancel()
	}
}

// TestReconfigDroppedByPendingChange: raft's leader drops a
// configuration change that arrives while another is unapplied (here a
// change that changes nothing, proposed just before; in use, its own
// promotion of a learner or the swap of a rejoining member's identity).
// The reconfig proposes its change again and is answered at once, not
// after its 10 s wait as NewConfigNoQuorum, as before.
func TestReconfigDroppedByPendingChange(t *testing.T) {
	c, _, logs := startReconfigCluster(t)
	lead := c.leader()
	server.ConfChangeBeforeReconfig(c.members[lead])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := zk.Connect(ctx, c.addr(lead))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	leaving := (lead + 1) % 3
	start := time.Now()
	data, _, err := cl.IncrementalReconfig(ctx, nil, []string{strconv.Itoa(leaving + 1)}, -1)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("reconfig after %v: %v\n%s", took, err, logs.String())
	}
	if strings.Contains(string(data), fmt.Sprintf("server.%d=", leaving+1)) {
		t.Fatalf("server.%d is still in the new config:\n%s", leaving+1, data)
	}
	if !strings.Contains(logs.String(), "the leader dropped the change") {
		t.Fatalf("the reconfig's change was not dropped (took %v): the test did not race it", took)
	}
}
