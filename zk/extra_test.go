package zk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zktest"
)

func TestErrorTable(t *testing.T) {
	for code, sentinel := range codeErrors {
		err := error(newError(code, "getData", "/p"))
		if !errors.Is(err, sentinel) {
			t.Errorf("%v does not match its sentinel", code)
		}
		if ErrorCode(err) != code || ErrorCode(sentinel) != code {
			t.Errorf("ErrorCode(%v) = %v", code, ErrorCode(err))
		}
		if !errors.Is(err, &Error{Code: code}) {
			t.Errorf("%v does not match an *Error of its code", code)
		}
		for other, s2 := range codeErrors {
			if other != code && errors.Is(err, s2) {
				t.Errorf("%v matches %v", code, other)
			}
		}
	}
	if len(codeErrors) != len(sentinelCodes) {
		t.Fatal("two codes share a sentinel")
	}
	err := newError(proto.ErrCode(-999), "create", "/x")
	if !errors.Is(err, ErrUnknownCode) || !strings.Contains(err.Error(), "-999") {
		t.Fatalf("unknown code: %v", err)
	}
	if CodeError(proto.ErrOk) != nil || ErrorCode(nil) != proto.ErrOk {
		t.Fatal("ErrOk is not nil")
	}
	e := newError(proto.ErrNoNode, "getData", "/a/b")
	if got := e.Error(); got != "zk: getData /a/b: node does not exist" {
		t.Fatalf("message %q", got)
	}
	closing := wrapErr(&Error{Err: ErrClosing}, "exists", "/x")
	if !errors.Is(closing, ErrClosing) || errors.Is(closing, ErrNoNode) {
		t.Fatalf("closing: %v", closing)
	}
	if wrapErr(context.Canceled, "x", "/") != context.Canceled {
		t.Fatal("context errors must pass through")
	}
	if !IsRetryable(wrapErr(ErrConnectionLoss, "get", "/")) || IsRetryable(newError(proto.ErrNoNode, "", "")) {
		t.Fatal("IsRetryable")
	}
}

