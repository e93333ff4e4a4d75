package tree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/zkgo/zkgo/proto"
)

// TestNodeSize pins the node's size: 80 bytes is a malloc size class, and
// every byte more costs a size class (16 bytes) per znode.
func TestNodeSize(t *testing.T) {
	if s := unsafe.Sizeof(Node{}); s != 80 {
		t.Fatalf("Node is %d bytes, want 80", s)
	}
}

// TestChildrenSet adds and removes random names in a children set, through
// the packed and hashed layouts and back, checking it against a map after
// every step, and the listing cache against the sorted names: a listing
// handed out never changes afterwards.
func TestChildrenSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	parent := newNode("p", nil)
	k := parent.ensureKids()
	model := map[string]*Node{}
	type handed struct {
		list []string
		want []string
	}
	var lists []handed
	var names []string
	sawHashed, sawPackedAgain := false, false
	for step := 0; step < 40000; step++ {
		sawHashed = sawHashed || k.hashed
		sawPackedAgain = sawPackedAgain || (sawHashed && !k.hashed && k.count > 0)
		// Grow to a few thousand children, shrink to none, grow again.
		phase := step / 5000 % 4
		add := rng.IntN(100) < []int{80, 20, 70, 30}[phase]
		switch {
		case add:
			name := fmt.Sprintf("c%x", rng.IntN(6000))
			if model[name] != nil {
				break
			}
			n := newNode(name, []byte("x"))
			k.add(n)
			model[name] = n
			names = append(names, name)
		case len(names) > 0:
			i := rng.IntN(len(names))
			name := names[i]
			names[i] = names[len(names)-1]
			names = names[:len(names)-1]
			// Remove with a name that does not share the child's bytes.
			if got := k.remove(strings.Clone(name)); got != model[name] {
				t.Fatalf("step %d: remove %s returned %p, want %p", step, name, got, model[name])
			}
			delete(model, name)
		}
		if k.remove("absent") != nil || k.get("absent") != nil || k.get("") != nil {
			t.Fatalf("step %d: found an absent name", step)
		}
		if rng.IntN(20) == 0 {
			want := slices.Sorted(func(yield func(string) bool) {
				for n := range model {
					if !yield(n) {
						return
					}
				}
			})
			got := parent.Children()
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: listing differs from the set (%d vs %d names)", step, len(got), len(want))
			}
			if got == nil || cap(got) != len(got) {
				t.Fatalf("step %d: listing nil or with spare capacity", step)
			}
			lists = append(lists, handed{got, want})
		}
		if step%97 == 0 || k.count < 20 {
			var bad []string
			checkChildren("/p", parent, func(f string, a ...any) { bad = append(bad, fmt.Sprintf(f, a...)) })
			if len(bad) > 0 {
				t.Fatalf("step %d: %s", step, strings.Join(bad, "\n"))
			}
			for name, n := range model {
				if k.get(name) != n {
					t.Fatalf("step %d: %s not found", step, name)
				}
			}
			if k.count != len(model) || parent.NumChildren() != len(model) {
				t.Fatalf("step %d: count %d, want %d", step, k.count, len(model))
			}
		}
	}
	for i, h := range lists {
		if !slices.Equal(h.list, h.want) {
			t.Fatalf("listing %d changed after it was handed out", i)
		}
	}
	if !sawHashed || !sawPackedAgain || len(lists) == 0 {
		t.Fatalf("layouts not all exercised: hashed %v, packed again %v, %d listings", sawHashed, sawPackedAgain, len(lists))
	}
}

