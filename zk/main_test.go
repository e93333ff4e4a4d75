package zk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/zktest"
)

var (
	apache    *apachezk.Server
	apacheErr error
	// apacheSASL: the Apache server has testSASLUsers (sasl_test.go).
	apacheSASL bool
)

func TestMain(m *testing.M) {
	var jaasDir string
	if os.Getenv("ZKGO_SKIP_APACHE") == "" {
		opts := apachezk.Options{ExtendedTypes: true}
		var err error
		if jaasDir, err = os.MkdirTemp("", "zk-jaas-"); err == nil {
			opts.SystemProperties, opts.ExtraConfig, err = apacheSASLOptions(jaasDir)
		}
		apacheSASL = err == nil
		apache, apacheErr = apachezk.Start(opts)
		if apacheErr != nil {
			fmt.Fprintln(os.Stderr, apachezk.SkipMessage(apacheErr))
		}
	} else {
		apacheErr = fmt.Errorf("%w: ZKGO_SKIP_APACHE set", apachezk.ErrNotInstalled)
	}
	code := m.Run()
	if apache != nil {
		apache.Stop()
	}
	if jaasDir != "" {
		os.RemoveAll(jaasDir)
	}
	os.Exit(code)
}

// env is a server the suite runs against.
type env struct {
	name string
	addr string
	// maxTimeout is the largest session timeout the server grants.
	maxTimeout time.Duration
}

func zkgoEnv(t *testing.T) *env {
	srv := zktest.Start(t, zktest.WithExtendedTypes(), zktest.WithOptions(func(o *server.Options) {
		o.MaxSessionTimeout = 30 * time.Second
	}))
	return &env{name: "zkgo", addr: srv.Addr(), maxTimeout: 30 * time.Second}
}

func apacheEnv(t *testing.T) *env {
	apachezk.SkipIfUnavailable(t, apacheErr)
	if apache == nil {
		t.Skip("Apache ZooKeeper not started")
	}
	return &env{name: "apache", addr: apache.Addr(), maxTimeout: 60 * time.Second}
}

func TestZkgo(t *testing.T)   { runSuite(t, zkgoEnv(t)) }
func TestApache(t *testing.T) { runSuite(t, apacheEnv(t)) }

