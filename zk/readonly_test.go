package zk

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zktest"
)

// TestReadOnlyServer: a Conn that allows read-only mode is served by a
// read-only server (reads work, writes fail with ErrNotReadOnly), finds the
// read-write server in the background and moves there.
func TestReadOnlyServer(t *testing.T) {
	ro := zktest.Start(t)
	rw := zktest.Start(t)
	ro.SetReadOnly(true)
	ctx := testCtx(t)

	// A client that does not allow read-only mode is refused by the
	// read-only server and ends up on the other one.
	plain := connect(t, ro.Addr()+","+rw.Addr(), WithHostShuffle(false))
	if plain.Server() != rw.Addr() || plain.State() != StateConnected {
		t.Fatalf("plain client on %s in %v, want %s Connected", plain.Server(), plain.State(), rw.Addr())
	}
	if _, err := plain.Create(ctx, "/ro", []byte("x"), openACL, proto.ModePersistent); err != nil {
		t.Fatal(err)
	}

	// The read-only server alone: reads, no writes.
	block := &dialGate{closed: rw.Addr()}
	c := connect(t, ro.Addr()+","+rw.Addr(), WithHostShuffle(false), WithReadOnly(true), WithDialer(block.dial))
	rec := recordStates(c)
	if c.State() != StateReadOnly || c.Server() != ro.Addr() {
		t.Fatalf("state %v on %s, want ReadOnly on %s", c.State(), c.Server(), ro.Addr())
	}
	roSession := c.SessionID()
	if _, _, err := c.Children(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Create(ctx, "/x", nil, openACL, proto.ModePersistent)
	wantErr(t, err, ErrNotReadOnly)
	_, err = c.Sync(ctx, "/")
	wantErr(t, err, ErrNotReadOnly)
	_, err = c.Multi(ctx, CheckOp("/", -1))
	wantErr(t, err, ErrNotReadOnly)
	if ans, err := FourLetterWord(ctx, ro.Addr(), "isro"); err != nil || ans != "ro" {
		t.Fatalf("isro = %q, %v", ans, err)
	}

	// Let the background search reach the read-write server.
	block.open()
	rec.wait(t, 0, StateReconnected)
	if c.Server() != rw.Addr() {
		t.Fatalf("moved to %s, want %s", c.Server(), rw.Addr())
	}
	if c.SessionID() == roSession {
		t.Fatalf("kept the read-only server's local session 0x%x", roSession)
	}
	if _, err := c.Create(ctx, "/x", nil, openACL, proto.ModePersistent); err != nil {
		t.Fatal(err)
	}
	// From now on the session is resumed, never replaced: a read-write
	// server has seen it.
	sid := c.SessionID()
	rw.Server.SetReadOnly(true)
	rw.Server.SetReadOnly(false)
	from := rec.wait(t, 0, StateSuspended)
	rec.wait(t, from, StateReconnected)
	if c.SessionID() != sid {
		t.Fatalf("session changed from 0x%x to 0x%x", sid, c.SessionID())
	}
}

// TestReadOnlyToggle: when the read-only server becomes read-write, its
// read-only clients are dropped and come back read-write.
func TestReadOnlyToggle(t *testing.T) {
	srv := zktest.Start(t)
	srv.SetReadOnly(true)
	ctx := testCtx(t)
	c := connect(t, srv.Addr(), WithReadOnly(true))
	rec := recordStates(c)
	if c.State() != StateReadOnly {
		t.Fatalf("state %v", c.State())
	}
	_, err := c.Set(ctx, "/", nil, -1)
	wantErr(t, err, ErrNotReadOnly)
	srv.SetReadOnly(false)
	rec.wait(t, 0, StateReconnected)
	if _, err := c.Create(ctx, "/y", nil, openACL, proto.ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	// Back to read-only: the session made on the read-write server is
	// resumed read-only, with its ephemeral intact.
	srv.SetReadOnly(true)
	rec.wait(t, 0, StateReadOnly)
	st, err := c.Exists(ctx, "/y")
	if err != nil || st == nil || st.EphemeralOwner != c.SessionID() {
		t.Fatalf("exists /y: %+v, %v", st, err)
	}
}

// dialGate refuses dials to one address until opened.
type dialGate struct {
	mu     sync.Mutex
	closed string
}

func (g *dialGate) open() {
	g.mu.Lock()
	g.closed = ""
	g.mu.Unlock()
}

func (g *dialGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	g.mu.Lock()
	refuse := addr == g.closed
	g.mu.Unlock()
	if refuse {
		return nil, errors.New("dialGate: closed")
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// TestConfigWatchChroot: with a chroot, GetConfigW watches the real
// /zookeeper/config (not /zookeeper/config under the chroot), also after a
// reconnection.
func TestConfigWatchChroot(t *testing.T) {
	srv := zktest.Start(t, zktest.WithSuperDigest(acl.DigestID("super", "test")))
	ctx := testCtx(t)
	var nc netCtl
	nc.addr = srv.Addr()
	su := connect(t, srv.Addr(), WithAuth("digest", []byte("super:test")))
	if err := su.EnsurePath(ctx, "/app/zookeeper/config", openACL); err != nil {
		t.Fatal(err)
	}
	c := connect(t, srv.Addr()+"/app", WithDialer(nc.dial))
	_, _, ch, err := c.GetConfigW(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _, decoy, err := c.GetW(ctx, "/zookeeper/config") // /app/zookeeper/config
	if err != nil {
		t.Fatal(err)
	}
	rec := recordStates(c)
	nc.cut()
	rec.wait(t, 0, StateReconnected)
	if _, err := su.Set(ctx, "/zookeeper/config", []byte("server.1=127.0.0.1:2888:3888;2181\nversion=100000000"), -1); err != nil {
		t.Fatal(err)
	}
	ev := <-ch
	if ev.Type != EventNodeDataChanged || ev.Path != ConfigNode {
		t.Fatalf("config event %+v", ev)
	}
	if _, ok := <-ch; ok {
		t.Fatal("config watch channel not closed after its event")
	}
	select {
	case ev := <-decoy:
		t.Fatalf("watch on /app/zookeeper/config fired: %+v", ev)
	default:
	}
	data, _, err := c.GetConfig(ctx)
	if err != nil || !strings.HasPrefix(string(data), "server.1=") {
		t.Fatalf("GetConfig: %q %v", data, err)
	}
}
