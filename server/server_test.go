package server_test

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zktest"
)

func dial(t *testing.T, addr string) *rawzk.Conn {
	t.Helper()
	c, err := rawzk.Dial(addr, rawzk.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(t *testing.T, c *rawzk.Conn, op proto.OpCode, req, rsp proto.Record) proto.ErrCode {
	t.Helper()
	h, err := c.Call(op, req, rsp)
	if err != nil {
		t.Fatalf("%v: %v", op, err)
	}
	return h.Err
}

// waitClosed waits until the server closes c (read returns EOF or reset).
func waitClosed(t *testing.T, c *rawzk.Conn) {
	t.Helper()
	nc := c.NetConn()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("server did not close the connection")
		}
		return
	}
}

// A read pipelined behind a write of the same session sees the write
// (FIFO client order), and replies come back in request order.
func TestPipelinedFIFO(t *testing.T) {
	srv := zktest.Start(t)
	c := dial(t, srv.Addr())
	const n = 200
	for i := 0; i < n; i++ {
		if _, err := c.Send(proto.OpSetData, &proto.SetDataRequest{Path: "/", Data: []byte{byte(i)}, Version: -1}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Send(proto.OpGetData, &proto.GetDataRequest{Path: "/"}); err != nil {
			t.Fatal(err)
		}
	}
	var lastXid int32
	for i := 0; i < n; i++ {
		var sr proto.SetDataResponse
		h, err := c.Recv(&sr)
		if err != nil || h.Err != proto.ErrOk || h.Xid <= lastXid {
			t.Fatalf("set %d: %+v %v", i, h, err)
		}
		lastXid = h.Xid
		var gr proto.GetDataResponse
		h, err = c.Recv(&gr)
		if err != nil || h.Err != proto.ErrOk || h.Xid <= lastXid {
			t.Fatalf("get %d: %+v %v", i, h, err)
		}
		lastXid = h.Xid
		if len(gr.Data) != 1 || gr.Data[0] != byte(i) || gr.Stat.Version != int32(i+1) {
			t.Fatalf("get %d saw data %v version %d", i, gr.Data, gr.Stat.Version)
		}
	}
}

// A notification caused by a change reaches the watching client before the
// reply to its next request that can observe the change.
func TestWatchBeforeLaterReply(t *testing.T) {
	srv := zktest.Start(t)
	w := dial(t, srv.Addr())
	other := dial(t, srv.Addr())
	if code := call(t, w, proto.OpCreate, &proto.CreateRequest{Path: "/w", ACL: openACL}, nil); code != proto.ErrOk {
		t.Fatal(code)
	}
	for i := 0; i < 50; i++ {
		var gr proto.GetDataResponse
		if code := call(t, w, proto.OpGetData, &proto.GetDataRequest{Path: "/w", Watch: true}, &gr); code != proto.ErrOk {
			t.Fatal(code)
		}
		if code := call(t, other, proto.OpSetData, &proto.SetDataRequest{Path: "/w", Data: []byte{byte(i)}, Version: -1}, nil); code != proto.ErrOk {
			t.Fatal(code)
		}
		// The read observes the new data, so the event must already be here.
		w.Events = nil
		if code := call(t, w, proto.OpGetData, &proto.GetDataRequest{Path: "/w"}, &gr); code != proto.ErrOk {
			t.Fatal(code)
		}
		if len(w.Events) != 1 || w.Events[0].Type != proto.EventNodeDataChanged || w.Events[0].Path != "/w" {
			t.Fatalf("round %d: events before the reply: %+v", i, w.Events)
		}
	}
}

func TestSessionExpiryDeletesEphemerals(t *testing.T) {
	srv := zktest.Start(t)
	owner := dial(t, srv.Addr())
	watcher := dial(t, srv.Addr())
	if code := call(t, owner, proto.OpCreate, &proto.CreateRequest{Path: "/eph", ACL: openACL, Flags: proto.ModeEphemeral}, nil); code != proto.ErrOk {
		t.Fatal(code)
	}
	var er proto.ExistsResponse
	if code := call(t, watcher, proto.OpExists, &proto.ExistsRequest{Path: "/eph", Watch: true}, &er); code != proto.ErrOk {
		t.Fatal(code)
	}
	if er.Stat.EphemeralOwner != owner.Session.SessionID {
		t.Fatalf("ephemeralOwner %x, want %x", er.Stat.EphemeralOwner, owner.Session.SessionID)
	}
	srv.ExpireSession(owner.Session.SessionID)
	ev, err := watcher.RecvEvent(10 * time.Second)
	if err != nil || ev.Type != proto.EventNodeDeleted || ev.Path != "/eph" {
		t.Fatalf("event %+v %v", ev, err)
	}
	waitClosed(t, owner)
	// Resuming the expired session is refused with a zero timeout.
	_, err = rawzk.Dial(srv.Addr(), rawzk.Options{SessionID: owner.Session.SessionID, Passwd: owner.Session.Passwd})
	if !errors.Is(err, rawzk.ErrSessionExpired) {
		t.Fatalf("resume expired session: %v", err)
	}
}

// The session times out on its own when its client goes silent.
func TestSessionTimeout(t *testing.T) {
	srv := zktest.Start(t)
	c, err := rawzk.Dial(srv.Addr(), rawzk.Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Session.TimeOut; got != 200 {
		t.Fatalf("negotiated timeout %d, want 200 (min session timeout)", got)
	}
	if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/silent", ACL: openACL, Flags: proto.ModeEphemeral}, nil); code != proto.ErrOk {
		t.Fatal(code)
	}
	waitClosed(t, c) // no pings: the server expires the session and closes
	w := dial(t, srv.Addr())
	if code := call(t, w, proto.OpExists, &proto.ExistsRequest{Path: "/silent"}, nil); code != proto.ErrNoNode {
		t.Fatalf("ephemeral survived its session: %v", code)
	}
}

func TestResumeSessionWithPassword(t *testing.T) {
	srv := zktest.Start(t)
	c := dial(t, srv.Addr())
	c.Close()
	c2, err := rawzk.Dial(srv.Addr(), rawzk.Options{SessionID: c.Session.SessionID, Passwd: c.Session.Passwd})
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	bad := append([]byte(nil), c.Session.Passwd...)
	bad[0] ^= 1
	if _, err := rawzk.Dial(srv.Addr(), rawzk.Options{SessionID: c.Session.SessionID, Passwd: bad}); !errors.Is(err, rawzk.ErrSessionExpired) {
		t.Fatalf("wrong password accepted: %v", err)
	}
}

func TestTimeoutNegotiation(t *testing.T) {
	srv := zktest.Start(t) // tick 100ms: min 200ms, max 2s
	for _, tt := range []struct {
		ask  time.Duration
		want int32
	}{{10 * time.Millisecond, 200}, {time.Second, 1000}, {time.Minute, 2000}} {
		c, err := rawzk.Dial(srv.Addr(), rawzk.Options{Timeout: tt.ask})
		if err != nil {
			t.Fatal(err)
		}
		if c.Session.TimeOut != tt.want {
			t.Errorf("asked %v, got %d ms, want %d", tt.ask, c.Session.TimeOut, tt.want)
		}
		c.CloseSession()
	}
}

func TestRefuseClientWithNewerZxid(t *testing.T) {
	srv := zktest.Start(t)
	if _, err := rawzk.Dial(srv.Addr(), rawzk.Options{LastZxid: 1 << 40}); err == nil {
		t.Fatal("a client that has seen a newer zxid was accepted")
	}
}

func TestUnknownOpcodeClosesConnection(t *testing.T) {
	srv := zktest.Start(t)
	c := dial(t, srv.Addr())
	h, err := c.Call(proto.OpCode(999), nil, nil)
	if err != nil || h.Err != proto.ErrUnimplemented {
		t.Fatalf("reply %+v %v", h, err)
	}
	waitClosed(t, c)
}

func TestFrameOverMaxBufferClosesConnection(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.MaxBuffer = 1024 }))
	c := dial(t, srv.Addr())
	if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/small", Data: make([]byte, 900), ACL: openACL}, nil); code != proto.ErrOk {
		t.Fatal(code)
	}
	if _, err := c.Send(proto.OpCreate, &proto.CreateRequest{Path: "/big", Data: make([]byte, 2000), ACL: openACL}); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, c)
}