// testCtx returns a context with a generous deadline for one test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connect opens a Conn closed at the end of the test.
func connect(t *testing.T, addr string, opts ...Option) *Conn {
	t.Helper()
	opts = append([]Option{WithSessionTimeout(10 * time.Second)}, opts...)
	c, err := Connect(testCtx(t), addr, opts...)
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var rootSeq atomic.Int64

// testRoot creates a fresh persistent root for a test and returns it.
func testRoot(t *testing.T, c *Conn) string {
	t.Helper()
	p := fmt.Sprintf("/t%d-%d", time.Now().UnixNano()%1e9, rootSeq.Add(1))
	if _, err := c.Create(testCtx(t), p, nil, openACL, proto.ModePersistent); err != nil {
		t.Fatalf("create root: %v", err)
	}
	return p
}

// netCtl is a dialer whose connections a test can cut, and whose dials it
// can refuse, to simulate network failures.
type netCtl struct {
	// addr, if set, is the server whose "cons" output cut waits on.
	addr    string
	mu      sync.Mutex
	conns   []*ctlConn
	blocked bool
	dials   int
	// cutOnWrite, if set, is checked against each write: when it returns
	// true the write is delivered and the connection then dies without
	// delivering any further byte to the client.
	cutOnWrite func([]byte) bool
	writeCut   []*ctlConn
}

// release lets the client reconnect after a cutOnWrite cut.
func (n *netCtl) release() {
	n.mu.Lock()
	conns := n.writeCut
	n.writeCut = nil
	n.mu.Unlock()
	if n.addr != "" {
		n.settle(conns)
	}
	n.block(false)
}

func (n *netCtl) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	blocked := n.blocked
	n.dials++
	n.mu.Unlock()
	if blocked {
		return nil, errors.New("netCtl: dial blocked")
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cc := &ctlConn{Conn: nc, n: n}
	n.mu.Lock()
	n.conns = append(n.conns, cc)
	n.mu.Unlock()
	return cc, nil
}

func (n *netCtl) block(b bool) {
	n.mu.Lock()
	n.blocked = b
	n.mu.Unlock()
}

// cut kills every open connection. With addr set, it then keeps dials
// blocked until the server has dropped the killed connections (see settle).
func (n *netCtl) cut() {
	n.mu.Lock()
	conns := n.conns
	n.conns = nil
	wasBlocked := n.blocked
	if n.addr != "" {
		n.blocked = true
	}
	n.mu.Unlock()
	for _, c := range conns {
		c.kill()
	}
	if n.addr != "" {
		n.settle(conns)
		n.block(wasBlocked)
	}
}

// settle waits until the server's "cons" output lists none of conns.
//
// This works around a data race in zkgo's server (liveSession.timeout is
// written by the handshake of a resuming connection while the session's
// previous connection may still read ls.timeout in touch, without a lock):
// letting the client reconnect only after the server has dropped the old
// connection keeps the race detector quiet in these tests.
func (n *netCtl) settle(conns []*ctlConn) {
	var locals []string
	for _, c := range conns {
		locals = append(locals, c.LocalAddr().String())
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := FourLetterWord(ctx, n.addr, "cons")
		cancel()
		if err == nil {
			found := false
			for _, l := range locals {
				if strings.Contains(out, l+"[") || strings.Contains(out, l+" ") || strings.Contains(out, l+"(") {
					found = true
				}
			}
			if !found {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type ctlConn struct {
	net.Conn
	n    *netCtl
	dead atomic.Bool
}

func (c *ctlConn) kill() {
	c.dead.Store(true)
	c.Conn.Close()
}

func (c *ctlConn) Read(b []byte) (int, error) {
	if c.dead.Load() {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(b)
	if c.dead.Load() {
		return 0, net.ErrClosed
	}
	return n, err
}

func (c *ctlConn) Write(b []byte) (int, error) {
	if c.dead.Load() {
		return 0, net.ErrClosed
	}
	c.n.mu.Lock()
	fn := c.n.cutOnWrite
	c.n.mu.Unlock()
	if fn != nil && fn(b) {
		c.n.mu.Lock()
		if c.n.addr != "" {
			c.n.blocked = true // until release
		}
		c.n.writeCut = append(c.n.writeCut, c)
		c.n.mu.Unlock()
		c.dead.Store(true) // nothing more reaches the client
		n, err := c.Conn.Write(b)
		c.Conn.Close()
		return n, err
	}
	return c.Conn.Write(b)
}

// stateRecorder collects the states of a Conn from StateChanges.
type stateRecorder struct {
	mu     sync.Mutex
	states []State
	cond   *sync.Cond
	done   chan struct{}
}

func recordStates(c *Conn) *stateRecorder {
	r := &stateRecorder{done: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	ch := c.StateChanges()
	go func() {
		defer close(r.done)
		for s := range ch {
			r.mu.Lock()
			r.states = append(r.states, s)
			r.cond.Broadcast()
			r.mu.Unlock()
		}
	}()
	return r
}

// wait waits until state s has been seen (at index >= from) and returns
// its index.
func (r *stateRecorder) wait(t *testing.T, from int, s State) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	timer := time.AfterFunc(20*time.Second, func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		for i := from; i < len(r.states); i++ {
			if r.states[i] == s {
				return i
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %v not reached; states %v", s, r.states)
		}
		r.cond.Wait()
	}
}

func (r *stateRecorder) snapshot() []State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]State(nil), r.states...)
}

// waitEvent receives one event from ch within a generous deadline.
func waitEvent(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed without an event")
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no watch event")
	}
	return Event{}
}

// killSession closes a session from the outside: it connects with the
// session's id and password and sends closeSession, as ZooKeeper's own
// tests do to expire a session.
func killSession(t *testing.T, addr string, id int64, passwd []byte) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	var e jute.Encoder
	proto.AppendFrame(&e, nil, &proto.ConnectRequest{TimeOut: 10000, SessionID: id, Passwd: passwd, HasReadOnly: true})
	proto.AppendRequest(&e, &proto.RequestHeader{Xid: 1, Type: proto.OpCloseSession}, nil)
	if _, err := nc.Write(e.Bytes()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	if _, err := proto.ReadFrame(br, nil, 1<<20); err != nil {
		t.Fatalf("killSession handshake: %v", err)
	}
	// The reply to closeSession (or EOF: zkgo's server may close the
	// connection before queueing that reply, see the report).
	if _, err := proto.ReadFrame(br, nil, 1<<20); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("killSession close: %v", err)
	}
}

// typePath returns ev without its Zxid, which only some servers send
// (ZooKeeper 3.9 and zkgo), for comparisons by type and path.
func typePath(ev Event) Event {
	ev.Zxid = 0
	return ev
}
