package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/server"
)

// lgif parses the lgif report into its values.
func lgif(t *testing.T, m *server.Server) map[string]uint64 {
	t.Helper()
	out := m.FourLetterWord("lgif")
	vals := map[string]uint64{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, ok := strings.Cut(l, "\t")
		n, err := strconv.ParseUint(v, 10, 64)
		if !ok || err != nil {
			t.Fatalf("lgif line %q:\n%s", l, out)
		}
		vals[k] = n
	}
	return vals
}

// ClickHouse Keeper's operator words: ydld on the leader hands leadership
// to another voter (refused on a follower), rqld on a follower takes it,
// csnp takes a snapshot now, lgif reports the log.
func TestLeadershipWords(t *testing.T) {
	c := startCluster(t, 3, 0)
	lead := c.createOnLeader("/x", "1")
	follower := (lead + 1) % 3
	if got := c.members[follower].FourLetterWord("ydld"); got != "Failed to yield leadership request to leader." {
		t.Errorf("ydld on a follower: %q", got)
	}
	if got := c.members[lead].FourLetterWord("ydld"); got != "Sent yield leadership request to leader." {
		t.Fatalf("ydld on the leader: %q", got)
	}
	if now := c.leader(); now == lead {
		t.Fatal("the leader still leads after ydld")
	}
	c.createOnLeader("/y", "2") // the new leader takes writes
	if got := c.members[lead].FourLetterWord("rqld"); got != "Sent leadership request to leader." {
		t.Fatalf("rqld on the old leader: %q", got)
	}
	if now := c.leader(); now != lead {
		t.Fatalf("server.%d leads after server.%d's rqld", now+1, lead+1)
	}
	// csnp: a snapshot at least at the index it names.
	before := lgif(t, c.members[lead])
	out := c.members[lead].FourLetterWord("csnp")
	idx, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(out, "Snapshot creation scheduled with last committed log index "), "."), 10, 64)
	if err != nil {
		t.Fatalf("csnp: %q", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for lgif(t, c.members[lead])["last_snapshot_idx"] < idx {
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot at %d after csnp: lgif %v (before %v)", idx, lgif(t, c.members[lead]), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	li := lgif(t, c.members[lead])
	for _, k := range []string{"first_log_idx", "first_log_term", "last_log_idx", "last_log_term", "last_committed_log_idx",
		"leader_committed_log_idx", "target_committed_log_idx", "last_snapshot_idx"} {
		if _, ok := li[k]; !ok {
			t.Errorf("lgif lacks %s: %v", k, li)
		}
	}
	if li["last_log_idx"] < li["last_committed_log_idx"] || li["first_log_idx"] > li["last_log_idx"]+1 {
		t.Errorf("lgif: %v", li)
	}
}

// A leader that is shut down (zkgo server on SIGTERM) hands leadership
// over first: when Shutdown returns, the member it named leads already,
// and the two left take writes without an election.
func TestShutdownHandsOverLeadership(t *testing.T) {
	logs := []*lockedBuffer{{}, {}, {}}
	c := startCluster(t, 3, 0, func(o *server.Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs[o.ServerID-1], &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	lead := c.createOnLeader("/x", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.members[lead].Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	c.members[lead] = nil
	if !strings.Contains(logs[lead].String(), "handed leadership over before stopping") {
		t.Fatalf("no handover logged:\n%s", tail(logs[lead].String()))
	}
	leaders := 0
	for i, m := range c.members {
		if m != nil && m.Mode() == "leader" {
			leaders++
			if !strings.Contains(logs[i].String(), "raft leader") {
				t.Errorf("server.%d leads without saying so", i+1)
			}
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders right after the old one's Shutdown returned", leaders)
	}
	c.createOnLeader("/y", "2")
}

// The AdminServer's yield_leadership changes who leads: it needs the
// identity the snapshot command needs; log_info is for anyone.
func TestAdminYieldLeadership(t *testing.T) {
	c := startCluster(t, 3, 0, func(o *server.Options) {
		o.AdminAddr, o.AdminCommandURL = "127.0.0.1:0", "/commands"
		o.SuperDigest = acl.DigestID("super", "secret")
	})
	lead := c.createOnLeader("/x", "1")
	get := func(path, auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+c.members[lead].AdminAddr().String()+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/commands/log_info", ""); code != http.StatusOK || !strings.Contains(body, `"last_log_idx"`) {
		t.Fatalf("log_info: %d %s", code, body)
	}
	if code, _ := get("/commands/yield_leadership", ""); code != http.StatusUnauthorized {
		t.Fatalf("yield_leadership without an identity: %d", code)
	}
	if code, _ := get("/commands/ydld", "digest made:up"); code != http.StatusForbidden {
		t.Fatalf("ydld with a made-up identity: %d", code)
	}
	if c.leader() != lead {
		t.Fatal("leadership moved without an authorized request")
	}
	code, body := get("/commands/yield_leadership", "digest super:secret")
	if code != http.StatusOK || !strings.Contains(body, `"leader"`) {
		t.Fatalf("yield_leadership as super: %d %s", code, body)
	}
	if c.leader() == lead {
		t.Fatal("the leader still leads")
	}
}
