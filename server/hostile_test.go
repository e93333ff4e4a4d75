package server_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// mntrValue returns one value of mntr.
func mntrValue(t *testing.T, addr, key string) int64 {
	t.Helper()
	for _, l := range strings.Split(fourLetter(t, addr, "mntr"), "\n") {
		if k, v, ok := strings.Cut(l, "\t"); ok && k == key {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("mntr %s = %q", key, v)
			}
			return n
		}
	}
	t.Fatalf("mntr has no %s", key)
	return 0
}

// waitMntr polls mntr until key satisfies ok, for at most 15 s.
func waitMntr(t *testing.T, addr, key string, ok func(int64) bool) int64 {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := mntrValue(t, addr, key)
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("mntr %s stayed %d", key, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Connections that never complete their handshake are closed: one that
// sends nothing, one that sends part of a ConnectRequest, after the
// handshake timeout; one that announces a frame larger than any
// ConnectRequest, at once.
func TestHandshakeTimeout(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.HandshakeTimeout = 300 * time.Millisecond
		o.FourLetterWords = []string{"*"}
	}))
	half := make([]byte, 4+10)
	binary.BigEndian.PutUint32(half, 45)
	huge := binary.BigEndian.AppendUint32(nil, 1<<20)
	for name, send := range map[string][]byte{"silent": nil, "half a ConnectRequest": half, "a 1 MiB connect frame": huge} {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := nc.Write(send); err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := nc.Read(make([]byte, 16)); err == nil || isTimeout(err) {
			t.Errorf("%s: the server did not close the connection (read %d bytes, %v)", name, n, err)
		}
	}
	// A client that completes its handshake keeps its connection past
	// the timeout.
	c := dial(t, srv.Addr())
	time.Sleep(400 * time.Millisecond)
	if code := call(t, c, proto.OpExists, &proto.ExistsRequest{Path: "/"}, &proto.ExistsResponse{}); code != proto.ErrOk {
		t.Fatalf("exists after the handshake timeout: %v", code)
	}
}

// waitReadsStop waits until the server reads no more requests: its count
// of received requests holds still for 300 ms.
func waitReadsStop(t *testing.T, addr string) {
	t.Helper()
	last, still := int64(-1), time.Now()
	for deadline := time.Now().Add(15 * time.Second); time.Since(still) < 300*time.Millisecond; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server kept reading")
		}
		if v := mntrValue(t, addr, "zk_packets_received"); v != last {
			last, still = v, time.Now()
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// A client that pipelines reads of a large znode and does not read the
// replies is held back: the server stops reading its requests once its
// queued output passes MaxQueuedBytes, the queue stays near that bound,
// and every reply arrives, in order, once the client reads.
func TestBackpressureBoundsQueuedBytes(t *testing.T) {
	const bound = 256 << 10
	const size, n = 512 << 10, 400
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.MaxQueuedBytes = bound
		o.MaxSessionTimeout = time.Minute
		o.FourLetterWords = []string{"*"}
	}))
	data := bytes.Repeat([]byte("x"), size)
	// A session timeout longer than the test: a client that takes no
	// bytes for a session timeout is closed (the write deadline).
	c, err := rawzk.Dial(srv.Addr(), rawzk.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/big", Data: data, ACL: openACL}, nil); code != proto.ErrOk {
		t.Fatal(code)
	}
	before := mntrValue(t, srv.Addr(), "zk_packets_received")
	// The requests are sent from another goroutine (they fit in the
	// socket buffers, but the test must not depend on it); it hands the
	// xids over when done.
	sent := make(chan []int32, 1)
	go func() {
		xids := make([]int32, 0, n)
		for range n {
			xid, err := c.Send(proto.OpGetData, &proto.GetDataRequest{Path: "/big"})
			if err != nil {
				break
			}
			xids = append(xids, xid)
		}
		sent <- xids
	}()
	// Without backpressure the server reads all n within milliseconds.
	waitReadsStop(t, srv.Addr())
	if v := mntrValue(t, srv.Addr(), "zkgo_throttled_connections"); v != 1 {
		t.Fatalf("%d connections throttled, want 1", v)
	}
	queued := mntrValue(t, srv.Addr(), "zkgo_queued_bytes")
	if max := int64(bound + size + 1024); queued > max {
		t.Errorf("queued %d bytes while throttled, bound %d (+ one reply)", queued, max)
	}
	read := mntrValue(t, srv.Addr(), "zk_packets_received") - before
	if read >= n {
		t.Errorf("the server read all %d requests of a client that reads nothing", read)
	}
	t.Logf("throttled after reading %d of %d requests; %d bytes queued (%v)", read, n, queued, time.Since(start))
	got := make([]int32, 0, n)
	for i := 0; i < n; i++ {
		var gr proto.GetDataResponse
		h, err := c.Recv(&gr)
		if err != nil || h.Err != proto.ErrOk || len(gr.Data) != size {
			t.Fatalf("reply %d: %+v, %d bytes, %v", i, h, len(gr.Data), err)
		}
		got = append(got, h.Xid)
	}
	if xids := <-sent; !slices.Equal(got, xids) {
		t.Fatalf("replies' xids %v, requests' %v", got, xids)
	}
	waitMntr(t, srv.Addr(), "zkgo_throttled_connections", func(v int64) bool { return v == 0 })
}

