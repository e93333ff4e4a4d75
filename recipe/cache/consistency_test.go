package cache

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

// writeLog records the values written to a node with the zxid of each
// write, to tell what the node held at any zxid.
type writeLog struct {
	mu     sync.Mutex
	writes map[int64]string // mzxid -> value
}

func (l *writeLog) add(zxid int64, v string) {
	l.mu.Lock()
	l.writes[zxid] = v
	l.mu.Unlock()
}

// at returns the value held at zxid z.
func (l *writeLog) at(z int64) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	best, v := int64(-1), ""
	for w, val := range l.writes {
		if w <= z && w > best {
			best, v = w, val
		}
	}
	return v, best >= 0
}

// TestConsistentSnapshots: writers change several nodes in single
// transactions (two nodes set to the same value; pairs of nodes created
// and deleted together) while a TreeCache starts and follows. Every state
// the cache shows — the initial snapshot, every Snapshot taken while it
// runs, the state after each zxid of the event stream — keeps the pairs
// together, the initial snapshot and every Snapshot hold what the writes
// log says the nodes held at their zxid, and node events come in zxid
// order.
func TestConsistentSnapshots(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		r := e.Root
		w := e.Connect(t)
		create(t, w, r, "")
		st := create(t, w, r+"/a", "0")
		create(t, w, r+"/b", "0")
		logA := &writeLog{writes: map[int64]string{st.Mzxid: "0"}}

		const writers, perWriter = 3, 150
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		start := make(chan struct{})
		for i := 0; i < writers; i++ {
			wc := e.Connect(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for k := 0; k < perWriter; k++ {
					v := fmt.Sprintf("%d-%d", i, k)
					res, err := wc.Multi(ctx, zk.SetDataOp(r+"/a", []byte(v), -1), zk.SetDataOp(r+"/b", []byte(v), -1))
					if err != nil {
						errs <- err
						return
					}
					logA.add(res[0].Stat.Mzxid, v)
					p, q := fmt.Sprintf("%s/p%d-%d", r, i, k), fmt.Sprintf("%s/q%d-%d", r, i, k)
					if _, err := wc.Multi(ctx, zk.CreateOp(p, nil, zk.OpenACLUnsafe, zk.ModePersistent), zk.CreateOp(q, nil, zk.OpenACLUnsafe, zk.ModePersistent)); err != nil {
						errs <- err
						return
					}
					if k%3 != 0 {
						if _, err := wc.Multi(ctx, zk.DeleteOp(p, -1), zk.DeleteOp(q, -1)); err != nil {
							errs <- err
							return
						}
					}
				}
			}()
		}

		// checkState checks a state of the cache (path -> data) that the
		// server had at zxid z (z 0: unknown).
		checkState := func(what string, state map[string]string, z int64) {
			t.Helper()
			if state[r+"/a"] != state[r+"/b"] {
				t.Errorf("%s: /a %q but /b %q", what, state[r+"/a"], state[r+"/b"])
			}
			for p := range state {
				if p == r {
					continue
				}
				base := p[len(r)+1:]
				if len(base) > 0 && (base[0] == 'p' || base[0] == 'q') {
					twin := r + "/" + map[byte]string{'p': "q", 'q': "p"}[base[0]] + base[1:]
					if _, ok := state[twin]; !ok {
						t.Errorf("%s: %s without %s", what, p, twin)
					}
				}
			}
			if z != 0 {
				if v, ok := logA.at(z); ok && v != state[r+"/a"] {
					t.Errorf("%s at zxid %d: /a is %q, the writes say %q", what, z, state[r+"/a"], v)
				}
			}
		}

		c := e.Connect(t)
		tc := NewTree(c, r)
		evs := tc.Events()
		close(start) // the writers run while the cache reads the tree
		if err := tc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer tc.Close()

		// Snapshots taken while the cache follows the writers. What they
		// show of /a is checked against the writes once the writers are
		// done (a write may show in the cache before its writer logs it).
		type snapA struct {
			a string
			z int64
		}
		var snapMu sync.Mutex
		var snaps []snapA
		snapDone := make(chan struct{})
		stopSnaps := make(chan struct{})
		defer func() {
			select {
			case <-stopSnaps:
			default:
				close(stopSnaps)
			}
			<-snapDone
		}()
		go func() {
			defer close(snapDone)
			for n := 0; ; n++ {
				select {
				case <-stopSnaps:
					return
				default:
				}
				entries, z := tc.Snapshot()
				state := make(map[string]string, len(entries))
				for _, en := range entries {
					state[en.Path] = string(en.Data)
				}
				checkState(fmt.Sprintf("snapshot %d", n), state, 0)
				snapMu.Lock()
				snaps = append(snaps, snapA{state[r+"/a"], z})
				snapMu.Unlock()
			}
		}()

		state := make(map[string]string)
		var lastZxid int64
		initialized := false
		apply := func(ev Event) {
			switch ev.Type {
			case Created, Changed:
				state[ev.Path] = string(ev.Data)
			case Deleted:
				delete(state, ev.Path)
			}
		}
		writersDone := make(chan struct{})
		go func() { wg.Wait(); close(writersDone) }()
		marker := r + "/marker"
	events:
		for {
			var ev Event
			select {
			case <-writersDone:
				writersDone = nil
				create(t, w, marker, "end") // the last write
				continue
			case ev = <-evs:
			}
			switch ev.Type {
			case Initialized:
				checkState("initial snapshot", state, 0)
				snapMu.Lock()
				snaps = append(snaps, snapA{state[r+"/a"], ev.Zxid})
				snapMu.Unlock()
				initialized, lastZxid = true, ev.Zxid
				continue
			case Created, Changed, Deleted:
			default:
				t.Fatalf("unexpected event %s", describe(ev))
			}
			if initialized {
				if ev.Zxid < lastZxid {
					t.Fatalf("%s after an event at zxid %d", describe(ev), lastZxid)
				}
				if ev.Zxid > lastZxid {
					checkState(fmt.Sprintf("events up to zxid %d", lastZxid), state, 0)
				}
				lastZxid = ev.Zxid
			}
			apply(ev)
			if ev.Path == marker {
				break events
			}
		}
		close(stopSnaps)
		<-snapDone
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		checkState("final", state, 0)
		snapMu.Lock()
		defer snapMu.Unlock()
		for i, sn := range snaps {
			if v, ok := logA.at(sn.z); ok && v != sn.a {
				t.Errorf("snapshot %d at zxid %d: /a is %q, the writes say %q", i, sn.z, sn.a, v)
			}
		}
		t.Logf("%d snapshots checked", len(snaps))
		requireTree(t, tc, w, r, unlimited)
	})
}

