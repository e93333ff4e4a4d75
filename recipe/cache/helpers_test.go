package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

type env = recipetest.Env

// mode is how a test's cache watches.
type mode struct {
	name string
	opts []Option
}

var modes = []mode{
	{"persistent", nil},
	{"oneshot", []Option{WithOneShotWatches()}},
}

// forEachMode runs fn against zkgo and Apache ZooKeeper, with persistent
// and with one-shot watches.
func forEachMode(t *testing.T, fn func(t *testing.T, e *env, m mode)) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				e2 := *e
				e2.Root = fmt.Sprintf("%s-%s", e.Root, m.name)
				fn(t, &e2, m)
			})
		}
	})
}

// nextEvent returns the next event of ch, failing after 30 s.
func nextEvent(t testing.TB, ch <-chan Event) Event {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("event channel closed")
		}
		return ev
	case <-timer.C:
		t.Fatal("no event within 30s")
	}
	panic("unreachable")
}

// waitType skips events until one of type typ, and returns it with the
// node events skipped.
func waitType(t testing.TB, ch <-chan Event, typ EventType) (Event, []Event) {
	t.Helper()
	var skipped []Event
	for {
		ev := nextEvent(t, ch)
		if ev.Type == typ {
			return ev, skipped
		}
		skipped = append(skipped, ev)
	}
}

// want is an expected node event.
type want struct {
	typ  EventType
	path string
	data string
}

func (w want) String() string { return fmt.Sprintf("%v %s %q", w.typ, w.path, w.data) }

func (w want) matches(ev Event) bool {
	return ev.Type == w.typ && ev.Path == w.path && string(ev.Data) == w.data
}

func describe(ev Event) string {
	s := fmt.Sprintf("%v %s %q zxid=%d", ev.Type, ev.Path, ev.Data, ev.Zxid)
	if ev.Err != nil {
		s += " err=" + ev.Err.Error()
	}
	return s
}

// expect receives len(ws) events and checks them against ws, in order.
func expect(t testing.TB, ch <-chan Event, ws ...want) []Event {
	t.Helper()
	var got []Event
	for _, w := range ws {
		ev := nextEvent(t, ch)
		got = append(got, ev)
		if !w.matches(ev) {
			var b strings.Builder
			for _, g := range got {
				b.WriteString("\n  " + describe(g))
			}
			t.Fatalf("event %d: got %s, want %v; events so far:%s", len(got), describe(ev), w, b.String())
		}
	}
	return got
}

func create(t testing.TB, c *zk.Conn, path, data string) *zk.Stat {
	t.Helper()
	_, st, err := c.Create2(recipetest.Ctx(t), path, []byte(data), zk.OpenACLUnsafe, zk.ModePersistent)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return st
}

func set(t testing.TB, c *zk.Conn, path, data string) *zk.Stat {
	t.Helper()
	st, err := c.Set(recipetest.Ctx(t), path, []byte(data), zk.AnyVersion)
	if err != nil {
		t.Fatalf("set %s: %v", path, err)
	}
	return st
}

func del(t testing.TB, c *zk.Conn, path string) {
	t.Helper()
	if err := c.Delete(recipetest.Ctx(t), path, zk.AnyVersion); err != nil {
		t.Fatalf("delete %s: %v", path, err)
	}
}

// readTree reads the subtree at root to maxDepth levels, as a fresh
// cache should hold it.
func readTree(ctx context.Context, c *zk.Conn, root string, maxDepth int) (map[string]Entry, error) {
	out := make(map[string]Entry)
	var walk func(p string, d int) error
	walk = func(p string, d int) error {
		data, st, err := c.Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		out[p] = Entry{Path: p, Data: data, Stat: *st}
		if d >= maxDepth || st.NumChildren == 0 {
			return nil
		}
		children, _, err := c.Children(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, ch := range children {
			if err := walk(joinPath(p, ch), d+1); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root, 0)
}

// sameStat compares two Stats but their aversion (setACL sends no
// notification, so a cache cannot follow it).
func sameStat(a, b zk.Stat) bool {
	a.Aversion, b.Aversion = 0, 0
	return a == b
}

// diffState describes how the cached entries differ from the tree read
// (empty: equal).
func diffState(cached []Entry, tree map[string]Entry) string {
	var out []string
	seen := make(map[string]bool)
	for _, en := range cached {
		seen[en.Path] = true
		tr, ok := tree[en.Path]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: cached (%q), not in the tree", en.Path, en.Data))
		case string(tr.Data) != string(en.Data):
			out = append(out, fmt.Sprintf("%s: cached %q, tree %q", en.Path, en.Data, tr.Data))
		case !sameStat(tr.Stat, en.Stat):
			out = append(out, fmt.Sprintf("%s: cached stat %+v, tree %+v", en.Path, en.Stat, tr.Stat))
		}
	}
	for p, tr := range tree {
		if !seen[p] {
			out = append(out, fmt.Sprintf("%s: in the tree (%q), not cached", p, tr.Data))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// snapshotOf returns what a cache holds, whichever kind it is.
type snapshotter interface {
	Snapshot() ([]Entry, int64)
}

// requireTree fails unless the cache equals a fresh read of the tree.
func requireTree(t testing.TB, c snapshotter, conn *zk.Conn, root string, maxDepth int) {
	t.Helper()
	tree, err := readTree(recipetest.Ctx(t), conn, root, maxDepth)
	if err != nil {
		t.Fatal(err)
	}
	cached, _ := c.Snapshot()
	if d := diffState(cached, tree); d != "" {
		t.Fatalf("the cache differs from the tree:\n%s", d)
	}
}
