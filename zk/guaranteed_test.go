package zk

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zkgo/zkgo/proto"
)

func TestDurableZkgo(t *testing.T)   { runDurable(t, zkgoEnv(t)) }
func TestDurableApache(t *testing.T) { runDurable(t, apacheEnv(t)) }

func runDurable(t *testing.T, e *env) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"GuaranteedDeleteAcrossCut", testGuaranteedDeleteAcrossCut},
		{"GuaranteedDeleteStopsOnClose", testGuaranteedDeleteStopsOnClose},
		{"RedialRerunsSetup", testRedialRerunsSetup},
		{"RedialCarriesGuaranteedDelete", testRedialCarriesGuaranteedDelete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, e) })
	}
}

// loseNextDelete makes the next delete request written through nc never
// reach the server: the connection is killed (and dials blocked) just
// before its bytes are written, so the caller gets ErrConnectionLoss for a
// delete that was not applied.
func loseNextDelete(nc *netCtl) {
	var once sync.Once
	nc.mu.Lock()
	nc.cutOnWrite = func(b []byte) bool {
		if len(b) >= 12 && proto.OpCode(int32(binary.BigEndian.Uint32(b[8:12]))) == proto.OpDelete {
			once.Do(func() {
				nc.block(true)
				nc.cut()
			})
		}
		return false
	}
	nc.mu.Unlock()
}

// expireBlocked ends the session of c, whose dials nc blocks and whose
// connection is cut, from outside; it leaves dials blocked.
func expireBlocked(t *testing.T, e *env, c *Conn) {
	t.Helper()
	killSession(t, e.addr, c.SessionID(), c.SessionPassword())
}

// lostDelete creates a persistent node, then issues a guaranteed delete of
// it that is lost with the connection (dials stay blocked). It returns the
// node's path and a watch on it set by a second Conn.
func lostDelete(t *testing.T, e *env, nc *netCtl, del func(ctx context.Context, p string) error, c *Conn) (string, <-chan Event) {
	t.Helper()
	ctx := testCtx(t)
	root := testRoot(t, c)
	p := root + "/n"
	if _, err := c.Create(ctx, p, []byte("x"), openACL, proto.ModePersistent); err != nil {
		t.Fatal(err)
	}
	obs := connect(t, e.addr)
	st, ev, err := obs.ExistsW(ctx, p)
	if err != nil || st == nil {
		t.Fatalf("exists: %v %v", st, err)
	}
	rec := recordStates(c)
	loseNextDelete(nc)
	err = del(ctx, p)
	wantErr(t, err, ErrConnectionLoss)
	rec.wait(t, 0, StateSuspended)
	if st, err := obs.Exists(ctx, p); err != nil || st == nil {
		t.Fatalf("the lost delete was applied: %v %v", st, err)
	}
	return p, ev
}

