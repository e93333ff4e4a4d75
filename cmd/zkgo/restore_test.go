package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/zk"
)

// ZooKeeper 3.9's restore procedure (its RestoreQuorumTest) on a
// 3-member ensemble of zkgo server processes: a snapshot from the
// leader over the AdminServer, more writes, then every member restored
// from that snapshot over its AdminServer, one after the other. Each
// member restarts itself from the snapshot; together they form a new
// ensemble that holds the snapshot's state (the later writes are gone)
// and takes writes again on every member.
func TestRestoreEnsembleFromSnapshot(t *testing.T) {
	base := t.TempDir()
	extra := "4lw.commands.whitelist=*\nadmin.rateLimiterIntervalInMS=1\nDigestAuthenticationProvider.superDigest=" + acl.DigestID("super", "secret") + "\n"
	cfgs, lines := writeEnsemble(t, base, 3, extra)
	var servers []string
	for _, l := range lines {
		_, client, _ := strings.Cut(l, ";")
		servers = append(servers, client)
	}
	m := newMemberProcs(t, cfgs)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m.startHealthy(ctx, servers, "/restore")
	adminURL := func(i int) string {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if u := adminURLRE.FindStringSubmatch(m.procs[i].log.String()); u != nil {
				return u[1]
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d logged no AdminServer", i+1)
			}
		}
	}
	admin := func(method, url string, body []byte) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "digest super:secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s %s", method, url, resp.Status, out)
		}
		return resp, out
	}
	c, err := zk.Connect(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	create := func(c *zk.Conn, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := c.Create(ctx, fmt.Sprintf("/restore/%02d", i), nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
				t.Fatal(err)
			}
		}
	}
	const n = 10
	create(c, 0, n)
	leader := -1
	for i, a := range servers {
		if mntrKey(ctx, a, "zk_server_state") == "leader" {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no leader")
	}
	resp, snap := admin(http.MethodGet, adminURL(leader)+"/snapshot?streaming=true", nil)
	t.Logf("snapshot of member %d: %d bytes at zxid %s", leader+1, len(snap), resp.Header.Get("last_zxid"))
	create(c, n, 2*n)
	c.Close()

	for i := range servers {
		_, out := admin(http.MethodPost, adminURL(i)+"/restore", snap)
		t.Logf("member %d: %s", i+1, bytes.Join(bytes.Fields(out), nil))
	}
	waitHealthy(ctx, t, servers, "the restore of every member")
	for i, a := range servers {
		if !strings.Contains(m.procs[i].log.String(), "restored from a snapshot") {
			t.Errorf("member %d did not log its restore", i+1)
		}
		one, err := zk.Connect(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := one.Sync(ctx, "/restore"); err != nil {
			t.Fatal(err)
		}
		if kids, _, err := one.Children(ctx, "/restore"); err != nil || len(kids) != n {
			t.Errorf("member %d after the restore: %d children (%v), want the snapshot's %d", i+1, len(kids), err, n)
		}
		one.Close()
	}
	c, err = zk.Connect(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	create(c, 2*n, 3*n)
	for i, a := range servers {
		one, err := zk.Connect(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := one.Sync(ctx, "/restore"); err != nil {
			t.Fatal(err)
		}
		if kids, _, err := one.Children(ctx, "/restore"); err != nil || len(kids) != 2*n {
			t.Errorf("member %d after writes on the restored ensemble: %d children (%v), want %d", i+1, len(kids), err, 2*n)
		}
		one.Close()
	}
}