// A client that stops reading keeps neither its connection nor the
// queued replies once its session ends: the connection is closed even
// though its writer is blocked on a full socket.
func TestStuckClientClosedWhenSessionEnds(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.MaxSessionTimeout = time.Minute
		o.FourLetterWords = []string{"*"}
	}))
	data := bytes.Repeat([]byte("y"), 512<<10)
	// A long session: neither its expiry nor the write deadline (a
	// session timeout) closes the connection during the test.
	c, err := rawzk.Dial(srv.Addr(), rawzk.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/big", Data: data, ACL: openACL}, nil); code != proto.ErrOk {
		t.Fatal(code)
	}
	for i := 0; i < 200; i++ {
		if _, err := c.Send(proto.OpGetData, &proto.GetDataRequest{Path: "/big"}); err != nil {
			t.Fatal(err)
		}
	}
	// The reader waits on backpressure, the writer on a full socket.
	waitReadsStop(t, srv.Addr())
	if v := mntrValue(t, srv.Addr(), "zkgo_throttled_connections"); v != 1 {
		t.Fatalf("%d connections throttled, want 1", v)
	}
	srv.ExpireSession(c.Session.SessionID)
	waitMntr(t, srv.Addr(), "zk_num_alive_connections", func(v int64) bool { return v == 0 })
	waitMntr(t, srv.Addr(), "zkgo_throttled_connections", func(v int64) bool { return v == 0 })
	if q := mntrValue(t, srv.Addr(), "zkgo_queued_bytes"); q != 0 {
		t.Fatalf("%d bytes still queued", q)
	}
}

// maxCnxns bounds the client connections of the whole server.
func TestMaxConnections(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.MaxConnections = 2 }))
	dial(t, srv.Addr())
	dial(t, srv.Addr())
	c, err := rawzk.Dial(srv.Addr(), rawzk.Options{Timeout: 2 * time.Second})
	if err == nil {
		c.Close()
		t.Fatal("a third connection was accepted with maxCnxns=2")
	}
}

// Watches re-registered with setWatches get catch-up events only for
// nodes the connection may read (the CVE-2024-23944 class): a client
// without READ on a node learns nothing of its changes that way either.
func TestSetWatchesCatchUpChecksRead(t *testing.T) {
	srv := zktest.Start(t)
	owner := dial(t, srv.Addr())
	if h, err := owner.Call(proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte("bob:secret")}, nil); err != nil || h.Err != proto.ErrOk {
		t.Fatalf("addauth: %+v %v", h, err)
	}
	bobOnly := zk.DigestACL(zk.PermAll, "bob", "secret")
	for _, p := range []string{"/sec", "/pub"} {
		a := bobOnly
		if p == "/pub" {
			a = openACL
		}
		if code := call(t, owner, proto.OpCreate, &proto.CreateRequest{Path: p, Data: []byte("v"), ACL: a}, nil); code != proto.ErrOk {
			t.Fatal(code)
		}
		if code := call(t, owner, proto.OpCreate, &proto.CreateRequest{Path: p + "/kid", ACL: a}, nil); code != proto.ErrOk {
			t.Fatal(code)
		}
	}
	for _, op := range []proto.OpCode{proto.OpSetWatches, proto.OpSetWatches2} {
		c := dial(t, srv.Addr())
		paths := []string{"/sec", "/pub"}
		var req proto.Record = &proto.SetWatches{RelativeZxid: 0, DataWatches: paths, ExistWatches: paths, ChildWatches: paths}
		if op == proto.OpSetWatches2 {
			req = &proto.SetWatches2{RelativeZxid: 0, DataWatches: paths, ExistWatches: paths, ChildWatches: paths}
		}
		if code := call(t, c, op, req, nil); code != proto.ErrOk {
			t.Fatal(code)
		}
		call(t, c, proto.OpPing, nil, nil) // every catch-up event precedes this reply
		var got []string
		for _, ev := range c.Events {
			got = append(got, fmt.Sprintf("%v %s", ev.Type, ev.Path))
		}
		slices.Sort(got)
		want := []string{"EventNodeChildrenChanged /pub", "EventNodeCreated /pub", "EventNodeDataChanged /pub"}
		if !slices.Equal(got, want) {
			t.Errorf("%v: catch-up events %q, want %q (none for /sec)", op, got, want)
		}
	}
}

