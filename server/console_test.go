package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/console"
	"github.com/zkgo/zkgo/console/status"
	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// The web console is served at / of the AdminServer (Options.AdminConsole)
// beside the commands: it reads the tree through the member's client
// port and the member's state through consoleStatus — this member's role,
// the sessions with their client addresses, a lock queue with its holder.
func TestAdminConsole(t *testing.T) {
	zs := zktest.Start(t, withAdmin(func(o *server.Options) { o.AdminConsole = console.ForServer(console.Config{}) }))
	srv := zs.Server
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zk.Connect(ctx, zs.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := lock.NewMutex(c, "/locks/jobs")
	g, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)

	if code, body := adminGet(t, srv, "/commands/ruok"); code != 200 || !strings.Contains(string(body), `"command"`) {
		t.Fatalf("/commands/ruok beside the console: %d %s", code, body)
	}
	code, body := adminGet(t, srv, "/")
	if code != 200 || !strings.Contains(string(body), "standalone") {
		t.Fatalf("console overview: %d %.400s", code, body)
	}
	sid := "0x" + strconv.FormatUint(uint64(c.SessionID()), 16)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body = adminGet(t, srv, "/")
		if strings.Contains(string(body), "/locks/jobs") && strings.Contains(string(body), sid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the overview does not show the lock /locks/jobs held by session %s (token %#x):\n%.2000s", sid, g.Token(), body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, body = adminGet(t, srv, "/sessions?id="+sid)
	if code != 200 || !strings.Contains(string(body), "127.0.0.1:") || !strings.Contains(string(body), "/locks/jobs/") {
		t.Fatalf("session page: %d %.2000s", code, body)
	}
	if code, _ := adminGet(t, srv, "/sessions?id=0x7777"); code != 404 {
		t.Fatalf("an unknown session's page: %d, want 404", code)
	}
}

// TestConsoleEnsembleView: the leader's console shows a member that no
// longer answers its heartbeats as unknown and unreachable (not as a
// reachable follower because its match index is close to the commit
// index), and as a reachable follower again once it is back.
func TestConsoleEnsembleView(t *testing.T) {
	c := startCluster(t, 3, 0)
	lead := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	down := (lead + 1) % 3
	want := func(what string, cond func(byID map[int64]status.Peer) bool) {
		t.Helper()
		var m status.Member
		deadline := time.Now().Add(30 * time.Second)
		for {
			var err error
			m, err = server.ConsoleMember(ctx, c.members[lead])
			byID := map[int64]status.Peer{}
			for _, p := range m.Ensemble {
				byID[p.ID] = p
			}
			if err == nil && m.Role == status.RoleLeader && len(byID) == 3 && byID[int64(lead+1)].Role == status.RoleLeader && cond(byID) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the leader's console shows %+v (err %v)", what, m, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	upFollower := func(p status.Peer) bool { return p.Role == status.RoleFollower && p.Reachable }
	want("every member up", func(byID map[int64]status.Peer) bool {
		return upFollower(byID[int64(down+1)]) && upFollower(byID[int64(3-lead-down+1)])
	})
	c.members[down].Close()
	c.members[down] = nil
	want("member down", func(byID map[int64]status.Peer) bool {
		p := byID[int64(down+1)]
		return p.Role == status.RoleUnknown && !p.Reachable && upFollower(byID[int64(3-lead-down+1)])
	})
	c.restart(down)
	want("member back", func(byID map[int64]status.Peer) bool {
		return upFollower(byID[int64(down+1)]) && upFollower(byID[int64(3-lead-down+1)])
	})
}
