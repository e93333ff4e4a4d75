package gozk

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgo/zkgo/zktest"
)

func TestEphemeralsDeletedOnClose(t *testing.T) {
	srv, watcher := start(t)
	mustCreate(t, watcher, "/sess", nil, 0)
	owner := connect(t, srv.Addr())
	mustCreate(t, owner, "/sess/e", []byte("x"), zk.FlagEphemeral)
	seq := mustCreate(t, owner, "/sess/q-", nil, zk.FlagEphemeralSequential)
	mustCreate(t, owner, "/sess/persistent", nil, 0)

	ok, _, existsCh, err := watcher.ExistsW("/sess/e")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	_, _, dataCh, err := watcher.GetW(seq)
	if err != nil {
		t.Fatal(err)
	}
	_, _, childCh, err := watcher.ChildrenW("/sess")
	if err != nil {
		t.Fatal(err)
	}
	owner.Close()
	expectWatch(t, existsCh, zk.EventNodeDeleted, "/sess/e")
	expectWatch(t, dataCh, zk.EventNodeDeleted, seq)
	expectWatch(t, childCh, zk.EventNodeChildrenChanged, "/sess")
	mustNotExist(t, watcher, "/sess/e")
	mustNotExist(t, watcher, seq)
	mustExists(t, watcher, "/sess/persistent")
	if st := mustExists(t, watcher, "/sess"); st.NumChildren != 1 {
		t.Fatalf("/sess numChildren = %d", st.NumChildren)
	}
}

func TestSessionExpiry(t *testing.T) {
	srv, watcher := start(t)
	owner := connect(t, srv.Addr())
	sid := owner.SessionID()
	mustCreate(t, owner, "/x", nil, zk.FlagEphemeral)
	_, _, ownerWatch, err := owner.GetW("/x")
	if err != nil {
		t.Fatal(err)
	}
	ok, _, ch, err := watcher.ExistsW("/x")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	from := len(owner.Events())

	srv.ExpireSession(sid)

	expectWatch(t, ch, zk.EventNodeDeleted, "/x")
	mustNotExist(t, watcher, "/x")
	// The expired client is told: the server drops the connection, the
	// client reconnects with the old session and gets a zero session id
	// back, which go-zookeeper reports as StateExpired; its watches are
	// invalidated with ErrSessionExpired.
	i := owner.waitState(from, zk.StateExpired)
	ev := waitWatch(t, ownerWatch, "owner's watch after expiry")
	if ev.Type == zk.EventNotWatching {
		if !errors.Is(ev.Err, zk.ErrSessionExpired) {
			t.Fatalf("watch invalidated with %v, want ErrSessionExpired", ev.Err)
		}
	} else if ev.Type != zk.EventNodeDeleted {
		// ZooKeeper deletes the ephemeral as part of closing the session;
		// whether the owner still gets that notification is not specified.
		t.Fatalf("owner's watch got %+v", ev)
	}
	// go-zookeeper then starts a new session.
	owner.waitState(i, zk.StateHasSession)
	if nsid := owner.SessionID(); nsid == sid || nsid == 0 {
		t.Fatalf("new session id %#x (old %#x)", nsid, sid)
	}
	mustCreate(t, owner, "/x", nil, zk.FlagEphemeral)
	if st := mustExists(t, watcher, "/x"); st.EphemeralOwner != owner.SessionID() {
		t.Fatalf("owner = %#x, want %#x", st.EphemeralOwner, owner.SessionID())
	}
}