// A connection's watches are bounded: a request that would register more
// than MaxWatches is answered Throttled and not executed; removing
// watches makes room again.
func TestWatchesPerConnectionBounded(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.MaxWatches = 3
		o.FourLetterWords = []string{"*"}
	}))
	c := dial(t, srv.Addr())
	for i := 0; i < 3; i++ {
		if code := call(t, c, proto.OpExists, &proto.ExistsRequest{Path: fmt.Sprintf("/w%d", i), Watch: true}, &proto.ExistsResponse{}); code != proto.ErrNoNode {
			t.Fatalf("watch %d: %v", i, code)
		}
	}
	if code := call(t, c, proto.OpGetData, &proto.GetDataRequest{Path: "/", Watch: true}, &proto.GetDataResponse{}); code != proto.ErrThrottled {
		t.Fatalf("a fourth watch: %v, want Throttled", code)
	}
	if code := call(t, c, proto.OpAddWatch, &proto.AddWatchRequest{Path: "/", Mode: proto.AddWatchPersistent}, &proto.ErrorResponse{}); code != proto.ErrThrottled {
		t.Fatalf("addWatch over the bound: %v, want Throttled", code)
	}
	// Reads without a watch are not limited.
	if code := call(t, c, proto.OpGetData, &proto.GetDataRequest{Path: "/"}, &proto.GetDataResponse{}); code != proto.ErrOk {
		t.Fatalf("a read without a watch: %v", code)
	}
	if v := mntrValue(t, srv.Addr(), "zkgo_max_watches_per_connection"); v != 3 {
		t.Fatalf("mntr reports %d watches", v)
	}
	if v := mntrValue(t, srv.Addr(), "zkgo_watch_limit_refusals"); v != 2 {
		t.Fatalf("mntr reports %d refusals", v)
	}
	if code := call(t, c, proto.OpRemoveWatches, &proto.RemoveWatchesRequest{Path: "/w0", Type: proto.WatcherAny}, nil); code != proto.ErrOk {
		t.Fatal(code)
	}
	if code := call(t, c, proto.OpGetData, &proto.GetDataRequest{Path: "/", Watch: true}, &proto.GetDataResponse{}); code != proto.ErrOk {
		t.Fatalf("a watch after removing one: %v", code)
	}
}

// connection_throttle_tokens: connections beyond the bucket are closed at
// once; the server says how many in mntr.
func TestConnectionThrottle(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.ConnectionThrottleTokens = 3
		o.ConnectionThrottleFillTime = time.Hour
		o.FourLetterWords = []string{"*"}
	}))
	// Three connections take the three tokens.
	dial(t, srv.Addr())
	dial(t, srv.Addr())
	dial(t, srv.Addr())
	if c, err := rawzk.Dial(srv.Addr(), rawzk.Options{Timeout: 2 * time.Second}); err == nil {
		c.Close()
		t.Fatal("a fourth connection was accepted with 3 tokens")
	}
	if got := srv.FourLetterWord("mntr"); !strings.Contains(got, "zkgo_throttled_connections_refused\t1\n") {
		t.Fatalf("mntr:\n%s", got)
	}
}
