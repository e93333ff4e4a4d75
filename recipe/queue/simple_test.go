package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

func TestSimpleOperations(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/a/simple"
		c := e.Connect(t)
		q := NewSimple(c, path)
		if _, ok, err := q.Peek(ctx); ok || err != nil {
			t.Fatalf("Peek of a missing queue: %v %v", ok, err)
		}
		if _, err := q.Element(ctx); !errors.Is(err, ErrEmpty) {
			t.Fatalf("Element of a missing queue: %v", err)
		}
		if _, err := q.Remove(ctx); !errors.Is(err, ErrEmpty) {
			t.Fatalf("Remove of a missing queue: %v", err)
		}
		for _, v := range []string{"1", "2", "", "4"} {
			if err := q.Offer(ctx, []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		// The layout: qn- and ten digits, the queue node a container.
		names, st, err := c.Children(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 4 || st.EphemeralOwner != 0 {
			t.Fatalf("children %v", names)
		}
		for _, n := range names {
			if len(n) != len(SimplePrefix)+10 || n[:3] != SimplePrefix {
				t.Fatalf("item node %q", n)
			}
		}
		// A foreign child is ignored.
		if _, err := c.Create(ctx, path+"/foreign", nil, recipetest.OpenACL, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		if n, err := q.Len(ctx); n != 4 || err != nil {
			t.Fatalf("Len = %d, %v", n, err)
		}
		if v, ok, err := q.Peek(ctx); string(v) != "1" || !ok || err != nil {
			t.Fatalf("Peek = %q %v %v", v, ok, err)
		}
		if v, err := q.Element(ctx); string(v) != "1" || err != nil {
			t.Fatalf("Element = %q %v", v, err)
		}
		if v, ok, err := q.Poll(ctx); string(v) != "1" || !ok || err != nil {
			t.Fatalf("Poll = %q %v %v", v, ok, err)
		}
		if v, err := q.Remove(ctx); string(v) != "2" || err != nil {
			t.Fatalf("Remove = %q %v", v, err)
		}
		if v, err := q.Take(ctx); len(v) != 0 || err != nil {
			t.Fatalf("Take = %q %v", v, err)
		}
		if v, err := q.Take(ctx); string(v) != "4" || err != nil {
			t.Fatalf("Take = %q %v", v, err)
		}
		if _, ok, err := q.Poll(ctx); ok || err != nil {
			t.Fatalf("Poll of an empty queue: %v %v", ok, err)
		}
		if n, err := q.Len(ctx); n != 0 || err != nil {
			t.Fatalf("Len = %d, %v", n, err)
		}
		// Take with a deadline is poll(timeout).
		start := time.Now()
		tctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
		_, err = q.Take(tctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 150*time.Millisecond {
			t.Fatalf("Take on an empty queue: %v after %v", err, time.Since(start))
		}
	})
}

// TestSimpleTakeWaits: Take blocks until another session offers, and
// consumers racing for items each get distinct ones.
func TestSimpleTakeWaits(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/simple"
		prod := NewSimple(e.Connect(t), path)
		const consumers, items = 3, 30
		got := make(chan string, items)
		errs := make(chan error, consumers)
		cctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for range consumers {
			q := NewSimple(e.Connect(t), path)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					v, err := q.Take(cctx)
					if err != nil {
						if !errors.Is(err, context.Canceled) {
							errs <- err
						}
						return
					}
					got <- string(v)
				}
			}()
		}
		time.Sleep(50 * time.Millisecond) // the consumers wait
		for i := range items {
			if err := prod.Offer(ctx, fmt.Appendf(nil, "v%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[string]bool{}
		for range items {
			select {
			case v := <-got:
				if seen[v] {
					t.Fatalf("%s taken twice", v)
				}
				seen[v] = true
			case err := <-errs:
				t.Fatal(err)
			case <-ctx.Done():
				t.Fatalf("only %d of %d items taken", len(seen), items)
			}
		}
		cancel()
		wg.Wait()
		if len(got) != 0 {
			t.Fatalf("extra items: %d", len(got))
		}
	})
}

// TestSimpleReapedContainer: the queue node is a container; once the
// server reaps it, Offer and Take recreate it.
func TestSimpleReapedContainer(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		c := e.Connect(t)
		path := e.Root + "/reaped"
		q := NewSimple(c, path)
		if err := q.Offer(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Take(ctx); err != nil {
			t.Fatal(err)
		}
		// Remove it ourselves (as the container reaper would).
		if err := c.Delete(ctx, path, zk.AnyVersion); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			v, err := q.Take(ctx)
			if err == nil && string(v) != "y" {
				err = fmt.Errorf("took %q", v)
			}
			done <- err
		}()
		time.Sleep(50 * time.Millisecond)
		if err := NewSimple(e.Connect(t), path).Offer(ctx, []byte("y")); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
