package zktest_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// The cluster clocks, members and clients end with their tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// electionTick is raftnode's default election timeout, which the server
// keeps: no member campaigns before it has taken this many ticks.
const electionTick = 10

// leaderNow is a TickUntil condition: exactly one running member leads.
func leaderNow(c *zktest.Cluster) func() bool {
	return func() bool { return c.CurrentLeader() >= 0 }
}

// has reports whether member i's tree holds path.
func has(c *zktest.Cluster, i int, path string) bool {
	found := false
	c.Member(i).Tree(func(t *tree.Tree) { found = t.Get(path) != nil })
	return found
}

// create creates path through the member at addr.
func create(t *testing.T, addr, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := zk.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create(ctx, path, nil, acl.OpenACLUnsafe, proto.ModePersistent); err != nil {
		t.Fatal(err)
	}
}

// TestManualClockElection: with a manual clock no member campaigns until
// it is ticked, whatever the wall clock does; ticked, the members elect a
// leader, and the followers learn of a commit at the next heartbeat, which
// is a tick too.
func TestManualClockElection(t *testing.T) {
	c := zktest.StartCluster(t, 3, zktest.WithManualClock())
	c.Tick(electionTick - 1)
	// Absence takes time to show: watch for longer than a wall-clock
	// election would take (2 × electionTick tick intervals, 25 ms each).
	watch := time.NewTicker(10 * time.Millisecond)
	defer watch.Stop()
	end := time.After(time.Second)
	for watching := true; watching; {
		select {
		case <-watch.C:
			for i := range 3 {
				if m := c.Member(i).Mode(); m != "follower" {
					t.Fatalf("member %d is %s without enough ticks", i+1, m)
				}
			}
		case <-end:
			watching = false
		}
	}
	if !c.TickUntil(leaderNow(c), 500) {
		t.Fatal("no leader after 500 ticks")
	}
	lead := c.CurrentLeader()
	create(t, c.Addr(lead), "/ticked")
	if !c.TickUntil(func() bool { return has(c, 0, "/ticked") && has(c, 1, "/ticked") && has(c, 2, "/ticked") }, 50) {
		t.Fatal("the write did not reach every member")
	}
}

// TestManualClockFailover: an isolated leader is replaced and steps down,
// both by ticks; healed, it catches up. A stopped leader is replaced by
// the remaining two, and after every member is stopped and restarted
// (with fresh clocks) the cluster elects again and keeps its data.
func TestManualClockFailover(t *testing.T) {
	c := zktest.StartCluster(t, 3, zktest.WithManualClock())
	if !c.TickUntil(leaderNow(c), 500) {
		t.Fatal("no leader")
	}
	old := c.CurrentLeader()
	create(t, c.Addr(old), "/before")

	c.Isolate(old)
	newLeader := func() int {
		for i := range 3 {
			if i != old && c.Member(i) != nil && c.Member(i).Mode() == "leader" {
				return i
			}
		}
		return -1
	}
	if !c.TickUntil(func() bool { return newLeader() >= 0 && c.Member(old).Mode() != "leader" }, 500) {
		t.Fatalf("after isolating member %d: new leader %d, old one is %s", old+1, newLeader()+1, c.Member(old).Mode())
	}
	lead := newLeader()
	create(t, c.Addr(lead), "/majority")
	c.Heal()
	if !c.TickUntil(func() bool { return has(c, old, "/majority") }, 100) {
		t.Fatalf("healed member %d did not catch up", old+1)
	}

	c.Stop(lead)
	if !c.TickUntil(leaderNow(c), 500) {
		t.Fatal("no leader after stopping the leader")
	}
	create(t, c.Addr(c.CurrentLeader()), "/two")

	for i := range 3 {
		c.Stop(i)
	}
	for i := range 3 {
		c.Restart(i)
	}
	if !c.TickUntil(leaderNow(c), 500) {
		t.Fatal("no leader after restarting every member")
	}
	create(t, c.Addr(c.CurrentLeader()), "/after")
	for _, p := range []string{"/before", "/majority", "/two", "/after"} {
		if !c.TickUntil(func() bool { return has(c, 0, p) && has(c, 1, p) && has(c, 2, p) }, 50) {
			t.Fatalf("%s is not on every member", p)
		}
	}
}

// TestLockstepClockIsolated: with the default clock an isolated follower
// goes on ticking, so it notices it lost its leader (and, with
// readonlymode, serves read-only), and finds it again once healed.
func TestLockstepClockIsolated(t *testing.T) {
	c := zktest.StartCluster(t, 3, zktest.WithOptions(func(o *server.Options) { o.ReadOnlyMode = true }))
	f := (c.Leader() + 1) % 3
	c.Isolate(f)
	waitMode(t, c, f, "read-only")
	c.Heal()
	waitMode(t, c, f, "follower")
}

func waitMode(t *testing.T, c *zktest.Cluster, i int, mode string) {
	t.Helper()
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	deadline := time.After(30 * time.Second)
	for c.Member(i).Mode() != mode {
		select {
		case <-poll.C:
		case <-deadline:
			t.Fatalf("member %d is %s, not %s", i+1, c.Member(i).Mode(), mode)
		}
	}
}
