package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

type env = recipetest.Env

// take takes one message or fails the test.
func take(t *testing.T, q interface {
	Take(context.Context) (*Message, error)
}) *Message {
	t.Helper()
	m, err := q.Take(recipetest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func values(m *Message) string {
	var s []string
	for _, v := range m.Values {
		s = append(s, string(v))
	}
	return strings.Join(s, ",")
}

func TestQueueFIFO(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/a/fifo"
		c := e.Connect(t)
		q := New(c, path)
		if _, ok, err := q.TryTake(ctx); ok || err != nil {
			t.Fatalf("TryTake of a missing queue: %v %v", ok, err)
		}
		for _, v := range []string{"1", "2", "3"} {
			if err := q.Put(ctx, []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.PutMulti(ctx, [][]byte{[]byte("4a"), []byte("4b"), {}}); err != nil {
			t.Fatal(err)
		}
		if err := q.PutMulti(ctx, nil); err == nil {
			t.Fatal("PutMulti of nothing")
		}
		// A foreign child is ignored.
		if _, err := c.Create(ctx, path+"/foreign", nil, recipetest.OpenACL, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		if n, err := q.Len(ctx); n != 4 || err != nil {
			t.Fatalf("Len = %d %v", n, err)
		}
		st, err := c.Exists(ctx, path)
		if err != nil || st == nil || st.EphemeralOwner != 0 {
			t.Fatalf("queue node %+v %v", st, err)
		}
		for _, want := range []string{"1", "2", "3", "4a,4b,"} {
			m := take(t, q)
			if got := values(m); got != want || !strings.HasPrefix(m.Name, "queue-") || len(m.Name) != len("queue-")+10 {
				t.Fatalf("took %s %q, want %q", m.Name, got, want)
			}
			if m.Grant() != nil {
				t.Fatal("a grant without a lock path")
			}
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
			if err := m.Requeue(ctx); !errors.Is(err, ErrNotLockSafe) {
				t.Fatalf("Requeue without a lock path: %v", err)
			}
		}
		if _, ok, err := q.TryTake(ctx); ok || err != nil {
			t.Fatalf("TryTake of an empty queue: %v %v", ok, err)
		}
		// Take waits for the next put.
		got := make(chan *Message, 1)
		go func() {
			m, err := New(e.Connect(t), path).Take(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- m
		}()
		if err := q.Put(ctx, []byte("late")); err != nil {
			t.Fatal(err)
		}
		if m := <-got; m == nil || values(m) != "late" {
			t.Fatalf("waiting Take got %v", m)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := q.Take(cctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Take: %v", err)
		}
		big := New(c, path, WithMaxNodeBytes(64))
		if err := big.PutMulti(ctx, [][]byte{make([]byte, 30), make([]byte, 30)}); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("PutMulti over the limit: %v", err)
		}
	})
}

func TestPriorityQueue(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		q := NewPriority(e.Connect(t), e.Root+"/prio", WithLockPath(e.Root+"/prio-locks"))
		puts := []struct {
			v string
			p int32
		}{{"five", 5}, {"min", math.MinInt32}, {"zero", 0}, {"five again", 5}, {"minus", -1}, {"max", math.MaxInt32}}
		for _, p := range puts {
			if err := q.Put(ctx, []byte(p.v), p.p); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.PutMulti(ctx, [][]byte{[]byte("m1"), []byte("m2")}, 1); err != nil {
			t.Fatal(err)
		}
		// A requeued item keeps its priority: "zero" comes back before
		// "m1,m2" (priority 1).
		for i, want := range []string{"min", "minus", "zero", "zero", "m1,m2", "five", "five again", "max"} {
			m := take(t, q)
			if got := values(m); got != want {
				t.Fatalf("take %d: %q (%s), want %q", i, got, m.Name, want)
			}
			if i == 2 {
				if err := m.Requeue(ctx); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestDelayQueue(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		q := NewDelay(e.Connect(t), e.Root+"/delay")
		now := time.Now()
		dues := map[string]time.Time{
			"later":  now.Add(400 * time.Millisecond),
			"soon":   now.Add(150 * time.Millisecond),
			"past":   now.Add(-time.Hour),
			"past 2": now.Add(-time.Minute),
		}
		for _, v := range []string{"later", "soon", "past 2", "past"} {
			if err := q.Put(ctx, []byte(v), dues[v]); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Put(ctx, []byte("x"), time.UnixMilli(0)); err == nil {
			t.Fatal("Put due at the epoch")
		}
		for _, want := range []string{"past", "past 2", "soon", "later"} {
			m := take(t, q)
			if got := values(m); got != want {
				t.Fatalf("took %q, want %q", got, want)
			}
			if now := time.Now(); now.Before(dues[want].Truncate(time.Millisecond)) {
				t.Fatalf("%q taken at %v, due %v", want, now, dues[want])
			}
			if !strings.Contains(m.Name, DelayInfix(dues[want])) {
				t.Fatalf("node %s lacks %s", m.Name, DelayInfix(dues[want]))
			}
		}
	})
}

func TestIDQueue(t *testing.T) {
	for _, lockSafe := range []bool{false, true} {
		t.Run(fmt.Sprintf("lockSafe=%v", lockSafe), func(t *testing.T) {
			recipetest.ForEach(t, func(t *testing.T, e *env) {
				ctx := recipetest.Ctx(t)
				var opts []Option
				if lockSafe {
					opts = append(opts, WithLockPath(e.Root+"/id-locks"))
				}
				if _, err := NewID(nil, "/a|b"); err == nil {
					t.Fatal("NewID with | in the path")
				}
				q, err := NewID(e.Connect(t), e.Root+"/ids", opts...)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range [][2]string{{"1", "a/b"}, {"2", "keep"}, {"3", "a/b"}, {"4", "keep"}} {
					if err := q.Put(ctx, []byte(p[0]), p[1]); err != nil {
						t.Fatal(err)
					}
				}
				if err := q.Put(ctx, []byte("x"), ""); err == nil {
					t.Fatal("Put with an empty id")
				}
				if lockSafe {
					// An item a consumer holds is not removed.
					m := take(t, q)
					if values(m) != "1" || ID(m) != "a_b" || !strings.HasPrefix(m.Name, "queue-|a_b|") {
						t.Fatalf("took %s %q", m.Name, values(m))
					}
					if n, err := q.Remove(ctx, "a/b"); n != 1 || err != nil {
						t.Fatalf("Remove beside a held item: %d %v", n, err)
					}
					if err := m.Release(ctx); err != nil {
						t.Fatal(err)
					}
				}
				n, err := q.Remove(ctx, "a/b")
				if want := 2; lockSafe {
					want = 1
					if n != want || err != nil {
						t.Fatalf("Remove = %d %v, want %d", n, err, want)
					}
				} else if n != want || err != nil {
					t.Fatalf("Remove = %d %v, want %d", n, err, want)
				}
				for _, want := range []string{"2", "4"} {
					m := take(t, q)
					if values(m) != want || ID(m) != "keep" {
						t.Fatalf("took %q (%s), want %q", values(m), m.Name, want)
					}
					if err := m.Ack(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if n, _ := q.Len(ctx); n != 0 {
					t.Fatalf("%d items left", n)
				}
			})
		})
	}
}

// TestBoundedPut: a put into a full queue waits until an item is taken.
func TestBoundedPut(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/bounded"
		nw := &recipetest.Net{}
		pc := e.Connect(t, nw.Dialer())
		q := New(pc, path, WithMaxItems(2))
		for _, v := range []string{"1", "2"} {
			if err := q.Put(ctx, []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		before := nw.WatchReads()
		done := make(chan error, 1)
		go func() { done <- q.Put(ctx, []byte("3")) }()
		for nw.WatchReads() == before {
			time.Sleep(time.Millisecond)
		}
		if _, err := pc.Exists(ctx, "/"); err != nil { // the watch is registered
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Fatalf("Put into a full queue returned %v", err)
		default:
		}
		consumer := New(e.Connect(t), path)
		if m := take(t, consumer); values(m) != "1" {
			t.Fatalf("took %q", values(m))
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n, _ := q.Len(ctx); n != 2 {
			t.Fatalf("Len = %d after the waiting put", n)
		}
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if err := q.Put(tctx, []byte("4")); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Put into a full queue with a deadline: %v", err)
		}
	})
}

// TestLockSafeMessage: the lock node's layout, Release, Ack, and an Ack
// of a message whose lock is gone.
func TestLockSafeMessage(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path, locks := e.Root+"/ls", e.Root+"/ls-locks"
		admin := e.Connect(t)
		a := New(e.Connect(t), path, WithLockPath(locks))
		b := New(e.Connect(t), path, WithLockPath(locks))
		for _, v := range []string{"1", "2"} {
			if err := a.Put(ctx, []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		m := take(t, a)
		st, err := admin.Exists(ctx, locks+"/"+m.Name)
		if err != nil || st == nil || st.EphemeralOwner == 0 {
			t.Fatalf("lock node %s: %+v %v", locks+"/"+m.Name, st, err)
		}
		if m.Grant() == nil || m.Grant().Token() != st.Czxid || !m.Grant().Held() {
			t.Fatalf("grant %+v, lock czxid %d", m.Grant(), st.Czxid)
		}
		// b skips the locked item.
		mb := take(t, b)
		if values(m) != "1" || values(mb) != "2" {
			t.Fatalf("a took %q, b took %q", values(m), values(mb))
		}
		if _, ok, _ := b.TryTake(ctx); ok {
			t.Fatal("b took a locked item")
		}
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Ack(ctx); !errors.Is(err, ErrFinished) {
			t.Fatalf("Ack after Release: %v", err)
		}
		again := take(t, b)
		if values(again) != "1" {
			t.Fatalf("after Release b took %q", values(again))
		}
		// Someone deletes b's lock: its Ack must not remove the item.
		if err := admin.Delete(ctx, locks+"/"+again.Name, zk.AnyVersion); err != nil {
			t.Fatal(err)
		}
		<-again.Grant().Done()
		if err := again.Ack(ctx); !errors.Is(err, ErrLockLost) {
			t.Fatalf("Ack without the lock: %v", err)
		}
		if st, _ := admin.Exists(ctx, path+"/"+again.Name); st == nil {
			t.Fatal("an Ack without the lock removed the item")
		}
		if err := mb.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := a.Len(ctx); n != 1 {
			t.Fatalf("Len = %d, want 1", n)
		}
		ch, _, err := admin.Children(ctx, locks)
		if err != nil || len(ch) != 0 {
			t.Fatalf("locks left: %v %v", ch, err)
		}
	})
}