// TestSessionResume cuts the client's TCP connection: go-zookeeper
// reconnects with the same session id and password, the session and its
// ephemerals survive, and the watches it re-registers with setWatches fire
// for changes made while it was away (ZooKeeper compares each watched
// node's zxids with the client's last seen zxid).
func TestSessionResume(t *testing.T) {
	srv, other := start(t)
	d := &dialer{}
	t.Cleanup(d.release)
	c := connectDial(t, srv.Addr(), d.dial)
	sid := c.SessionID()

	mustCreate(t, c, "/r", nil, 0)
	mustCreate(t, c, "/r/data", []byte("0"), 0)
	mustCreate(t, c, "/r/gone", nil, 0)
	mustCreate(t, c, "/r/same", nil, 0)
	mustCreate(t, c, "/r/eph", nil, zk.FlagEphemeral)

	_, _, dataCh, err := c.GetW("/r/data")
	if err != nil {
		t.Fatal(err)
	}
	_, _, goneCh, err := c.GetW("/r/gone")
	if err != nil {
		t.Fatal(err)
	}
	_, _, sameCh, err := c.GetW("/r/same")
	if err != nil {
		t.Fatal(err)
	}
	_, _, newCh, err := c.ExistsW("/r/new")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childCh, err := c.ChildrenW("/r")
	if err != nil {
		t.Fatal(err)
	}

	from := len(c.Events())
	d.hold()
	d.cut()
	i := c.waitState(from, zk.StateDisconnected)

	// Changes while c is away (well within the 2s session timeout).
	if _, err := other.Set("/r/data", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete("/r/gone", -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, other, "/r/new", nil, 0)
	d.release()

	c.waitState(i, zk.StateHasSession)
	if c.SessionID() != sid {
		t.Fatalf("session id changed from %#x to %#x", sid, c.SessionID())
	}
	expectWatch(t, dataCh, zk.EventNodeDataChanged, "/r/data")
	expectWatch(t, goneCh, zk.EventNodeDeleted, "/r/gone")
	expectWatch(t, newCh, zk.EventNodeCreated, "/r/new")
	expectWatch(t, childCh, zk.EventNodeChildrenChanged, "/r")
	if ev, ok := pending(sameCh); ok {
		t.Fatalf("watch on unchanged node fired: %+v", ev)
	}
	// The ephemeral survived, and the unchanged node's watch is still armed.
	if st := mustExists(t, other, "/r/eph"); st.EphemeralOwner != sid {
		t.Fatalf("ephemeral owner %#x, want %#x", st.EphemeralOwner, sid)
	}
	if _, err := other.Set("/r/same", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	expectWatch(t, sameCh, zk.EventNodeDataChanged, "/r/same")
	if n := d.dials(); n != 2 {
		t.Fatalf("dialed %d times, want 2", n)
	}
}

// TestSessionHandshake checks connect-response fields with a raw client.
func TestSessionHandshake(t *testing.T) {
	srv := startServer(t)
	addr := srv.Addr()

	t.Run("timeout negotiation", func(t *testing.T) {
		// tickTime 100ms: sessions are clamped to [200ms, 2s].
		for _, tc := range []struct{ ask, want int32 }{{50, 200}, {200, 200}, {1234, 1234}, {2000, 2000}, {60000, 2000}} {
			r := rawHandshake(t, addr, tc.ask, 0, nil)
			if r.timeout != tc.want || r.sessionID == 0 || len(r.passwd) != 16 {
				t.Fatalf("ask %dms: timeout %d session %#x passwd %d bytes; want timeout %d",
					tc.ask, r.timeout, r.sessionID, len(r.passwd), tc.want)
			}
			r.nc.Close()
		}
	})

	t.Run("resume with password", func(t *testing.T) {
		c := connect(t, addr)
		mustCreate(t, c, "/h", nil, zk.FlagEphemeral)
		first := rawHandshake(t, addr, 2000, 0, nil)
		second := rawHandshake(t, addr, 2000, first.sessionID, first.passwd)
		if second.sessionID != first.sessionID || second.timeout != 2000 || string(second.passwd) != string(first.passwd) {
			t.Fatalf("resume: session %#x timeout %d, want %#x 2000", second.sessionID, second.timeout, first.sessionID)
		}
		if code, _ := second.call(opExists, pathWatchBody("/h")); code != 0 {
			t.Fatalf("exists on resumed session: code %d", code)
		}
	})

	t.Run("client ahead of server", func(t *testing.T) {
		// A client that has seen a newer zxid than the server's is refused:
		// ZooKeeper closes the connection without a response.
		nc, err := net.DialTimeout("tcp", addr, eventWait)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		r := &rawConn{t: t, nc: nc}
		var e enc
		e.int(0)
		e.long(1 << 40) // lastZxidSeen
		e.int(2000)
		e.long(0)
		e.buf(make([]byte, 16))
		r.writeFrame(e.b)
		if b, err := r.readFrame(); err == nil {
			t.Fatalf("server answered a client from the future: %x", b)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("server neither answered nor closed the connection")
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		first := rawHandshake(t, addr, 2000, 0, nil)
		bad := append([]byte(nil), first.passwd...)
		bad[0] ^= 0xff
		r := rawHandshake(t, addr, 2000, first.sessionID, bad)
		if r.sessionID != 0 || r.timeout != 0 {
			t.Fatalf("wrong password: session %#x timeout %d, want 0 0 (expired)", r.sessionID, r.timeout)
		}
		// The session itself is not harmed: the right password resumes it.
		// (ZooKeeper 3.8 does close the session's current connection
		// before it checks the password; that is not asserted here.)
		again := rawHandshake(t, addr, 2000, first.sessionID, first.passwd)
		if again.sessionID != first.sessionID {
			t.Fatalf("resume after bad attempt: session %#x, want %#x", again.sessionID, first.sessionID)
		}
		if code, _ := again.call(opExists, pathWatchBody("/")); code != 0 {
			t.Fatalf("exists on resumed session: code %d", code)
		}
	})

	t.Run("unknown session", func(t *testing.T) {
		r := rawHandshake(t, addr, 2000, 0x7eadbeef, make([]byte, 16))
		if r.sessionID != 0 || r.timeout != 0 {
			t.Fatalf("unknown session: session %#x timeout %d, want 0 0", r.sessionID, r.timeout)
		}
	})
}

// TestSessionMoveClosesOldConnection: when a session reconnects on a new
// connection, ZooKeeper closes the connection it had
// (ServerCnxnFactory.closeSession with reason CLIENT_RECONNECT, in
// processConnectRequest), so a session is never served by two connections.
func TestSessionMoveClosesOldConnection(t *testing.T) {
	srv := startServer(t)
	first := rawDial(t, srv.Addr())
	second := rawHandshake(t, srv.Addr(), 2000, first.sessionID, first.passwd)
	if second.sessionID != first.sessionID {
		t.Fatalf("resume: session %#x, want %#x", second.sessionID, first.sessionID)
	}
	if code, _ := second.call(opExists, pathWatchBody("/")); code != 0 {
		t.Fatalf("exists on resumed session: code %d", code)
	}
	// Wait less than the session timeout so an expiry cannot pass for it.
	first.nc.SetReadDeadline(time.Now().Add(time.Second))
	_, err := first.nc.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("old connection still open after the session moved to a new one")
	} else if err == nil {
		t.Fatal("old connection received data after the session moved")
	}
}

// TestAuthAfterReconnect: authentication belongs to a connection, not the
// session; go-zookeeper re-sends it after reconnecting, before any other
// request, and the resumed connection must honor it.
func TestAuthAfterReconnect(t *testing.T) {
	srv, owner := start(t)
	addAuth(t, owner, "u:p")
	if _, err := owner.Create("/priv", []byte("p"), 0, zk.DigestACL(zk.PermAll, "u", "p")); err != nil {
		t.Fatal(err)
	}
	d := &dialer{}
	c := connectDial(t, srv.Addr(), d.dial)
	addAuth(t, c, "u:p")
	sid := c.SessionID()
	from := len(c.Events())
	d.cut()
	i := c.waitState(from, zk.StateDisconnected)
	c.waitState(i, zk.StateHasSession)
	if c.SessionID() != sid {
		t.Fatalf("session changed %#x -> %#x", sid, c.SessionID())
	}
	if data, _, err := c.Get("/priv"); err != nil || string(data) != "p" {
		t.Fatalf("get after reconnect = %q, %v", data, err)
	}
}

// TestSessionTimeoutExpires lets a session lapse without pings (the raw
// client never pings) and checks its ephemeral goes away.
func TestSessionTimeoutExpires(t *testing.T) {
	srv, c := start(t)
	r := rawHandshake(t, srv.Addr(), 200, 0, nil)
	code, _ := r.call(opCreate, createBody("/lapse", nil, openACL, zk.FlagEphemeral))
	if code != 0 {
		t.Fatalf("create: code %d", code)
	}
	ok, _, ch, err := c.ExistsW("/lapse")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	expectWatch(t, ch, zk.EventNodeDeleted, "/lapse")
}

// TestServerCloseWithOpenConnection: Server.Close must not hang when
// clients are still connected.
func TestServerCloseWithOpenConnection(t *testing.T) {
	srv, err := zktest.New()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := &rawConn{t: t, nc: nc}
	var e enc
	e.int(0)
	e.long(0)
	e.int(2000)
	e.long(0)
	e.buf(make([]byte, 16))
	r.writeFrame(e.b)
	if _, err := r.readFrame(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(eventWait):
		t.Fatal("Server.Close did not return with a client connected (deadlock)")
	}
}