func TestHugeLengthFieldsAreRejected(t *testing.T) {
	srv := zktest.Start(t)
	c := dial(t, srv.Addr())
	// A create whose path length claims 1 GiB: a marshalling error, and the
	// server must not allocate it.
	var e jute.Encoder
	(&proto.RequestHeader{Xid: 1, Type: proto.OpCreate}).Encode(&e)
	e.WriteInt(1 << 30)
	e.WriteString("/x")
	if err := c.SendRaw(e.Bytes()); err != nil {
		t.Fatal(err)
	}
	h, err := c.Recv(nil)
	if err != nil || h.Err != proto.ErrMarshallingError {
		t.Fatalf("reply %+v %v", h, err)
	}
	// The connection still works.
	if code := call(t, c, proto.OpExists, &proto.ExistsRequest{Path: "/"}, &proto.ExistsResponse{}); code != proto.ErrOk {
		t.Fatal(code)
	}
}

func TestMaxClientCnxns(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.MaxClientCnxns = 2 }))
	dial(t, srv.Addr())
	dial(t, srv.Addr())
	if c, err := rawzk.Dial(srv.Addr(), rawzk.Options{}); err == nil {
		c.Close()
		t.Fatal("third connection from one IP accepted with maxClientCnxns=2")
	}
}