// TestEventsReplayToTree: the initial snapshot plus every event, applied
// in order, gives the tree — under concurrent writers, with both kinds of
// watches.
func TestEventsReplayToTree(t *testing.T) {
	forEachMode(t, func(t *testing.T, e *env, m mode) {
		ctx := recipetest.Ctx(t)
		r := e.Root
		w := e.Connect(t)
		create(t, w, r, "")
		var wg sync.WaitGroup
		for i := 0; i < 3; i++ {
			wc := e.Connect(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 100; k++ {
					p := fmt.Sprintf("%s/n%d", r, (i*7+k)%10)
					_, err := wc.Create(ctx, p, []byte(strconv.Itoa(k)), zk.OpenACLUnsafe, zk.ModePersistent)
					if errors.Is(err, zk.ErrNodeExists) {
						if k%2 == 0 {
							err = wc.Delete(ctx, p, -1)
						} else {
							_, err = wc.Set(ctx, p, []byte(strconv.Itoa(k)), -1)
						}
					}
					if err != nil && !errors.Is(err, zk.ErrNoNode) {
						t.Error(err)
						return
					}
				}
			}()
		}
		c := e.Connect(t)
		tc := NewTree(c, r, m.opts...)
		evs := tc.Events()
		if err := tc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		wg.Wait()
		create(t, w, r+"/marker", "")
		state := make(map[string]string)
		for {
			ev := nextEvent(t, evs)
			switch ev.Type {
			case Created, Changed:
				state[ev.Path] = string(ev.Data)
			case Deleted:
				delete(state, ev.Path)
			}
			if ev.Path == r+"/marker" {
				break
			}
		}
		// One-shot watches may deliver the marker before earlier changes:
		// wait for the replayed state to match the tree, event by event.
		tree, err := readTree(ctx, w, r, unlimited)
		if err != nil {
			t.Fatal(err)
		}
		for {
			d := diffReplay(state, tree)
			if d == "" {
				break
			}
			if m.name == "persistent" {
				t.Fatalf("replayed events differ from the tree:\n%s", d)
			}
			var ev Event
			select {
			case ev = <-evs:
			case <-time.After(30 * time.Second):
				cached, _ := tc.Snapshot()
				t.Fatalf("replayed events differ from the tree:\n%s\ncache:\n%s", d, diffState(cached, tree))
			}
			switch ev.Type {
			case Created, Changed:
				state[ev.Path] = string(ev.Data)
			case Deleted:
				delete(state, ev.Path)
			}
		}
		requireTree(t, tc, w, r, unlimited)
	})
}

func diffReplay(state map[string]string, tree map[string]Entry) string {
	var out []string
	for p, v := range state {
		if tr, ok := tree[p]; !ok || string(tr.Data) != v {
			out = append(out, fmt.Sprintf("%s: replayed %q, tree %q (exists %v)", p, v, tr.Data, ok))
		}
	}
	for p, tr := range tree {
		if _, ok := state[p]; !ok {
			out = append(out, fmt.Sprintf("%s: in the tree (%q), not replayed", p, tr.Data))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
