package partition

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
)

func TestDefault(t *testing.T) {
	set := []string{"e", "a", "d", "b", "c"}
	members := []string{"w2", "w1"}
	if got := Default("w1", members, set); !slices.Equal(got, []string{"a", "c", "e"}) {
		t.Fatalf("w1: %v", got)
	}
	if got := Default("w2", members, set); !slices.Equal(got, []string{"b", "d"}) {
		t.Fatalf("w2: %v", got)
	}
	if got := Default("x", members, set); got != nil {
		t.Fatalf("non-member: %v", got)
	}
}

// settle drives every partitioner (releasing when asked) until all are
// Acquired, and returns who got what.
func settle(t *testing.T, ctx context.Context, ps []*SetPartitioner) map[string][]string {
	t.Helper()
	for {
		all := true
		for _, p := range ps {
			switch p.State() {
			case Release:
				if err := p.ReleaseSet(ctx); err != nil {
					t.Fatal(err)
				}
				all = false
			case Failure:
				t.Fatalf("%s failed", p.Identifier())
			case Allocating:
				all = false
			}
		}
		if all {
			out := map[string][]string{}
			for _, p := range ps {
				out[p.Identifier()] = p.Partitions()
			}
			return out
		}
		select {
		case <-ctx.Done():
			t.Fatal("never settled")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func check(t *testing.T, got map[string][]string, set []string) {
	t.Helper()
	var members []string
	for id := range got {
		members = append(members, id)
	}
	seen := map[string]string{}
	for id, items := range got {
		if want := Default(id, members, set); !slices.Equal(items, want) {
			t.Fatalf("%s got %v, want %v", id, items, want)
		}
		for _, it := range items {
			if seen[it] != "" {
				t.Fatalf("%s held by %s and %s", it, seen[it], id)
			}
			seen[it] = id
		}
	}
	if len(seen) != len(set) {
		t.Fatalf("%d of %d items held", len(seen), len(set))
	}
}

func TestSetPartitioner(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *recipetest.Env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/part"
		var set []string
		for i := range 7 {
			set = append(set, fmt.Sprintf("item-%d", i))
		}
		opts := func(id string) []Option {
			return []Option{WithIdentifier(id), WithTimeBoundary(150 * time.Millisecond), WithMaxReactionTime(100 * time.Millisecond)}
		}
		var ps []*SetPartitioner
		for i := range 3 {
			p, err := New(ctx, e.Connect(t), path, set, opts(fmt.Sprintf("w%d", i))...)
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		check(t, settle(t, ctx, ps), set)
		// A member leaves: the others are told to release, and divide
		// the set between them.
		ch := ps[1].Changed()
		if err := ps[0].Finish(ctx); err != nil {
			t.Fatal(err)
		}
		if ps[0].State() != Failure {
			t.Fatalf("after Finish: %v", ps[0].State())
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("no state change after a member left")
		}
		check(t, settle(t, ctx, ps[1:]), set)
		// A member joins.
		p, err := New(ctx, e.Connect(t), path, set, opts("w9")...)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps[1:], p)
		check(t, settle(t, ctx, ps), set)
		if s, err := p.WaitForAcquire(ctx); err != nil || s != Acquired {
			t.Fatalf("WaitForAcquire: %v %v", s, err)
		}
		for _, p := range ps {
			p.Finish(ctx)
		}
	})
}
