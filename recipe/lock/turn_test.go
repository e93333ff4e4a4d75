package lock

import (
	"testing"

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
		waitWatchSet(t, c, nw)
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
		for nw.WatchReads() < 2 {
			waitWatchSet(t, c, nw)
		}
		waitWatchSet(t, c, nw)
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