// TestChildrenListingFollowsChanges lists a large directory between creates
// and deletes (in place and copied) and checks every listing, including
// after a rolled-back multi and after more changes than the cache follows.
func TestChildrenListingFollowsChanges(t *testing.T) {
	a := newApplier(Options{})
	a.mustOK(t, createTxn("/d", "", proto.ModePersistent, 0))
	want := map[string]bool{}
	check := func(when string) {
		t.Helper()
		got := a.t.Get("/d").Children()
		var w []string
		for n := range want {
			w = append(w, n)
		}
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Fatalf("%s: listing has %d names, want %d", when, len(got), len(w))
		}
		if bad := checkInvariants(a.t); len(bad) > 0 {
			t.Fatalf("%s: %s", when, strings.Join(bad, "\n"))
		}
	}
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("n%03d", (i*37)%300)
		a.mustOK(t, createTxn("/d/"+name, "", proto.ModePersistent, 0))
		want[name] = true
		if i%50 == 0 {
			check(fmt.Sprintf("after create %d", i))
		}
	}
	old := a.t.Get("/d").Children()
	oldCopy := slices.Clone(old)
	// Changes without a listing in between: edited in place, then dropped.
	for i := 0; i < maxListEdits+10; i++ {
		name := fmt.Sprintf("n%03d", i)
		a.mustOK(t, &Txn{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/d/" + name, Version: -1}})
		delete(want, name)
		if i == 3 {
			check("after a few deletes")
		}
	}
	check("after many deletes")
	if !slices.Equal(old, oldCopy) {
		t.Fatal("a listing handed out changed")
	}
	// A multi that creates and deletes children, then fails: rolled back.
	r := a.apply(&Txn{Op: proto.OpMulti, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/d/new1", ACL: openACL}},
		{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/d/n299", Version: -1}},
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/d/new2", ACL: openACL}},
		{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/d/missing", Version: -1}},
	}}})
	if r.Multi[3].Err != proto.ErrNoNode {
		t.Fatalf("multi: %+v", r.Multi)
	}
	check("after a rolled-back multi")
	// Delete everything (back to the packed layout), then recreate.
	for name := range want {
		a.mustOK(t, &Txn{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/d/" + name, Version: -1}})
		delete(want, name)
		if len(want)%40 == 0 {
			check(fmt.Sprintf("with %d left", len(want)))
		}
	}
	if got := a.t.Get("/d").Children(); got == nil || len(got) != 0 {
		t.Fatalf("empty directory lists %#v", got)
	}
	if a.t.Get("/d/") != nil {
		t.Fatal(`Get("/d/") found a node`)
	}
}

// TestGetOnlyCanonicalPaths checks that Get finds a node only by its exact
// path, as a map keyed by path did.
func TestGetOnlyCanonicalPaths(t *testing.T) {
	a := newApplier(Options{})
	a.mustOK(t, createTxn("/a", "", proto.ModePersistent, 0))
	a.mustOK(t, createTxn("/a/b", "", proto.ModePersistent, 0))
	for i := 0; i < 20; i++ {
		a.mustOK(t, createTxn(fmt.Sprintf("/a/b/c%d", i), "", proto.ModePersistent, 0))
	}
	for _, p := range []string{"/a", "/a/b", "/a/b/c7", "/a/b/c19", "/", ""} {
		if a.t.Get(p) == nil {
			t.Errorf("Get(%q) = nil", p)
		}
	}
	for _, p := range []string{"a", "a/b", "//a", "/a/", "/a//b", "/a/b/", "/a/b/c7/", "/a/./b", "/a/b/c", "/a/b/c20", "/b", " ", "/a/b/c7/x"} {
		if a.t.Get(p) != nil {
			t.Errorf("Get(%q) found a node", p)
		}
	}
}

// TestChildrenConcurrentReaders lists and looks up children from several
// goroutines under a read lock while Apply changes them under the write
// lock, as the server does; run with -race.
func TestChildrenConcurrentReaders(t *testing.T) {
	a := newApplier(Options{})
	a.mustOK(t, createTxn("/d", "", proto.ModePersistent, 0))
	for i := 0; i < 100; i++ {
		a.mustOK(t, createTxn(fmt.Sprintf("/d/c%03d", i), "", proto.ModePersistent, 0))
	}
	var mu sync.RWMutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan string, 8)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held [][]string
			var copies [][]string
			for {
				select {
				case <-stop:
					for i := range held {
						if !slices.Equal(held[i], copies[i]) {
							errs <- "a listing changed after it was returned"
							return
						}
					}
					return
				default:
				}
				mu.RLock()
				l := a.t.Get("/d").Children()
				if !slices.IsSorted(l) {
					errs <- "unsorted listing"
				}
				if len(held) < 200 {
					held = append(held, l)
					copies = append(copies, slices.Clone(l))
				}
				_ = a.t.Get("/d/c050")
				mu.RUnlock()
			}
		}()
	}
	for i := 0; i < 2000; i++ {
		p := fmt.Sprintf("/d/x%03d", i%150)
		mu.Lock()
		if i/150%2 == 0 {
			a.mustOK(t, createTxn(p, "", proto.ModePersistent, 0))
		} else {
			a.mustOK(t, &Txn{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: p, Version: -1}})
		}
		mu.Unlock()
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
