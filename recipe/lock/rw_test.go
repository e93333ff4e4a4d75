package lock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/tests/framework/recipetest"
)

func TestRWMutex(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/rw"
		obs := e.Connect(t)
		r1 := NewRWMutex(e.Connect(t), path)
		r2 := NewRWMutex(e.Connect(t), path)
		w := NewRWMutex(e.Connect(t), path)
		r3 := NewRWMutex(e.Connect(t), path)

		g1, err := r1.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(g1.Path(), "__READ__") {
			t.Fatalf("read node %s", g1.Path())
		}
		if _, err := r2.RLock(ctx); err != nil { // readers share
			t.Fatal(err)
		}
		if _, ok, _ := w.TryLock(ctx); ok {
			t.Fatal("writer got the lock while readers hold it")
		}
		wGot := make(chan *recipe.Grant, 1)
		go func() {
			g, err := w.Lock(ctx)
			if err != nil {
				t.Error(err)
			}
			wGot <- g
		}()
		waitQueue(t, obs, path, 3)
		// A reader arriving after a queued writer waits for it.
		rGot := make(chan error, 1)
		go func() { _, err := r3.RLock(ctx); rGot <- err }()
		waitQueue(t, obs, path, 4)
		if err := r1.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-wGot:
			t.Fatal("writer got the lock while a reader still holds it")
		case <-rGot:
			t.Fatal("reader overtook the queued writer")
		default:
		}
		if err := r2.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
		gw := <-wGot
		if !strings.Contains(gw.Path(), "__WRIT__") || gw.Token() <= g1.Token() {
			t.Fatalf("write grant %s token %d", gw.Path(), gw.Token())
		}
		select {
		case <-rGot:
			t.Fatal("reader got the lock while the writer holds it")
		default:
		}
		// Downgrade: the writer takes the read lock, then drops the write
		// lock; the waiting reader then gets in beside it.
		if _, err := w.RLock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-rGot; err != nil {
			t.Fatal(err)
		}
		ps, err := w.Participants(ctx)
		if err != nil || len(ps) != 2 {
			t.Fatalf("participants %+v %v", ps, err)
		}
	})
}

func TestSemaphore(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/sem"
		s1 := NewSemaphore(e.Connect(t), path, 2)
		s2 := NewSemaphore(e.Connect(t), path, 2)
		ls, err := s1.AcquireN(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(ls[0].Path(), path+"/leases/_c_") || !strings.Contains(ls[0].Path(), "lease-") {
			t.Fatalf("lease node %s", ls[0].Path())
		}
		if _, ok, err := s2.TryAcquire(ctx); ok || err != nil {
			t.Fatalf("TryAcquire with no lease free: %v %v", ok, err)
		}
		got := make(chan *Lease, 1)
		go func() {
			l, err := s2.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		waitQueue(t, e.Connect(t), path+"/leases", 3)
		select {
		case <-got:
			t.Fatal("third lease granted with a limit of 2")
		default:
		}
		if err := ls[0].Release(ctx); err != nil {
			t.Fatal(err)
		}
		l := <-got
		if l == nil || !l.Held() {
			t.Fatal("no lease after a release")
		}
		ps, err := s1.Participants(ctx)
		if err != nil || len(ps) != 2 {
			t.Fatalf("participants %+v %v", ps, err)
		}
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err = s1.Acquire(tctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("timed-out Acquire: %v", err)
		}
		if n := len(children(t, e.Connect(t), path+"/leases")); n != 2 {
			t.Fatalf("%d lease nodes after a timed-out acquire, want 2", n)
		}
	})
}

func TestSharedSemaphore(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path, count := e.Root+"/ssem", e.Root+"/ssem-count"
		c := e.Connect(t)
		if err := SetSharedCount(ctx, c, count, 1); err != nil {
			t.Fatal(err)
		}
		s := NewSharedSemaphore(c, path, count)
		if _, err := s.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() { _, err := NewSharedSemaphore(e.Connect(t), path, count).Acquire(ctx); got <- err }()
		waitQueue(t, c, path+"/leases", 2)
		if err := SetSharedCount(ctx, c, count, 2); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	})
}

func TestSemaphoreMutexAndMultiLock(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		a := NewSemaphoreMutex(e.Connect(t), e.Root+"/sm")
		if err := a.Unlock(ctx); !errors.Is(err, recipe.ErrNotHeld) {
			t.Fatalf("unlock of a free SemaphoreMutex: %v", err)
		}
		if _, err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		// Non-reentrant: a second Lock on the same value waits.
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := a.Lock(tctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("second Lock of a SemaphoreMutex: %v", err)
		}
		if !a.IsHeld() {
			t.Fatal("lost the lock")
		}

		// MultiLock: all or none.
		c1, c2 := e.Connect(t), e.Connect(t)
		m1, m2 := NewMutex(c1, e.Root+"/m1"), NewMutex(c1, e.Root+"/m2")
		other := NewMutex(c2, e.Root+"/m2")
		if _, err := other.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		ml := NewMultiLock(m1, m2)
		tctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
		_, err = ml.Lock(tctx)
		cancel()
		if err == nil {
			t.Fatal("MultiLock succeeded while one lock is held elsewhere")
		}
		if m1.IsHeld() {
			t.Fatal("MultiLock kept the first lock after failing")
		}
		if err := other.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		gs, err := ml.Lock(ctx)
		if err != nil || len(gs) != 2 {
			t.Fatalf("MultiLock: %v %v", gs, err)
		}
		if err := ml.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if m1.IsHeld() || m2.IsHeld() {
			t.Fatal("MultiLock.Unlock left a lock held")
		}
	})
}
