package recipe

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe/internal/link"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// holdRead with the node's read still out (a lock whose turn came with
// its create's reply): the grant starts at once, and its monitor takes
// the read when it comes.
func TestHoldReadPending(t *testing.T) {
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	other, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	n := 0
	node := func() (string, int64) {
		n++
		p, st, err := conn.Create2(ctx, "/held-", nil, zk.OpenACLUnsafe, zk.ModeEphemeralSequential)
		if err != nil {
			t.Fatal(err)
		}
		return p, st.Czxid
	}
	read := func(p string) link.Read {
		var r link.Read
		r.Data, _, r.Ev, r.Err = conn.GetW(ctx, p)
		return r
	}
	pending := func(p string, czxid int64, onData func([]byte)) (*Grant, chan link.Read) {
		early := make(chan link.Read, 1)
		g, err := holdRead(ctx, conn, p, czxid, Strict, onData, early)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-g.Done():
			t.Fatalf("the grant ended before its read: %v", g.Err())
		default:
		}
		return g, early
	}
	ended := func(g *Grant, want error) {
		t.Helper()
		select {
		case <-g.Done():
		case <-ctx.Done():
			t.Fatal("the grant did not end")
		}
		if !errors.Is(g.Err(), want) {
			t.Fatalf("the grant ended with %v, want %v", g.Err(), want)
		}
	}

	t.Run("read finds the node gone", func(t *testing.T) {
		p, czxid := node()
		g, early := pending(p, czxid, nil)
		if err := other.Delete(ctx, p, -1); err != nil {
			t.Fatal(err)
		}
		early <- read(p)
		ended(g, ErrNodeDeleted)
	})
	t.Run("read's watch sees the deletion", func(t *testing.T) {
		p, czxid := node()
		got := make(chan []byte, 2)
		g, early := pending(p, czxid, func(d []byte) { got <- d })
		if _, err := other.Set(ctx, p, RevokeMessage, -1); err != nil {
			t.Fatal(err)
		}
		early <- read(p)
		if d := <-got; !bytes.Equal(d, RevokeMessage) {
			t.Fatalf("onData got %q", d)
		}
		if err := other.Delete(ctx, p, -1); err != nil {
			t.Fatal(err)
		}
		ended(g, ErrNodeDeleted)
	})
	t.Run("failed read is done again", func(t *testing.T) {
		p, czxid := node()
		g, early := pending(p, czxid, nil)
		early <- link.Read{Err: context.Canceled}
		// The monitor's own read sets the watch: wait for it on the
		// server, then delete.
		deadline := time.Now().Add(30 * time.Second)
		for !bytes.Contains([]byte(srv.FourLetterWord("wchp")), []byte(p)) {
			if time.Now().After(deadline) {
				t.Fatal("no watch on the node")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := other.Delete(ctx, p, -1); err != nil {
			t.Fatal(err)
		}
		ended(g, ErrNodeDeleted)
	})
	t.Run("read done again after the connection is lost", func(t *testing.T) {
		// Session policy: the grant outlives a lost connection; the
		// monitor's own read, lost with it, is done again on the next.
		var cut cutOnPath
		lossy, err := zk.Connect(ctx, srv.Addr(), zk.WithDialer(cut.dial))
		if err != nil {
			t.Fatal(err)
		}
		defer lossy.Close()
		p, st, err := lossy.Create2(ctx, "/lossy-", nil, zk.OpenACLUnsafe, zk.ModeEphemeralSequential)
		if err != nil {
			t.Fatal(err)
		}
		early := make(chan link.Read, 1)
		g, err := holdRead(ctx, lossy, p, st.Czxid, Session, nil, early)
		if err != nil {
			t.Fatal(err)
		}
		cut.arm(p)                                // the next request naming p loses its connection
		early <- link.Read{Err: context.Canceled} // the monitor reads again
		deadline := time.Now().Add(30 * time.Second)
		for !cut.fired() || !bytes.Contains([]byte(srv.FourLetterWord("wchp")), []byte(p)) {
			if time.Now().After(deadline) {
				t.Fatalf("no watch on the node (connection cut: %v)", cut.fired())
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := other.Delete(ctx, p, -1); err != nil {
			t.Fatal(err)
		}
		ended(g, ErrNodeDeleted)
	})
	t.Run("released before its read", func(t *testing.T) {
		p, czxid := node()
		g, early := pending(p, czxid, nil)
		g.Release()
		ended(g, ErrReleased)
		early <- read(p) // nobody takes it: the channel holds one
	})
	t.Run("read back already", func(t *testing.T) {
		p, czxid := node()
		early := make(chan link.Read, 1)
		if err := other.Delete(ctx, p, -1); err != nil {
			t.Fatal(err)
		}
		early <- read(p)
		if _, err := holdRead(ctx, conn, p, czxid, Strict, nil, early); !errors.Is(err, ErrNodeDeleted) {
			t.Fatalf("holdRead on a node read as gone: %v", err)
		}
	})
}

// cutOnPath dials connections that close themselves once, after writing
// a request that names the armed path.
type cutOnPath struct {
	mu   sync.Mutex // guards path and done
	path []byte
	done bool
}

func (c *cutOnPath) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &cuttingConn{Conn: nc, c: c}, nil
}

func (c *cutOnPath) arm(path string) {
	c.mu.Lock()
	c.path = []byte(path)
	c.mu.Unlock()
}

func (c *cutOnPath) fired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

type cuttingConn struct {
	net.Conn
	c *cutOnPath
}

func (cc *cuttingConn) Write(b []byte) (int, error) {
	n, err := cc.Conn.Write(b)
	cc.c.mu.Lock()
	hit := !cc.c.done && cc.c.path != nil && bytes.Contains(b, cc.c.path)
	if hit {
		cc.c.done = true
	}
	cc.c.mu.Unlock()
	if hit {
		cc.Conn.Close()
	}
	return n, err
}
