package lock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

// The holder's successor takes the lock when the holder's node is
// deleted, without listing the lock's children again (a round trip on
// every handoff's path): the list it had, without the holder, already
// puts it first.
func TestNextHolderDoesNotListAgain(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/next"
		obs := e.Connect(t)
		a, b, c, nw, got := queueOfTwo(t, e, path)
		waitQueue(t, obs, path, 2)
		waitWatchReads(t, c, nw, 1)
		lists := nw.ChildrenReads()
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if d := nw.ChildrenReads() - lists; d != 0 {
			t.Fatalf("the next holder listed the children %d more times after its turn came", d)
		}
		if err := b.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A waiter whose own node was deleted (by someone else) while it waited
// is never handed a grant for that node when its predecessor goes: it
// starts over with a new node, as Curator does.
func TestWaiterWithDeletedNodeStartsOver(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/deleted"
		obs := e.Connect(t)
		a, b, c, nw, got := queueOfTwo(t, e, path)
		waitQueue(t, obs, path, 2)
		// Both of b's watches (its own node, read while it waits, and
		// the holder's) are set.
		waitWatchReads(t, c, nw, 2)
		var mine string
		for _, n := range children(t, obs, path) {
			if p := path + "/" + n; p != a.Grant().Path() {
				mine = p
			}
		}
		if err := obs.Delete(ctx, mine, -1); err != nil {
			t.Fatal(err)
		}
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		g := b.Grant()
		if g.Path() == mine {
			t.Fatalf("granted on %s, which was deleted", mine)
		}
		if st, err := obs.Exists(ctx, g.Path()); err != nil || st == nil {
			t.Fatalf("the grant's node %s: %v, %v", g.Path(), st, err)
		}
		select {
		case <-g.Done():
			t.Fatalf("the grant ended: %v", g.Err())
		default:
		}
		if err := b.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// queueOfTwo starts a holder and a waiter on path; the waiter's Lock
// reports on got once it returns. nw counts the waiter's traffic.
func queueOfTwo(t *testing.T, e *env, path string) (a, b *Mutex, c *zk.Conn, nw *recipetest.Net, got chan error) {
	t.Helper()
	ctx := recipetest.Ctx(t)
	a = NewMutex(e.Connect(t), path)
	if _, err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	nw = &recipetest.Net{}
	c = e.Connect(t, nw.Dialer())
	b = NewMutex(c, path)
	got = make(chan error, 1)
	go func() { _, err := b.Lock(ctx); got <- err }()
	return a, b, c, nw, got
}

// A waiter third in the queue lists it again while the second holds (its
// look-ahead watch on the first fires when the first releases), so that
// when the second releases it takes the lock from the deletion's event,
// without a round trip on the handoff's path. A waiter that gave up in
// between moves the look-ahead on to the node before it.
func TestThirdWaiterListsWhileSecondHolds(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/ahead"
		obs := e.Connect(t)
		a, b, bGot := holderAndWaiter(t, e, obs, path)
		// x waits behind b and gives up while d, behind it, waits.
		xCtx, xCancel := context.WithCancel(ctx)
		defer xCancel()
		xGot := lockAsync(xCtx, NewMutex(e.Connect(t), path))
		waitQueue(t, obs, path, 3)
		nw := &recipetest.Net{}
		c := e.Connect(t, nw.Dialer())
		d := NewMutex(c, path)
		dGot := lockAsync(ctx, d)
		waitQueue(t, obs, path, 4)
		// d's own node, x (its predecessor) and b (the node ahead).
		waitWatchReads(t, c, nw, 3)
		xCancel()
		if err := <-xGot; !errors.Is(err, context.Canceled) {
			t.Fatalf("x's Lock: %v, want context.Canceled", err)
		}
		// d lists again and now waits for b, looking ahead to a.
		waitChildrenReads(t, c, nw, 1)
		waitWatchReads(t, c, nw, 5)
		lists := nw.ChildrenReads()
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-bGot; err != nil {
			t.Fatal(err)
		}
		// a's release: d lists again while b holds.
		waitChildrenReads(t, c, nw, lists+1)
		lists = nw.ChildrenReads()
		if err := b.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-dGot; err != nil {
			t.Fatal(err)
		}
		if n := nw.ChildrenReads() - lists; n != 0 {
			t.Fatalf("d listed the children %d more times after b released", n)
		}
		if got := d.Grant().Path(); !strings.HasPrefix(got, path+"/") {
			t.Fatalf("d's grant is on %s", got)
		}
		if err := d.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// holderAndWaiter returns a, holding the lock on path, and b, waiting
// for it (its Lock reports on bGot), once both nodes are in the queue.
func holderAndWaiter(t *testing.T, e *env, obs *zk.Conn, path string) (a, b *Mutex, bGot <-chan error) {
	t.Helper()
	a = NewMutex(e.Connect(t), path)
	if _, err := a.Lock(recipetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	b = NewMutex(e.Connect(t), path)
	bGot = lockAsync(recipetest.Ctx(t), b)
	waitQueue(t, obs, path, 2)
	return a, b, bGot
}

// thirdWaiter queues d behind holderAndWaiter's two, on a connection
// nw controls (opts added), once its three watches (its own node, its
// predecessor, the node ahead) are set.
func thirdWaiter(t *testing.T, e *env, obs *zk.Conn, path string, opts ...zk.Option) (nw *recipetest.Net, d *Mutex, dGot <-chan error) {
	t.Helper()
	nw = &recipetest.Net{}
	c := e.Connect(t, append([]zk.Option{nw.Dialer()}, opts...)...)
	d = NewMutex(c, path)
	dGot = lockAsync(recipetest.Ctx(t), d)
	waitQueue(t, obs, path, 3)
	waitWatchReads(t, c, nw, 3)
	return nw, d, dGot
}

// lockAsync starts m.Lock(ctx) and reports its outcome on the channel.
func lockAsync(ctx context.Context, m *Mutex) <-chan error {
	got := make(chan error, 1)
	go func() { _, err := m.Lock(ctx); got <- err }()
	return got
}

// waitWatchReads waits until c has sent n reads that leave a watch, then
// makes a round trip on c, after which the server has registered them.
func waitWatchReads(t *testing.T, c *zk.Conn, nw *recipetest.Net, n int64) {
	t.Helper()
	waitCount(t, c, nw.WatchReads, n, "reads that leave a watch")
}

// waitChildrenReads waits until c has sent n getChildren requests, then
// makes a round trip on c.
func waitChildrenReads(t *testing.T, c *zk.Conn, nw *recipetest.Net, n int64) {
	t.Helper()
	waitCount(t, c, nw.ChildrenReads, n, "getChildren requests")
}

func waitCount(t *testing.T, c *zk.Conn, count func() int64, n int64, what string) {
	t.Helper()
	ctx := recipetest.Ctx(t)
	for count() < n {
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("%d %s, want %d", count(), what, n)
		}
	}
	if _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}
}

// A waiter's look-ahead watch survives a lost connection: the holder
// releases while the third waiter is cut off; once it is back, the
// watches set again report the deletion, and the waiter takes the lock
// when the second releases.
func TestLookAheadAcrossReconnection(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/ahead-cut"
		obs := e.Connect(t)
		a, b, bGot := holderAndWaiter(t, e, obs, path)
		nw, d, dGot := thirdWaiter(t, e, obs, path, zk.WithSessionTimeout(20*time.Second))
		nw.Block(true)
		nw.Cut()
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-bGot; err != nil {
			t.Fatal(err)
		}
		nw.Block(false)
		select {
		case err := <-dGot:
			t.Fatalf("d's Lock returned while b holds: %v", err)
		default:
		}
		if err := b.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-dGot; err != nil {
			t.Fatal(err)
		}
		if !d.IsHeld() {
			t.Fatal("d's grant is not held")
		}
		if ch := children(t, obs, path); len(ch) != 1 || !strings.HasSuffix(d.Grant().Path(), ch[0]) {
			t.Fatalf("queue %v, d holds %s", ch, d.Grant().Path())
		}
		if err := d.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A waiter deep in the queue whose node was deleted (by someone else)
// learns it from the list its look-ahead reads, and starts over with a
// new node while the one ahead of it still holds.
func TestDeepWaiterWithDeletedNodeStartsOver(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/ahead-deleted"
		obs := e.Connect(t)
		a, b, bGot := holderAndWaiter(t, e, obs, path)
		_, d, dGot := thirdWaiter(t, e, obs, path)
		queue := children(t, obs, path)
		recipeutil.SortNodes(queue, "lock-")
		mine := path + "/" + queue[2] // d's: the last in the queue
		if err := obs.Delete(ctx, mine, -1); err != nil {
			t.Fatal(err)
		}
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-bGot; err != nil {
			t.Fatal(err)
		}
		// d sees its node gone in the list it reads as a goes, and
		// queues a new one behind b while b holds.
		waitQueue(t, obs, path, 2)
		if err := b.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-dGot; err != nil {
			t.Fatal(err)
		}
		if g := d.Grant(); g.Path() == mine {
			t.Fatalf("granted on %s, which was deleted", mine)
		}
		if err := d.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
