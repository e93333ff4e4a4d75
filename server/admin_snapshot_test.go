package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zkdata"
	"github.com/zkgo/zkgo/zktest"
)

// snapshotGet asks srv's AdminServer for a snapshot with the given
// Authorization header ("" for none).
func snapshotGet(t *testing.T, srv *server.Server, query, auth string) (*http.Response, []byte) {
	t.Helper()
	return adminRequest(t, srv, http.MethodGet, "/commands/snapshot"+query, auth, nil)
}

// adminRequest sends one request to srv's AdminServer, with the given
// Authorization header ("" for none) and body, and returns the response
// with its body read.
func adminRequest(t *testing.T, srv *server.Server, method, path, auth string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+srv.AdminAddr().String()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

// The snapshot command (ZooKeeper 3.9's) streams the tree as a ZooKeeper
// snapshot to an identity with every permission on / — each checked on
// its own: READ from world:anyone is not enough (CVE-2025-58457) — and
// answers 401 without an identity, 429 within the rate limit and 503
// when it is switched off.
func TestAdminSnapshot(t *testing.T) {
	var limit time.Duration = time.Hour
	zs := zktest.Start(t, withAdmin(func(o *server.Options) {
		o.AdminSnapshot, o.AdminRateLimit = true, limit
		o.SuperDigest = acl.DigestID("super", "secret")
	}))
	srv := zs.Server
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zk.Connect(ctx, zs.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"/a", "/a/b", "/c"} {
		if _, err := c.Create(ctx, p, []byte("data of "+p), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	// / : everything for alice, reading for everyone.
	root := []zk.ACL{
		{Perms: zk.PermAll, ID: zk.Id{Scheme: "digest", ID: acl.DigestID("alice", "pw")}},
		{Perms: zk.PermRead, ID: zk.Id{Scheme: "world", ID: "anyone"}},
	}
	if _, err := c.SetACL(ctx, "/", root, -1); err != nil {
		t.Fatal(err)
	}

	if resp, _ := snapshotGet(t, srv, "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no identity: %s", resp.Status)
	}
	if resp, body := snapshotGet(t, srv, "", "digest bob:pw"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("bob, who may only read /: %s %s", resp.Status, body)
	}
	resp, body := snapshotGet(t, srv, "?streaming=true", "digest alice:pw")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("alice: %s %s", resp.Status, body)
	}
	zxid, err := strconv.ParseInt(strings.TrimPrefix(resp.Header.Get("last_zxid"), "0x"), 16, 64)
	if err != nil || resp.Header.Get("snapshot_size") != strconv.Itoa(len(body)) {
		t.Fatalf("headers %v (body %d bytes)", resp.Header, len(body))
	}
	im, err := zkdata.ReadSnapshot(bytes.NewReader(body), zxid, zkdata.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := im.Node("/a/b"); !ok || string(n.Data) != "data of /a/b" {
		t.Fatalf("/a/b in the snapshot: %v %q", ok, n.Data)
	}
	if n, ok := im.Node("/"); !ok || len(n.ACL) != 2 {
		t.Fatalf("/ in the snapshot: %v %v", ok, n.ACL)
	}

	// One per interval, whoever asks (the super user included).
	if resp, _ := snapshotGet(t, srv, "", "digest super:secret"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a second snapshot within the rate limit: %s", resp.Status)
	}

	off := zktest.Start(t, withAdmin(func(o *server.Options) { o.AdminSnapshot = false }))
	if resp, _ := snapshotGet(t, off.Server, "", "digest alice:pw"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("switched off: %s", resp.Status)
	}
}

// A snapshot taken while clients write is the tree at the zxid it names:
// every key holds the last value written at or before that zxid, and
// nothing written after it.
func TestAdminSnapshotUnderWrites(t *testing.T) {
	zs := zktest.Start(t, zktest.WithSuperDigest(zk.DigestID("ops", "pw")), withAdmin(func(o *server.Options) { o.AdminSnapshot, o.AdminRateLimit = true, time.Nanosecond }))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type write struct {
		value string
		zxid  int64
	}
	const writers, keys = 4, 20
	var mu sync.Mutex
	history := map[string][]write{} // per key, in zxid order (one writer per key)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		c, err := zk.Connect(ctx, zs.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("/k%d-%d", w, i%keys)
				val := fmt.Sprintf("w%d-%d", w, i)
				var zxid int64
				if i < keys {
					if _, err := c.Create(ctx, key, []byte(val), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
						t.Error(err)
						return
					}
					st, err := c.Exists(ctx, key)
					if err != nil {
						t.Error(err)
						return
					}
					zxid = st.Czxid
				} else {
					st, err := c.Set(ctx, key, []byte(val), -1)
					if err != nil {
						t.Error(err)
						return
					}
					zxid = st.Mzxid
				}
				mu.Lock()
				history[key] = append(history[key], write{val, zxid})
				mu.Unlock()
			}
		}()
	}
	var snaps [][]byte
	var zxids []int64
	for len(snaps) < 3 {
		time.Sleep(30 * time.Millisecond)
		resp, body := snapshotGet(t, zs.Server, "", "digest ops:pw")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s", resp.Status, body)
		}
		z, _ := strconv.ParseInt(strings.TrimPrefix(resp.Header.Get("last_zxid"), "0x"), 16, 64)
		snaps, zxids = append(snaps, body), append(zxids, z)
	}
	close(stop)
	wg.Wait()
	for i, body := range snaps {
		im, err := zkdata.ReadSnapshot(bytes.NewReader(body), zxids[i], zkdata.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for key, ws := range history {
			want, wantOK := "", false
			for _, w := range ws {
				if w.zxid <= zxids[i] {
					want, wantOK = w.value, true
				}
			}
			n, ok := im.Node(key)
			if ok != wantOK || (ok && string(n.Data) != want) {
				t.Fatalf("snapshot %d at zxid %#x: %s = %q (present %v), want %q (present %v)", i, zxids[i], key, n.Data, ok, want, wantOK)
			}
			checked++
		}
		t.Logf("snapshot %d at zxid %#x: %d keys as of that zxid", i, zxids[i], checked)
	}
}
