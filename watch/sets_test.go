package watch

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"github.com/zkgo/zkgo/proto"
)

// checkPathSet fails unless s holds exactly want, in the representation
// its size calls for.
func checkPathSet(t *testing.T, s pathSet, want map[string]bool, step string) {
	t.Helper()
	var got []string
	for p := range s.all() {
		got = append(got, p)
	}
	var w []string
	for p := range want {
		w = append(w, p)
	}
	sort.Strings(got)
	sort.Strings(w)
	if !reflect.DeepEqual(got, w) || s.len() != len(want) {
		t.Fatalf("%s: set %q (len %d), want %q", step, got, s.len(), w)
	}
	switch {
	case s.more == nil:
		if len(want) != 1 || s.one != w[0] {
			t.Fatalf("%s: inline %q for %q", step, s.one, w)
		}
	case s.more.many != nil:
		if s.more.few != nil || len(s.more.many) <= smallPaths/2 {
			t.Fatalf("%s: a map of %d paths (slice %q)", step, len(s.more.many), s.more.few)
		}
	default:
		if len(s.more.few) < 2 || len(s.more.few) > smallPaths || s.one != "" {
			t.Fatalf("%s: a slice of %d paths, inline %q", step, len(s.more.few), s.one)
		}
	}
}

// TestPathSetGrowsAndShrinks walks a set from one path through the slice
// to the map and back, checking contents and representation each step.
func TestPathSetGrowsAndShrinks(t *testing.T) {
	const n = 3 * smallPaths
	path := func(i int) string { return fmt.Sprintf("/p%d", i) }
	s := pathSet{one: path(0)}
	want := map[string]bool{path(0): true}
	checkPathSet(t, s, want, "first")
	for i := 1; i < n; i++ {
		s.add(path(i))
		s.add(path(i)) // twice: still once
		s.add(path(0))
		want[path(i)] = true
		checkPathSet(t, s, want, fmt.Sprintf("add %d", i))
	}
	if s.more == nil || s.more.many == nil {
		t.Fatal("no map at", n, "paths")
	}
	if s.remove("/absent") {
		t.Fatal("removing an absent path emptied the set")
	}
	// Remove from the front so that the paths left are not the ones
	// most recently added.
	for i := 0; i < n; i++ {
		empty := s.remove(path(i))
		delete(want, path(i))
		if empty != (len(want) == 0) {
			t.Fatalf("remove %d: empty=%v with %d left", i, empty, len(want))
		}
		if !empty {
			checkPathSet(t, s, want, fmt.Sprintf("remove %d", i))
			if s.remove(path(i)) {
				t.Fatalf("remove %d again: empty", i)
			}
		}
	}
}

// TestPathSetRandom runs random adds and removes on pathSets against a
// map.
func TestPathSetRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for run := 0; run < 200; run++ {
		universe := 1 + rng.Intn(3*smallPaths)
		p0 := fmt.Sprintf("/r%d", rng.Intn(universe))
		s := pathSet{one: p0}
		want := map[string]bool{p0: true}
		for step := 0; step < 200 && len(want) > 0; step++ {
			p := fmt.Sprintf("/r%d", rng.Intn(universe))
			if rng.Intn(5) < 3 {
				s.add(p)
				want[p] = true
			} else {
				delete(want, p)
				if empty := s.remove(p); empty != (len(want) == 0) {
					t.Fatalf("run %d step %d: remove %s: empty=%v, %d left", run, step, p, empty, len(want))
				}
				if len(want) == 0 {
					break
				}
			}
			checkPathSet(t, s, want, fmt.Sprintf("run %d step %d", run, step))
		}
	}
}

// TestWatcherSetRandom runs random sets and removes on watcherSets against
// a map.
func TestWatcherSetRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	ws := make([]Watcher, 12)
	for i := range ws {
		ws[i] = newRecorder(int64(i))
	}
	for run := 0; run < 200; run++ {
		var s watcherSet
		want := map[Watcher]Mode{}
		n := 1 + rng.Intn(len(ws))
		for step := 0; step < 100; step++ {
			w := ws[rng.Intn(n)]
			if rng.Intn(2) == 0 {
				mode := Mode(1 + rng.Intn(int(allModes)))
				s.set(w, mode)
				want[w] = mode
			} else {
				delete(want, w)
				if empty := s.remove(w); empty != (len(want) == 0) {
					t.Fatalf("run %d step %d: empty=%v, %d left", run, step, empty, len(want))
				}
			}
			got := map[Watcher]Mode{}
			for w, mode := range s.all() {
				got[w] = mode
			}
			if !reflect.DeepEqual(got, want) || s.len() != len(want) {
				t.Fatalf("run %d step %d: %v (len %d), want %v", run, step, got, s.len(), want)
			}
			for _, w := range ws {
				if s.mode(w) != want[w] {
					t.Fatalf("run %d step %d: mode %d, want %d", run, step, s.mode(w), want[w])
				}
			}
		}
	}
}

