// Package recipetest runs recipe tests against zkgo's in-process server and,
// where installed, one Apache ZooKeeper 3.8 JVM per test package. It also
// offers what those tests need: forced session expiry, connections that can
// be cut, and a count of the watch notifications a Conn receives.
package recipetest

import (
	"bufio"
	"context"
	"encoding/binary"
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

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

var (
	apache    *apachezk.Server
	apacheErr error
)

// extended: MainExtended was called (TTL nodes enabled on both servers).
var extended bool

// MainExtended is Main with extended types (TTL nodes) enabled on Apache
// ZooKeeper and on the zkgo servers ForEach starts.
func MainExtended(m *testing.M) {
	extended = true
	Main(m)
}

// Main starts Apache ZooKeeper (unless ZKGO_SKIP_APACHE is set or it is not
// installed), runs the tests and stops it. Call it from TestMain.
func Main(m *testing.M) {
	if os.Getenv("ZKGO_SKIP_APACHE") == "" {
		apache, apacheErr = apachezk.Start(apachezk.Options{ExtendedTypes: extended, ExtraConfig: map[string]string{"maxClientCnxns": "0"}})
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
	os.Exit(code)
}

// ApacheAddr returns the address of the Apache ZooKeeper that Main
// started, or why there is none (for benchmarks, which ForEach does not
// serve).
func ApacheAddr() (string, error) {
	if apache == nil {
		if apacheErr == nil {
			return "", fmt.Errorf("%w: Main did not start it", apachezk.ErrNotInstalled)
		}
		return "", apacheErr
	}
	return apache.Addr(), nil
}

// Env is a server the test runs against.
type Env struct {
	Name string
	Addr string
	// Root is a fresh path for this test.
	Root string
}

var seq atomic.Int64

// ForEach runs fn against zkgo and against Apache ZooKeeper (skipped with a
// message when it is not available), each with a fresh root path.
func ForEach(t *testing.T, fn func(t *testing.T, e *Env)) {
	t.Run("zkgo", func(t *testing.T) {
		var opts []zktest.Option
		if extended {
			opts = append(opts, zktest.WithExtendedTypes())
		}
		srv := zktest.Start(t, opts...)
		fn(t, &Env{Name: "zkgo", Addr: srv.Addr(), Root: fmt.Sprintf("/r%d", seq.Add(1))})
	})
	t.Run("apache", func(t *testing.T) {
		apachezk.SkipIfUnavailable(t, apacheErr)
		fn(t, &Env{Name: "apache", Addr: apache.Addr(), Root: fmt.Sprintf("/r%d-%d", time.Now().UnixNano()%1e9, seq.Add(1))})
	})
}

// Ctx returns a context bounded to a minute, cancelled when the test ends.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Connect opens a Conn (session timeout 4 s unless opts say otherwise)
// closed when the test ends. Its ensemble tracking is off unless opts
// turn it on: the server is a single one, and tests that count a
// session's watches (wchc) see only the recipe's.
func (e *Env) Connect(t testing.TB, opts ...zk.Option) *zk.Conn {
	t.Helper()
	opts = append([]zk.Option{zk.WithSessionTimeout(4 * time.Second), zk.WithEnsembleTracking(false)}, opts...)
	c, err := zk.Connect(Ctx(t), e.Addr, opts...)
	if err != nil {
		t.Fatalf("connect %s: %v", e.Addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Expire ends the session of c (which must dial through n) from outside,
// as a server does when the session times out. It cuts c's connection and
// keeps it from reconnecting, then opens a second connection with the same
// session id and password and closes the session there, and finally lets c
// reconnect, which tells it the session expired. (Apache ZooKeeper can drop
// the second connection too when the session's own connection is still
// open, so that one is cut first.)
func (n *Net) Expire(t testing.TB, addr string, c *zk.Conn) {
	t.Helper()
	states, stop := c.NotifyState()
	defer stop()
	n.Block(true)
	n.Cut()
	// Once dials are blocked a suspended Conn stays suspended; it may
	// already be (a cut that raced with this call).
	if c.State() != zk.StateSuspended {
		WaitState(t, states, zk.StateSuspended)
	}
	// Apache ZooKeeper may also drop the second connection if it arrives
	// before the server has dropped the cut one: wait until "cons" no
	// longer lists the session.
	sid := fmt.Sprintf("sid=0x%x", c.SessionID())
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := zk.FourLetterWord(ctx, addr, "cons")
		cancel()
		if err == nil && !strings.Contains(out, sid+",") && !strings.Contains(out, sid+")") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("expire: the server still lists %s: %v\n%s", sid, err, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	expire(t, addr, c)
	n.Block(false)
}

func expire(t testing.TB, addr string, c *zk.Conn) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	var e jute.Encoder
	proto.AppendFrame(&e, nil, &proto.ConnectRequest{TimeOut: 10000, SessionID: c.SessionID(), Passwd: c.SessionPassword(), HasReadOnly: true})
	proto.AppendRequest(&e, &proto.RequestHeader{Xid: 1, Type: proto.OpCloseSession}, nil)
	if _, err := nc.Write(e.Bytes()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	if _, err := proto.ReadFrame(br, nil, 1<<20); err != nil {
		tail := ""
		if apache != nil && addr == apache.Addr() {
			tail = "\n" + apache.LogTail()
		}
		t.Fatalf("expire: handshake: %v%s", err, tail)
	}
	if _, err := proto.ReadFrame(br, nil, 1<<20); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("expire: closeSession: %v", err)
	}
}

// WaitState waits until c reports state s (on a subscription taken before
// the call, so a transition racing with the call may be missed: take sub
// first with c.NotifyState when that matters).
func WaitState(t testing.TB, ch <-chan zk.State, s zk.State) {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		select {
		case got, ok := <-ch:
			if !ok {
				t.Fatalf("state channel closed before %v", s)
			}
			if got == s {
				return
			}
		case <-timer.C:
			t.Fatalf("state %v not reached", s)
		}
	}
}

// Net is a dialer whose connections can be cut and whose dials can be
// blocked; it also counts the watch notifications received over them.
type Net struct {
	mu      sync.Mutex
	conns   []*netConn
	blocked bool

	notifications atomic.Int64
	watchReads    atomic.Int64
	childrenReads atomic.Int64
}

// Dialer returns the option that makes a Conn dial through n.
func (n *Net) Dialer() zk.Option { return zk.WithDialer(n.dial) }

func (n *Net) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	blocked := n.blocked
	n.mu.Unlock()
	if blocked {
		return nil, errors.New("recipetest: dial blocked")
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := &netConn{Conn: nc, n: n}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.blocked {
		// Blocked while this dial was in flight: a later Cut would miss
		// the connection, so refuse it now.
		nc.Close()
		return nil, errors.New("recipetest: dial blocked")
	}
	n.conns = append(n.conns, c)
	return c, nil
}

// Block makes further dials fail (b true) or succeed again.
func (n *Net) Block(b bool) {
	n.mu.Lock()
	n.blocked = b
	n.mu.Unlock()
}

// Cut closes every connection made so far.
func (n *Net) Cut() {
	n.mu.Lock()
	conns := n.conns
	n.conns = nil
	n.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Notifications returns how many watch notifications (frames with xid -1)
// the connections have delivered.
func (n *Net) Notifications() int64 { return n.notifications.Load() }

// WatchReads returns how many reads that leave a watch (exists, getData,
// getChildren with the watch flag set) the connections have sent. Once a
// later request on the same connection has been answered, the server has
// registered those watches.
func (n *Net) WatchReads() int64 { return n.watchReads.Load() }

// ChildrenReads returns how many getChildren requests (with or without a
// watch) the connections have sent.
func (n *Net) ChildrenReads() int64 { return n.childrenReads.Load() }

// netConn parses the frames it reads to count notifications, and the
// frames it writes to count watch-setting reads.
type netConn struct {
	net.Conn
	n *Net

	wmu    sync.Mutex
	wfirst bool   // the ConnectRequest has been skipped
	wbuf   []byte // unparsed bytes written

	// Parser state (Read is called by one goroutine).
	first   bool // the ConnectResponse has been skipped
	hdr     [8]byte
	hdrN    int
	bodyLen int // bytes of the current frame body still to skip
}

func (c *netConn) Read(p []byte) (int, error) {
	k, err := c.Conn.Read(p)
	c.scan(p[:k])
	return k, err
}

func (c *netConn) Write(p []byte) (int, error) {
	c.scanWrite(p)
	return c.Conn.Write(p)
}

// scanWrite counts the watch-setting reads among the frames in p. A watch
// flag is the last byte of exists, getData, getChildren and getChildren2
// requests.
func (c *netConn) scanWrite(p []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = append(c.wbuf, p...)
	for len(c.wbuf) >= 4 {
		size := int(binary.BigEndian.Uint32(c.wbuf[:4]))
		if size < 0 || size > 1<<24 {
			c.wbuf = nil // not a frame we can follow; stop counting
			return
		}
		if len(c.wbuf) < 4+size {
			return
		}
		body := c.wbuf[4 : 4+size]
		if c.wfirst && len(body) > 8 {
			switch proto.OpCode(int32(binary.BigEndian.Uint32(body[4:8]))) {
			case proto.OpGetChildren, proto.OpGetChildren2:
				c.n.childrenReads.Add(1)
			}
		}
		if !c.wfirst {
			c.wfirst = true
		} else if len(body) > 8 && body[len(body)-1] == 1 {
			switch proto.OpCode(int32(binary.BigEndian.Uint32(body[4:8]))) {
			case proto.OpExists, proto.OpGetData, proto.OpGetChildren, proto.OpGetChildren2:
				c.n.watchReads.Add(1)
			}
		}
		c.wbuf = c.wbuf[4+size:]
	}
}

func (c *netConn) scan(b []byte) {
	for len(b) > 0 {
		if c.bodyLen > 0 {
			skip := min(c.bodyLen, len(b))
			c.bodyLen -= skip
			b = b[skip:]
			continue
		}
		// Collect length (4) + xid (4).
		need := 8 - c.hdrN
		if !c.first {
			need = 4 - c.hdrN
		}
		take := min(need, len(b))
		copy(c.hdr[c.hdrN:], b[:take])
		c.hdrN += take
		b = b[take:]
		if take < need {
			return
		}
		size := int(binary.BigEndian.Uint32(c.hdr[:4]))
		if !c.first {
			c.first = true
			c.bodyLen = size
		} else {
			if int32(binary.BigEndian.Uint32(c.hdr[4:8])) == proto.XidNotification {
				c.n.notifications.Add(1)
			}
			c.bodyLen = size - 4
		}
		c.hdrN = 0
	}
}

// OpenACL is the world-anyone ACL.
var OpenACL = acl.OpenACLUnsafe