func fourLetter(t *testing.T, addr, cmd string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte(cmd))
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFourLetterWords(t *testing.T) {
	srv := zktest.Start(t)
	c := dial(t, srv.Addr())
	call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/e", ACL: openACL, Flags: proto.ModeEphemeral}, nil)
	call(t, c, proto.OpGetData, &proto.GetDataRequest{Path: "/e", Watch: true}, &proto.GetDataResponse{})
	for _, tt := range []struct{ cmd, want string }{
		{"ruok", "imok"},
		{"srvr", "Mode: standalone\n"},
		{"srvr", "Node count: 6\n"},
		{"stat", "Clients:\n"},
		{"mntr", "zk_server_state\tstandalone\n"},
		{"mntr", "zk_ephemerals_count\t1\n"},
		{"mntr", "zk_watch_count\t1\n"},
		{"isro", "rw"},
		{"wchs", "1 connections watching 1 paths\nTotal watches:1\n"},
		{"wchp", "/e\n\t0x"},
		{"cons", "sid=0x"},
		{"cons", ",lop=GETD,"}, // c's last reply
		{"dump", "\t/e\n"},
		{"conf", "tickTime=100\n"},
		{"envi", "Environment:\n"},
	} {
		if got := fourLetter(t, srv.Addr(), tt.cmd); !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q does not contain %q", tt.cmd, got, tt.want)
		}
	}
}

func TestFourLetterWhitelist(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.FourLetterWords = []string{"srvr"} }))
	if got := fourLetter(t, srv.Addr(), "ruok"); got != "ruok is not executed because it is not in the whitelist.\n" {
		t.Errorf("ruok: %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "srvr"); !strings.Contains(got, "Mode: standalone") {
		t.Errorf("srvr: %q", got)
	}
}

func TestAuthFailureClosesConnection(t *testing.T) {
	srv := zktest.Start(t)
	c := dial(t, srv.Addr())
	h, err := c.Call(proto.OpAuth, &proto.AuthPacket{Scheme: "nosuchscheme", Auth: []byte("x")}, nil)
	if err != nil || h.Err != proto.ErrAuthFailed {
		t.Fatalf("reply %+v %v", h, err)
	}
	waitClosed(t, c)

	// A request sent right behind the refused addauth is not executed
	// (ZooKeeper stops reading the connection: disableRecv).
	c = dial(t, srv.Addr())
	if err := c.SendXid(proto.XidAuth, proto.OpAuth, &proto.AuthPacket{Scheme: "nosuchscheme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(proto.OpCreate, &proto.CreateRequest{Path: "/behind", ACL: acl.OpenACLUnsafe}); err != nil {
		t.Fatal(err)
	}
	if h, err := c.Recv(nil); err != nil || h.Err != proto.ErrAuthFailed {
		t.Fatalf("reply %+v %v", h, err)
	}
	if h, err := c.Recv(nil); err == nil {
		t.Fatalf("the request behind a refused addauth was answered: %+v", h)
	}
	other := dial(t, srv.Addr())
	if code := call(t, other, proto.OpExists, &proto.ExistsRequest{Path: "/behind"}, &proto.ExistsResponse{}); code != proto.ErrNoNode {
		t.Fatalf("the create behind a refused addauth: exists says %v", code)
	}
}

// Closing the server closes client connections and returns.
func TestCloseWithClients(t *testing.T) {
	srv, err := zktest.New()
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv.Addr())
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	waitClosed(t, c)
}

func TestDigestAuthDisabled(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.DisableDigestAuth = true }))
	c := dial(t, srv.Addr())
	digestACL := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "digest", ID: "u:Jq7wMyA/w2Vd5WIDAKdu4OIIFEQ="}}}
	if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/d", ACL: digestACL}, nil); code != proto.ErrInvalidACL {
		t.Fatalf("digest ACL with digest disabled: %v", code)
	}
	h, err := c.Call(proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}, nil)
	if err != nil || h.Err != proto.ErrAuthFailed {
		t.Fatalf("addauth digest with digest disabled: %+v %v", h, err)
	}
}

// The reply to closeSession is written before the server closes the
// connection.
func TestCloseSessionReplyArrives(t *testing.T) {
	srv := zktest.Start(t)
	for i := 0; i < 100; i++ {
		c, err := rawzk.Dial(srv.Addr(), rawzk.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.Call(proto.OpCloseSession, nil, nil)
		if err != nil || h.Err != proto.ErrOk {
			t.Fatalf("round %d: closeSession reply %+v, %v", i, h, err)
		}
		c.Close()
	}
}