func testGuaranteedDeleteAcrossCut(t *testing.T, e *env) {
	ctx := testCtx(t)
	nc := &netCtl{addr: e.addr}
	c := connect(t, e.addr, WithDialer(nc.dial))
	p, ev := lostDelete(t, e, nc, func(ctx context.Context, p string) error { return c.DeleteGuaranteed(ctx, p, AnyVersion) }, c)
	if got := c.PendingDeletes(); !slices.Equal(got, []string{p}) {
		t.Fatalf("pending %q", got)
	}
	nc.block(false)
	if got := waitEvent(t, ev); got.Type != EventNodeDeleted {
		t.Fatalf("event %+v", got)
	}
	if err := c.WaitDeletes(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.PendingDeletes(); len(got) != 0 {
		t.Fatalf("pending %q", got)
	}
	// A delete that is answered is an ordinary delete.
	wantErr(t, c.DeleteGuaranteed(ctx, p, AnyVersion), ErrNoNode)
	if err := c.WaitDeletes(ctx); err != nil {
		t.Fatal(err)
	}
}

func testGuaranteedDeleteStopsOnClose(t *testing.T, e *env) {
	ctx := testCtx(t)
	nc := &netCtl{addr: e.addr}
	c := connect(t, e.addr, WithDialer(nc.dial))
	p, _ := lostDelete(t, e, nc, func(ctx context.Context, p string) error { return c.DeleteGuaranteed(ctx, p, AnyVersion) }, c)
	c.Close()
	err := c.WaitDeletes(ctx)
	wantErr(t, err, ErrClosing)
	if err := c.WaitDeletes(ctx); err != nil {
		t.Fatalf("abandoned deletes reported twice: %v", err)
	}
	obs := connect(t, e.addr)
	if st, err := obs.Exists(ctx, p); err != nil || st == nil {
		t.Fatalf("node gone after Close: %v %v", st, err)
	}
}

func testRedialRerunsSetup(t *testing.T, e *env) {
	ctx := testCtx(t)
	nc := &netCtl{addr: e.addr}
	r, err := Redial(ctx, e.addr, WithDialer(nc.dial), WithSessionTimeout(10e9))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c1 := r.Current()
	root := testRoot(t, c1)
	var runs atomic.Int32
	var sessions sync.Map // session id -> true, one entry per setup run
	remove, err := r.OnSession(ctx, func(ctx context.Context, c *Conn) error {
		runs.Add(1)
		sessions.Store(c.SessionID(), true)
		_, err := c.Create(ctx, root+"/member", nil, openACL, proto.ModeEphemeral)
		return err
	})
	if err != nil || runs.Load() != 1 {
		t.Fatalf("first run: %v, runs %d", err, runs.Load())
	}
	rec := recordStates(c1)
	nc.block(true)
	nc.cut()
	rec.wait(t, 0, StateSuspended)
	expireBlocked(t, e, c1)
	nc.block(false)
	c2, err := r.Next(ctx, c1)
	if err != nil {
		t.Fatal(err)
	}
	if c2 == c1 || c2.SessionID() == c1.SessionID() {
		t.Fatalf("no new session: %x %x", c1.SessionID(), c2.SessionID())
	}
	if runs.Load() != 2 {
		t.Fatalf("setup ran %d times", runs.Load())
	}
	if _, ok := sessions.Load(c2.SessionID()); !ok {
		t.Fatal("setup did not run on the new session")
	}
	st, err := c2.Exists(ctx, root+"/member")
	if err != nil || st == nil || st.EphemeralOwner != c2.SessionID() {
		t.Fatalf("member after redial: %+v %v", st, err)
	}
	_, err = c1.Exists(ctx, "/")
	if !errors.Is(err, ErrSessionExpired) && !errors.Is(err, ErrClosing) {
		t.Fatalf("old conn: %v", err)
	}
	if _, err := c1.Next(ctx, c1); err == nil {
		t.Fatal("a Conn has a next session")
	}
	// A removed setup function does not run again.
	remove()
	rec = recordStates(c2)
	nc.block(true)
	nc.cut()
	rec.wait(t, 0, StateSuspended)
	expireBlocked(t, e, c2)
	nc.block(false)
	if _, err := r.Next(ctx, c2); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 2 {
		t.Fatalf("removed setup ran: %d", runs.Load())
	}
	r.Close()
	if _, err := r.Next(ctx, r.Current()); !errors.Is(err, ErrClosing) {
		t.Fatalf("Next after Close: %v", err)
	}
}

func testRedialCarriesGuaranteedDelete(t *testing.T, e *env) {
	ctx := testCtx(t)
	nc := &netCtl{addr: e.addr}
	r, err := Redial(ctx, e.addr, WithDialer(nc.dial), WithSessionTimeout(10e9))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c1 := r.Current()
	_, ev := lostDelete(t, e, nc, func(ctx context.Context, p string) error { return r.DeleteGuaranteed(ctx, p, AnyVersion) }, c1)
	expireBlocked(t, e, c1)
	nc.block(false)
	if got := waitEvent(t, ev); got.Type != EventNodeDeleted {
		t.Fatalf("event %+v", got)
	}
	c2, err := r.Next(ctx, c1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.WaitDeletes(ctx); err != nil {
		t.Fatal(err)
	}
}
