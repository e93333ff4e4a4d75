package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

type env = recipetest.Env

// redial opens a Redialer through n, closed when the test ends.
func redial(t *testing.T, e *env, n *recipetest.Net) *zk.Redialer {
	t.Helper()
	r, err := zk.Redial(recipetest.Ctx(t), e.Addr, n.Dialer(), zk.WithSessionTimeout(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// waitUntil re-reads with check after each change of parent's children or
// of the node at path, until check is true (a bounded number of rounds).
func waitUntil(t *testing.T, c *zk.Conn, parent, path string, check func() bool) {
	t.Helper()
	ctx := recipetest.Ctx(t)
	for range 200 {
		_, _, cev, err := c.ChildrenW(ctx, parent)
		if errors.Is(err, zk.ErrNoNode) {
			// The parent (a container) is gone: wait for its creation.
			var st *zk.Stat
			if st, cev, err = c.ExistsW(ctx, parent); err == nil && st != nil {
				continue // created meanwhile
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		var nev <-chan zk.Event
		if path != "" {
			if _, nev, err = c.ExistsW(ctx, path); err != nil {
				t.Fatal(err)
			}
		}
		if check() {
			return
		}
		select {
		case <-cev:
		case <-nev:
		case <-ctx.Done():
			kids, _, err := c.Children(context.Background(), parent)
			var detail []string
			for _, k := range kids {
				d, st, err := c.Get(context.Background(), parent+"/"+k)
				detail = append(detail, fmt.Sprintf("%s=%q owner %x %v", k, d, st.EphemeralOwner, err))
			}
			t.Fatalf("condition not reached; children of %s: %q %v", parent, detail, err)
		}
	}
	t.Fatal("condition not reached after 200 changes")
}

// holds reports whether the node at path exists with data (and, if owner
// is not 0, is an ephemeral of that session).
func holds(t *testing.T, c *zk.Conn, path string, data []byte, owner int64) bool {
	t.Helper()
	if path == "" {
		return false
	}
	got, st, err := c.Get(recipetest.Ctx(t), path)
	if errors.Is(err, zk.ErrNoNode) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(got, data) && (owner == 0 || st.EphemeralOwner == owner)
}

var protectedName = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-`)

func TestPersistentNodeModes(t *testing.T) {
	tests := []struct {
		name      string
		mode      zk.CreateMode
		protected bool
		wantName  *regexp.Regexp // of the node's name under e.Root+"/g"
	}{
		{"ephemeral", zk.ModeEphemeral, false, regexp.MustCompile(`^member$`)},
		{"ephemeral-protected", zk.ModeEphemeral, true, regexp.MustCompile(protectedName.String() + `member$`)},
		{"ephemeral-sequential-protected", zk.ModeEphemeralSequential, true, regexp.MustCompile(protectedName.String() + `member[0-9]{10}$`)},
		{"persistent", zk.ModePersistent, false, regexp.MustCompile(`^member$`)},
		{"persistent-sequential", zk.ModePersistentSequential, false, regexp.MustCompile(`^member[0-9]{10}$`)},
	}
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := recipetest.Ctx(t)
				c := e.Connect(t)
				obs := e.Connect(t)
				parent := e.Root + "/" + tt.name + "/g"
				var opts []Option
				if tt.protected {
					opts = append(opts, WithProtection())
				}
				n := New(c, parent+"/member", tt.mode, []byte("one"), opts...)
				defer func() { t.Logf("node path %q err %v", n.Path(), n.Err()) }()
				p, err := n.WaitCreated(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if name := strings.TrimPrefix(p, parent+"/"); !tt.wantName.MatchString(name) {
					t.Fatalf("name %q, want %v", name, tt.wantName)
				}
				var owner int64
				if tt.mode.IsEphemeral() {
					owner = c.SessionID()
				}
				if !holds(t, obs, p, []byte("one"), owner) {
					t.Fatal("node missing after WaitCreated")
				}
				if err := n.SetData(ctx, []byte("two")); err != nil {
					t.Fatal(err)
				}
				if !holds(t, obs, p, []byte("two"), owner) || string(n.Data()) != "two" {
					t.Fatal("SetData not written")
				}
				// Deleted by someone else: created again with the current
				// data (a new path for sequential nodes).
				if err := obs.Delete(ctx, p, zk.AnyVersion); err != nil {
					t.Fatal(err)
				}
				waitUntil(t, obs, parent, "", func() bool {
					kids, _, err := obs.Children(ctx, parent)
					return err == nil && len(kids) == 1 && holds(t, obs, parent+"/"+kids[0], []byte("two"), owner)
				})
				kids, _, _ := obs.Children(ctx, parent)
				if !tt.wantName.MatchString(kids[0]) {
					t.Fatalf("name after re-creation %q", kids[0])
				}
				// SetData returns once the keeper holds the node with the
				// data, so its path is the re-created one by then.
				// (Waiting on the parent's children for Path to change
				// missed the moment: the keeper records the path after
				// the create's reply, which may come after the children's
				// last change.)
				if err := n.SetData(ctx, []byte("two")); err != nil {
					t.Fatal(err)
				}
				if got := n.Path(); got != parent+"/"+kids[0] {
					t.Fatalf("Path %q after re-creation, the node is %q", got, parent+"/"+kids[0])
				}
				if err := n.Close(ctx); err != nil {
					t.Fatal(err)
				}
				if st, err := obs.Exists(ctx, n.Path()); err != nil || st != nil {
					t.Fatalf("node after Close: %v %v", st, err)
				}
				if err := n.SetData(ctx, []byte("x")); !errors.Is(err, ErrClosed) {
					t.Fatalf("SetData after Close: %v", err)
				}
			})
		}
	})
}

// TestPersistentNodeCut: data set while the connection is cut reaches the
// node when it comes back; the node (same session) keeps its path.
func TestPersistentNodeCut(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		var net recipetest.Net
		c := e.Connect(t, net.Dialer())
		obs := e.Connect(t)
		n := New(c, e.Root+"/eph", zk.ModeEphemeralSequential, []byte("one"), WithProtection())
		p, err := n.WaitCreated(ctx)
		if err != nil {
			t.Fatal(err)
		}
		states, stop := c.NotifyState()
		defer stop()
		net.Block(true)
		net.Cut()
		recipetest.WaitState(t, states, zk.StateSuspended)
		done := make(chan error, 1)
		go func() { done <- n.SetData(ctx, []byte("two")) }()
		if holds(t, obs, p, []byte("two"), 0) {
			t.Fatal("data written while cut")
		}
		net.Block(false)
		recipetest.WaitState(t, states, zk.StateReconnected)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !holds(t, obs, p, []byte("two"), c.SessionID()) || n.Path() != p {
			t.Fatalf("after reconnection: path %q (was %q)", n.Path(), p)
		}
		n.Close(ctx)
	})
}

// TestPersistentNodeExpiry: after a forced session expiry the node comes
// back on the Redialer's next session with the data set meanwhile; on a
// plain Conn the node stops with zk.ErrSessionExpired.
func TestPersistentNodeExpiry(t *testing.T) {
	tests := []struct {
		name string
		mode zk.CreateMode
		opts []Option
	}{
		{"ephemeral", zk.ModeEphemeral, nil},
		{"ephemeral-sequential-protected", zk.ModeEphemeralSequential, []Option{WithProtection()}},
	}
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := recipetest.Ctx(t)
				var net recipetest.Net
				r := redial(t, e, &net)
				obs := e.Connect(t)
				parent := e.Root + "/exp-" + tt.name

				n := New(r, parent+"/member", tt.mode, []byte("one"), tt.opts...)
				defer n.Close(ctx)
				p1, err := n.WaitCreated(ctx)
				if err != nil {
					t.Fatal(err)
				}
				c1 := r.Current()
				states, stop := c1.NotifyState()
				defer stop()
				net.Block(true)
				net.Cut()
				recipetest.WaitState(t, states, zk.StateSuspended)
				sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				if err := n.SetData(sctx, []byte("two")); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("SetData while cut: %v", err)
				}
				cancel()
				net.Expire(t, e.Addr, c1)
				c2, err := r.Next(ctx, c1)
				if err != nil {
					t.Fatal(err)
				}
				waitUntil(t, obs, parent, "", func() bool {
					kids, _, err := obs.Children(ctx, parent)
					return err == nil && len(kids) == 1 && holds(t, obs, parent+"/"+kids[0], []byte("two"), c2.SessionID())
				})
				// SetData returns once the node holds the data: its path is
				// the re-created node's by then. (Waiting on the parent's
				// children for the path to change missed the moment: the
				// keeper records the path after the create's reply, which
				// may come after the last change of the children.)
				if err := n.SetData(ctx, []byte("three")); err != nil {
					t.Fatal(err)
				}
				if p := n.Path(); tt.mode.IsSequential() && (p == p1 || p == "") {
					t.Fatalf("a sequential node re-created after an expiry kept path %q (first %q)", p, p1)
				}
				if !holds(t, obs, n.Path(), []byte("three"), c2.SessionID()) {
					t.Fatal("SetData after expiry not written")
				}
			})
		}
		t.Run("plain-conn", func(t *testing.T) {
			ctx := recipetest.Ctx(t)
			var net recipetest.Net
			c := e.Connect(t, net.Dialer())
			n := New(c, e.Root+"/plain", zk.ModeEphemeral, []byte("one"))
			if _, err := n.WaitCreated(ctx); err != nil {
				t.Fatal(err)
			}
			net.Expire(t, e.Addr, c)
			select {
			case <-n.Done():
			case <-ctx.Done():
				t.Fatal("node still kept after its only session expired")
			}
			if !errors.Is(n.Err(), zk.ErrSessionExpired) {
				t.Fatalf("Err %v", n.Err())
			}
		})
	})
}

func TestTTLNode(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		c := e.Connect(t)
		obs := e.Connect(t)
		path := e.Root + "/ttl/node"
		n := NewTTL(c, path, []byte("payload"), 500*time.Millisecond)
		if _, err := n.Node().WaitCreated(ctx); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, obs, path, path+"/"+TouchName, func() bool {
			st, err := obs.Exists(ctx, path+"/"+TouchName)
			return err == nil && st != nil
		})
		// Touched again: the child's data is set (a data change).
		_, _, ev, err := obs.GetW(ctx, path+"/"+TouchName)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-ev:
			if got.Type != zk.EventNodeDataChanged {
				t.Fatalf("touch event %+v", got)
			}
		case <-ctx.Done():
			t.Fatal("not touched again")
		}
		if !holds(t, obs, path, []byte("payload"), 0) {
			t.Fatal("container data")
		}
		st, err := obs.Exists(ctx, path)
		if err != nil || st == nil || st.EphemeralOwner != 0 {
			t.Fatalf("container %+v %v", st, err)
		}
		n.Close()
		// Untouched, the child expires and the container goes with it.
		st, gone, err := obs.ExistsW(ctx, path)
		for range 100 {
			if err != nil {
				t.Fatal(err)
			}
			if st == nil {
				return
			}
			select {
			case <-gone:
			case <-ctx.Done():
				t.Fatal("container not removed after Close")
			}
			st, gone, err = obs.ExistsW(ctx, path)
		}
		t.Fatal("container not removed")
	})
}
