package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zk"
)

// restorePost posts body to srv's restore command with the given
// Authorization header ("" for none).
func restorePost(t *testing.T, srv *server.Server, auth string, body []byte) (*http.Response, []byte) {
	t.Helper()
	if body == nil {
		body = []byte{} // an empty body, still posted as a snapshot
	}
	return adminRequest(t, srv, http.MethodPost, "/commands/restore", auth, body)
}

// The restore command (ZooKeeper 3.9's) on a standalone member: refused
// without the snapshot command's identity, for a body that is not a
// snapshot (nothing changes, the member serves on), and when switched
// off; with it, the member answers the snapshot's last zxid and stops
// with ErrRestored, and started again on the same data directory it
// serves the snapshot's state — the writes made after the snapshot are
// gone, the old data is kept aside — and takes writes again.
func TestAdminRestore(t *testing.T) {
	dir := t.TempDir()
	opts := server.Options{Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", DataDir: dir, NoSync: true,
		TickTime: 100 * time.Millisecond, AdminSnapshot: true, AdminRestore: true, AdminRateLimit: time.Millisecond,
		SuperDigest: acl.DigestID("super", "secret"), Logger: slog.New(slog.DiscardHandler)}
	start := func(o server.Options) *server.Server {
		t.Helper()
		srv, err := server.New(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		return srv
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(srv *server.Server) *zk.Conn {
		t.Helper()
		c, err := zk.Connect(ctx, srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	create := func(c *zk.Conn, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := c.Create(ctx, fmt.Sprintf("/r/%02d", i), nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
				t.Fatal(err)
			}
		}
	}
	const super = "digest super:secret"
	srv := start(opts)
	c := connect(srv)
	if _, err := c.Create(ctx, "/r", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	create(c, 0, 10)
	resp, snap := snapshotGet(t, srv, "", super)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("snapshot: %s %s", resp.Status, snap)
	}
	snapZxid, err := strconv.ParseInt(resp.Header.Get("last_zxid"), 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	create(c, 10, 20)

	if resp, body := restorePost(t, srv, "", snap); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no identity: %s %s", resp.Status, body)
	}
	if resp, body := restorePost(t, srv, "digest mallory:pw", snap); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an identity without every permission on /: %s %s", resp.Status, body)
	}
	for _, bad := range [][]byte{nil, []byte("not a snapshot"), snap[:len(snap)/2]} {
		if resp, body := restorePost(t, srv, super, bad); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("a body of %d bytes that is no snapshot: %s %s", len(bad), resp.Status, body)
		}
		time.Sleep(2 * time.Millisecond) // the rate limit
	}
	if _, err := os.Stat(filepath.Join(dir, "zkgo.restore")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused restore staged something: %v", err)
	}
	if _, err := c.Create(ctx, "/still-serving", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatalf("after refused restores: %v", err)
	}

	resp, body := restorePost(t, srv, super, snap)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("restore: %s %s", resp.Status, body)
	}
	var answer struct {
		LastZxid int64   `json:"last_zxid"`
		Command  string  `json:"command"`
		Error    *string `json:"error"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.LastZxid != snapZxid || answer.Command != "restore" || answer.Error != nil {
		t.Fatalf("restore's answer %s (%v); want last_zxid %d", body, err, snapZxid)
	}
	select {
	case <-srv.Done():
	case <-ctx.Done():
		t.Fatal("the server did not stop after the restore")
	}
	srv.Close()
	if !errors.Is(srv.Err(), server.ErrRestored) {
		t.Fatalf("Err after the restore: %v", srv.Err())
	}

	srv = start(opts)
	c = connect(srv)
	kids, _, err := c.Children(ctx, "/r")
	if err != nil || len(kids) != 10 {
		t.Fatalf("after the restore /r has %d children (%v), want the snapshot's 10", len(kids), err)
	}
	if st, err := c.Exists(ctx, "/still-serving"); err != nil || st != nil {
		t.Fatalf("a node created after the snapshot survived the restore: %v %v", st, err)
	}
	create(c, 20, 25)
	if kids, _, err := c.Children(ctx, "/r"); err != nil || len(kids) != 15 {
		t.Fatalf("writes after the restore: %d children, %v", len(kids), err)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, "zkgo.before-restore-*"))
	if len(aside) != 1 {
		t.Fatalf("the old data kept aside: %v", aside)
	}
	if _, err := os.Stat(filepath.Join(dir, "zkgo.restore")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the staged snapshot was not removed: %v", err)
	}

	// Switched off: 503, and the member serves on.
	off := opts
	off.AdminRestore = false
	srv.Close()
	srv = start(off)
	if resp, body := restorePost(t, srv, super, snap); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("admin.restore.enabled=false: %s %s", resp.Status, body)
	}
	if kids, _, err := connect(srv).Children(ctx, "/r"); err != nil || len(kids) != 15 {
		t.Fatalf("a restart keeps the restored state: %d children, %v", len(kids), err)
	}
}