// TestManyPathsOneWatcher takes one watcher's paths from one through the
// slice and map sets and back down, by Remove, by firing and by
// RemoveWatcher, with another watcher beside it on every path.
func TestManyPathsOneWatcher(t *testing.T) {
	const n = 3 * smallPaths
	for _, how := range []string{"remove", "fire", "removeWatcher"} {
		for _, k := range []int{1, 2, smallPaths, smallPaths + 1, n} {
			m := NewManager()
			w, other := newRecorder(1), newRecorder(2)
			var paths []string
			for i := 0; i < k; i++ {
				p := fmt.Sprintf("/p%02d", i)
				paths = append(paths, p)
				m.AddData(p, w)
				m.AddChild(p, w)
				m.AddData(p, other)
			}
			if got := m.WatchesOf(w); got != 2*k {
				t.Fatalf("%s %d: WatchesOf %d", how, k, got)
			}
			if got := m.BySession()[1]; !reflect.DeepEqual(got, paths) {
				t.Fatalf("%s %d: BySession %q", how, k, got)
			}
			switch how {
			case "removeWatcher":
				m.RemoveWatcher(w)
				paths = nil
			default:
				for len(paths) > 0 {
					p := paths[len(paths)/2]
					paths = append(paths[:len(paths)/2:len(paths)/2], paths[len(paths)/2+1:]...)
					if how == "remove" {
						if !m.Remove(p, w, proto.WatcherData) || !m.Remove(p, w, proto.WatcherChildren) {
							t.Fatalf("%s %d: Remove(%s) = false", how, k, p)
						}
					} else {
						m.Trigger(deleted(p))
						expect(t, w, "NodeDeleted "+p)
						expect(t, other, "NodeDeleted "+p)
						m.AddData(p, other)
					}
					if got := m.WatchesOf(w); got != 2*len(paths) {
						t.Fatalf("%s %d: WatchesOf %d with %d paths left", how, k, got, len(paths))
					}
					if got := m.BySession()[1]; !reflect.DeepEqual(got, paths) && len(paths) > 0 {
						t.Fatalf("%s %d: BySession %q, want %q", how, k, got, paths)
					}
					for _, q := range paths {
						if !m.Contains(q, w, proto.WatcherData) || !m.Contains(q, w, proto.WatcherChildren) {
							t.Fatalf("%s %d: %s lost", how, k, q)
						}
					}
					if m.Contains(p, w, proto.WatcherAny) {
						t.Fatalf("%s %d: %s still watched", how, k, p)
					}
				}
			}
			if got := m.WatchesOf(w); got != 0 {
				t.Fatalf("%s %d: WatchesOf %d at the end", how, k, got)
			}
			if got, want := m.Stats(), (Stats{Connections: 1, Paths: k, Watches: k}); got != want {
				t.Fatalf("%s %d: Stats %+v, want %+v", how, k, got, want)
			}
			if _, ok := m.data.byWatcher[w]; ok {
				t.Fatalf("%s %d: an entry left in byWatcher", how, k)
			}
			if _, ok := m.child.byWatcher[w]; ok || len(m.child.byPath) != 0 {
				t.Fatalf("%s %d: child table not empty", how, k)
			}
			m.RemoveWatcher(other)
			if st := m.Stats(); st != (Stats{}) || m.Count() != 0 {
				t.Fatalf("%s %d: not empty: %+v", how, k, st)
			}
		}
	}
}

// A path with one watcher keeps it inline; a second makes a map, and
// firing walks it while removing the one-shot watches.
func TestOneWatcherPathThenMore(t *testing.T) {
	m := NewManager()
	a, b, c := newRecorder(1), newRecorder(2), newRecorder(3)
	m.AddData("/x", a)
	if ws := m.data.byPath["/x"]; ws.many != nil || ws.one != Watcher(a) || ws.oneMode != Standard {
		t.Fatalf("one watcher: %+v", ws)
	}
	m.AddPersistent("/x", a, false)
	if ws := m.data.byPath["/x"]; ws.many != nil || ws.oneMode != Standard|Persistent {
		t.Fatalf("two modes: %+v", ws)
	}
	m.AddData("/x", b)
	m.AddPersistent("/x", c, true)
	if ws := m.data.byPath["/x"]; ws.many == nil || ws.len() != 3 {
		t.Fatalf("three watchers: %+v", ws)
	}
	m.Trigger(changed("/x"))
	for _, w := range []*recorder{a, b, c} {
		expect(t, w, "NodeDataChanged /x")
	}
	if got := m.ByPath()["/x"]; !reflect.DeepEqual(got, []int64{1, 3}) {
		t.Fatalf("after firing: %v", got)
	}
	if m.Contains("/x", a, proto.WatcherData) || !m.Contains("/x", a, proto.WatcherPersistent) || m.Contains("/x", b, proto.WatcherAny) {
		t.Fatal("wrong registrations after firing")
	}
	m.Trigger(changed("/x"))
	expect(t, a, "NodeDataChanged /x")
	expect(t, b)
	expect(t, c, "NodeDataChanged /x")
	m.RemoveWatcher(a)
	m.RemoveWatcher(c)
	if m.Count() != 0 || len(m.data.byPath) != 0 || m.data.recursive != 0 || m.child.recursive != 0 {
		t.Fatalf("not empty: count %d", m.Count())
	}
}