func TestValidatePath(t *testing.T) {
	good := []string{"/", "/a", "/a/b", "/a.b", "/..a", "/a../b", "/é", "/a b"}
	bad := []string{"", "a", "/a/", "//", "/a//b", "/.", "/..", "/a/.", "/a/..", "/a/./b", "/a\x00", "/a\x01", "/\u0085", "/\ufff5"}
	for _, p := range good {
		if err := validatePath(p, false); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range bad {
		if err := validatePath(p, false); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
	for _, p := range []string{"/a/", "/seq-", "/"} {
		if err := validatePath(p, true); err != nil {
			t.Errorf("sequential %q: %v", p, err)
		}
	}
}

func TestParseServers(t *testing.T) {
	hosts, root, err := parseServers([]string{"a:1, b:2/app/x"})
	if err != nil || !slices.Equal(hosts, []string{"a:1", "b:2"}) || root != "/app/x" {
		t.Fatalf("%v %q %v", hosts, root, err)
	}
	hosts, root, err = parseServers([]string{"a", "[::1]:3"})
	if err != nil || !slices.Equal(hosts, []string{"a:2181", "[::1]:3"}) || root != "" {
		t.Fatalf("%v %q %v", hosts, root, err)
	}
	if _, _, err := parseServers([]string{""}); err == nil {
		t.Fatal("empty list accepted")
	}
	if _, _, err := parseServers([]string{"a:1/x", "b:1/y"}); err == nil {
		t.Fatal("conflicting chroots accepted")
	}
	if _, err := normChroot("/bad/"); err == nil {
		t.Fatal("bad chroot accepted")
	}
	c := &Conn{chroot: "/app"}
	for in, want := range map[string]string{"/": "/app", "/x": "/app/x"} {
		if got := c.addRoot(in); got != want {
			t.Errorf("addRoot(%q) = %q", in, got)
		}
	}
	for in, want := range map[string]string{"/app": "/", "/app/x": "/x", "/apple": "/apple", "/other": "/other"} {
		if got := c.stripRoot(in); got != want {
			t.Errorf("stripRoot(%q) = %q", in, got)
		}
	}
}

func TestRetryPolicies(t *testing.T) {
	eb := ExponentialBackoff{Base: 10 * time.Millisecond, Max: 80 * time.Millisecond, MaxRetries: 5}
	for n, max := range []time.Duration{10, 20, 40, 80, 80} {
		d, ok := eb.Next(n+1, 0)
		max *= time.Millisecond
		if !ok || d < max/2 || d > max {
			t.Errorf("retry %d: %v %v", n+1, d, ok)
		}
	}
	if _, ok := eb.Next(6, 0); ok {
		t.Error("MaxRetries not honoured")
	}
	if _, ok := (NTimes{N: 2}).Next(3, 0); ok {
		t.Error("NTimes")
	}
	if _, ok := (UntilElapsed{Max: time.Second, Delay: 100 * time.Millisecond}).Next(1, 950*time.Millisecond); ok {
		t.Error("UntilElapsed")
	}
	calls := 0
	err := Retry(context.Background(), NTimes{N: 3, Delay: time.Millisecond}, func(context.Context) error {
		calls++
		return newError(proto.ErrConnectionLoss, "x", "/")
	})
	if calls != 4 || !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("retry: %d calls, %v", calls, err)
	}
	calls = 0
	err = Retry(context.Background(), NTimes{N: 3}, func(context.Context) error {
		calls++
		if calls == 2 {
			return nil
		}
		return newError(proto.ErrOperationTimeout, "x", "/")
	})
	if calls != 2 || err != nil {
		t.Fatalf("retry until success: %d %v", calls, err)
	}
	calls = 0
	err = Retry(context.Background(), NTimes{N: 3}, func(context.Context) error {
		calls++
		return newError(proto.ErrNoNode, "x", "/")
	})
	if calls != 1 || !errors.Is(err, ErrNoNode) {
		t.Fatalf("non-retryable: %d %v", calls, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = Retry(ctx, NTimes{N: 3, Delay: time.Hour}, func(context.Context) error { return newError(proto.ErrConnectionLoss, "", "") })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled retry: %v", err)
	}
}

func TestQueue(t *testing.T) {
	q := newQueue[int](2)
	for i := 0; i < 1000; i++ {
		if !q.push(i) {
			t.Fatal("push refused")
		}
	}
	q.finish()
	if q.push(1) {
		t.Fatal("push after finish")
	}
	i := 0
	for v := range q.ch {
		if v != i {
			t.Fatalf("got %d, want %d", v, i)
		}
		i++
	}
	if i != 1000 {
		t.Fatalf("%d values", i)
	}
	// stop discards and closes even with a blocked feeder.
	q = newQueue[int](1)
	for i := 0; i < 10; i++ {
		q.push(i)
	}
	q.stop()
	n := 0
	for range q.ch {
		n++
	}
	if n > 2 {
		t.Fatalf("%d values after stop", n)
	}
}

func TestSetWatchesChunks(t *testing.T) {
	c := &Conn{chroot: "/root"}
	c.watches.init(c)
	long := strings.Repeat("x", 200)
	const n = 2000
	for i := 0; i < n; i++ {
		c.watches.add(watchData, fmt.Sprintf("/%s/d%d", long, i), make(chan Event, 1))
		if i%2 == 0 {
			c.watches.add(watchChild, fmt.Sprintf("/%s/c%d", long, i), make(chan Event, 1))
		}
	}
	c.watches.addPersistent(&Watcher{path: "/p", q: newQueue[Event](1)})
	c.watches.addPersistent(&Watcher{path: "/r", recursive: true, q: newQueue[Event](1)})
	chunks := c.watches.setWatches(77)
	if len(chunks) < 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	total := 0
	var all []string
	for _, sw := range chunks {
		var e jute.Encoder
		sw.Encode(&e)
		if e.Len() >= setWatchesMax {
			t.Fatalf("chunk of %d bytes", e.Len())
		}
		if sw.RelativeZxid != 77 {
			t.Fatal("zxid")
		}
		total += len(sw.DataWatches) + len(sw.ChildWatches) + len(sw.ExistWatches) + len(sw.PersistentWatches) + len(sw.PersistentRecursiveWatches)
		all = append(all, sw.PersistentWatches...)
		all = append(all, sw.PersistentRecursiveWatches...)
		for _, p := range sw.DataWatches {
			if !strings.HasPrefix(p, "/root/") {
				t.Fatalf("path without chroot %q", p)
			}
		}
	}
	if total != n+n/2+2 {
		t.Fatalf("%d watches in chunks", total)
	}
	slices.Sort(all)
	if !slices.Equal(all, []string{"/root/p", "/root/r"}) {
		t.Fatalf("persistent %v", all)
	}
}

// TestManyWatchesReregistered re-registers more than 128 KB of watches
// (several setWatches2 requests) and checks that all fire.
func TestManyWatchesReregistered(t *testing.T) {
	e := zkgoEnv(t)
	ctx := testCtx(t)
	nc := netCtl{addr: e.addr}
	c := connect(t, e.addr, WithDialer(nc.dial))
	w := connect(t, e.addr)
	rec := recordStates(c)
	root := testRoot(t, c)
	long := strings.Repeat("n", 150)
	const n = 1200
	var ops []Op
	for i := 0; i < n; i++ {
		ops = append(ops, CreateOp(fmt.Sprintf("%s/%s%d", root, long, i), nil, openACL, proto.ModePersistent))
		if len(ops) == 200 {
			if _, err := c.Multi(ctx, ops...); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
	}
	chans := make([]<-chan Event, n)
	var wg sync.WaitGroup
	for i := range chans {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, _, ch, err := c.GetW(ctx, fmt.Sprintf("%s/%s%d", root, long, i))
			if err != nil {
				t.Error(err)
			}
			chans[i] = ch
		}(i)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	nc.block(true)
	nc.cut()
	rec.wait(t, 0, StateSuspended)
	for i := 0; i < n; i += 200 {
		var ops []Op
		for j := i; j < i+200; j++ {
			ops = append(ops, SetDataOp(fmt.Sprintf("%s/%s%d", root, long, j), []byte("x"), AnyVersion))
		}
		if _, err := w.Multi(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	nc.block(false)
	rec.wait(t, 0, StateReconnected)
	for i, ch := range chans {
		if ev := waitEvent(t, ch); ev.Type != EventNodeDataChanged || ev.Path != fmt.Sprintf("%s/%s%d", root, long, i) {
			t.Fatalf("event %+v", ev)
		}
	}
}

// TestServerExpireSession uses the zkgo server's own expiry.
func TestServerExpireSession(t *testing.T) {
	srv := zktest.Start(t)
	ctx := testCtx(t)
	c := connect(t, srv.Addr(), WithSessionTimeout(2*time.Second))
	rec := recordStates(c)
	_, ev, err := c.ExistsW(ctx, "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	srv.ExpireSession(c.SessionID())
	rec.wait(t, 0, StateLost)
	if got := rec.snapshot(); !slices.Equal(got, []State{StateSuspended, StateLost}) {
		t.Fatalf("states %v", got)
	}
	_, err = c.Exists(ctx, "/")
	wantErr(t, err, ErrSessionExpired)
	if got := waitEvent(t, ev); got.Type != EventNotWatching || !errors.Is(got.Err, ErrSessionExpired) {
		t.Fatalf("event %+v", got)
	}
}

// TestServerGone stops the server: Suspended, then Lost once the session
// timeout has elapsed without a server.
func TestServerGone(t *testing.T) {
	srv := zktest.Start(t)
	ctx := testCtx(t)
	c := connect(t, srv.Addr(), WithSessionTimeout(time.Second))
	rec := recordStates(c)
	srv.Close()
	rec.wait(t, 0, StateSuspended)
	// A request issued now waits, then fails when the session is lost.
	_, err := c.Exists(ctx, "/")
	wantErr(t, err, ErrSessionExpired)
	rec.wait(t, 0, StateLost)
}

// TestFailover connects with two addresses, one dead: the Conn finds the
// live one, and after the live one's connection breaks it comes back.
func TestFailover(t *testing.T) {
	srv := zktest.Start(t)
	ctx := testCtx(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	nc := netCtl{addr: srv.Addr()}
	c, err := Connect(ctx, []string{dead, srv.Addr()}, WithDialer(nc.dial), WithHostShuffle(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := recordStates(c)
	if c.Server() != srv.Addr() {
		t.Fatalf("server %q", c.Server())
	}
	nc.cut()
	rec.wait(t, 0, StateReconnected)
	if _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}
}

func TestConnectFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = Connect(ctx, dead)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dead server: %v", err)
	}
	_, err = Connect(context.Background(), dead, WithConnectRetry(NTimes{N: 2, Delay: time.Millisecond}))
	if err == nil || !strings.Contains(err.Error(), "could not connect") {
		t.Fatalf("retry policy: %v", err)
	}
	if _, err := Connect(context.Background(), ""); err == nil {
		t.Fatal("empty server list")
	}
	if _, err := Connect(context.Background(), "127.0.0.1:1/bad/"); err == nil {
		t.Fatal("bad chroot")
	}
}

// fakeServer accepts one connection, does the handshake and answers
// requests with answer.
func fakeServer(t *testing.T, answer func(w *bufio.Writer, h proto.RequestHeader)) string {
	return fakeServerTimeout(t, 10000, answer)
}

// fakeServerTimeout is fakeServer granting a session timeout of timeoutMs.
func fakeServerTimeout(t *testing.T, timeoutMs int32, answer func(w *bufio.Writer, h proto.RequestHeader)) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				br := bufio.NewReader(nc)
				bw := bufio.NewWriter(nc)
				if _, err := proto.ReadFrame(br, nil, 1<<20); err != nil {
					return
				}
				var e jute.Encoder
				proto.AppendFrame(&e, nil, &proto.ConnectResponse{TimeOut: timeoutMs, SessionID: 42, Passwd: make([]byte, 16), HasReadOnly: true})
				bw.Write(e.Bytes())
				bw.Flush()
				for {
					f, err := proto.ReadFrame(br, nil, 1<<20)
					if err != nil {
						return
					}
					var h proto.RequestHeader
					h.Decode(jute.NewDecoder(f))
					answer(bw, h)
					bw.Flush()
				}
			}()
		}
	}()
	return l.Addr().String()
}

func reply(w *bufio.Writer, h proto.ReplyHeader, body proto.Record) {
	var e jute.Encoder
	proto.AppendReply(&e, &h, body)
	w.Write(e.Bytes())
}

// TestXidMismatch: a reply to the wrong request breaks the connection.
func TestXidMismatch(t *testing.T) {
	addr := fakeServer(t, func(w *bufio.Writer, h proto.RequestHeader) {
		if h.Type == proto.OpExists {
			reply(w, proto.ReplyHeader{Xid: h.Xid + 1000, Zxid: 1}, &proto.ExistsResponse{})
		}
	})
	c := connect(t, addr)
	rec := recordStates(c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Exists(ctx, "/x")
	wantErr(t, err, ErrConnectionLoss)
	if !errors.Is(err, ErrProtocol) && !strings.Contains(err.Error(), "xid") {
		t.Fatalf("error does not say why: %v", err)
	}
	rec.wait(t, 0, StateSuspended)
}

// TestBadReplyBody: an undecodable body is a connection loss, and a
// notification for an unwatched path is ignored.
func TestBadReplyBody(t *testing.T) {
	addr := fakeServer(t, func(w *bufio.Writer, h proto.RequestHeader) {
		if h.Type == proto.OpGetData {
			reply(w, proto.ReplyHeader{Xid: -1}, &proto.WatcherEvent{Type: proto.EventNodeDataChanged, State: proto.StateSyncConnected, Path: "/zz"})
			var e jute.Encoder
			off := proto.BeginFrame(&e)
			(&proto.ReplyHeader{Xid: h.Xid, Zxid: 3}).Encode(&e)
			e.WriteInt(1 << 30) // a buffer length far beyond the frame
			proto.EndFrame(&e, off)
			w.Write(e.Bytes())
		}
	})
	c := connect(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := c.Get(ctx, "/x")
	wantErr(t, err, ErrConnectionLoss)
}

// TestNoGoroutineLeak exercises a Conn (watches, a reconnection, pending
// requests) and checks that Close leaves no goroutine behind.
func TestNoGoroutineLeak(t *testing.T) {
	srv := zktest.Start(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := testCtx(t)
	nc := netCtl{addr: srv.Addr()}
	var states []State
	c, err := Connect(ctx, srv.Addr(), WithDialer(nc.dial), WithSessionTimeout(5*time.Second),
		WithStateListener(func(s State) { states = append(states, s) }))
	if err != nil {
		t.Fatal(err)
	}
	sc := c.StateChanges()
	must(c.Create(ctx, "/leak", nil, openACL, proto.ModePersistent))
	_, _, ev, err := c.GetW(ctx, "/leak")
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.AddWatch(ctx, "/", proto.AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ { // an unread backlog on the stream
		must(c.Set(ctx, "/leak", []byte{byte(i)}, AnyVersion))
	}
	<-ev
	nc.cut()
	for s := range sc {
		if s == StateReconnected {
			break
		}
	}
	// Requests in flight during Close.
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Exists(ctx, "/leak")
		}()
	}
	c.Close()
	wg.Wait()
	w.Close()
	for range sc {
	}
	if _, err := c.Exists(ctx, "/"); !errors.Is(err, ErrClosing) {
		t.Fatalf("after close: %v", err)
	}
}

// TestIdlePings: an idle Conn keeps its session alive with pings, well past
// the session timeout.
func TestIdlePings(t *testing.T) {
	srv := zktest.Start(t)
	ctx := testCtx(t)
	c := connect(t, srv.Addr(), WithSessionTimeout(600*time.Millisecond))
	rec := recordStates(c)
	if to := c.SessionTimeout(); to > time.Second {
		t.Fatalf("timeout %v", to)
	}
	time.Sleep(4 * c.SessionTimeout()) // the idleness under test
	if got := rec.snapshot(); len(got) != 0 {
		t.Fatalf("states while idle: %v", got)
	}
	if _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}
}

// TestReadTimeout: a server that stops answering (pings included) is
// detected after the read timeout (2/3 of the session timeout).
func TestReadTimeout(t *testing.T) {
	addr := fakeServerTimeout(t, 900, func(w *bufio.Writer, h proto.RequestHeader) {}) // never replies
	start := time.Now()
	c := connect(t, addr)
	rec := recordStates(c)
	rec.wait(t, 0, StateSuspended)
	// The fake server grants 900ms: the read timeout is 600ms.
	if el := time.Since(start); el < 550*time.Millisecond {
		t.Fatalf("suspended after %v", el)
	}
	// Reconnected (the fake server accepts the session again) or Lost
	// (the session timeout elapsed): either way the Conn noticed.
}
