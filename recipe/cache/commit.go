package cache

import (
	"cmp"
	"slices"
	"strings"
)

// commit turns the reads of a settle into one change of the store and its
// events: Deleted for cached nodes the reads found gone, Created for new
// ones (Deleted then Created for a node deleted and created again: its
// czxid changed), Changed for a new mzxid; a Stat that changed only in its
// child fields is updated without an event. Events are sent in zxid order,
// after the store has changed (a reader that looks at the cache when it
// receives an event sees that event applied). A read of the whole subtree
// (full) also deletes what it did not find, and ends with Initialized (the
// first time) or Resynced.
func (e *engine) commit(ov *overlay, full bool) {
	s := e.store
	initial := !e.initialized

	// What is gone: nodes read missing (with their cached descendants),
	// children a listing no longer names, and, after a whole read, every
	// node it did not find. A node found again under the same path is
	// not gone but replaced when its czxid differs.
	gone := make(map[string]bool)
	var dels []string
	markGone := func(p string) {
		if gone[p] || s.peek(p) == nil || ov.existsNow(p) {
			return
		}
		gone[p] = true
		dels = append(dels, p)
	}
	markTree := func(p string) {
		markGone(p)
		for _, d := range s.descendants(p) {
			markGone(d)
		}
	}
	replaced := make(map[string]bool)
	if full {
		for p := range s.nodes {
			markGone(p)
		}
	}
	var errs []Event
	for p, o := range ov.nodes {
		if o.err != nil {
			errs = append(errs, Event{Type: Error, Path: p, Err: o.err})
		}
		if !ov.existsNow(p) {
			markTree(p)
			continue
		}
		n := s.peek(p)
		if n == nil {
			continue
		}
		if n.stat.Czxid != o.stat.Czxid {
			replaced[p] = true
			for _, d := range s.descendants(p) {
				markGone(d)
			}
			continue
		}
		if o.listed && n.children != nil {
			listed := make(map[string]bool, len(o.children))
			for _, c := range o.children {
				listed[c] = true
			}
			for c := range n.children {
				if !listed[c] {
					markTree(joinPath(p, c))
				}
			}
		}
	}

	// The zxid of each deletion, bounded from above by what was read
	// after it: the parent's pzxid (a deletion sets it), the deletion of
	// the parent for a node deleted with its parent, the czxid of the
	// node that replaced it, the pzxid of the nearest existing ancestor
	// for the root.
	delZxid := make(map[string]int64)
	var bound func(p string) int64
	bound = func(p string) int64 {
		if z, ok := delZxid[p]; ok {
			return z
		}
		var z int64
		par := parentOf(p)
		switch {
		case replaced[p]:
			z = ov.nodes[p].stat.Czxid
		case p == e.root:
			z = rootBound(e.root, ov)
		case gone[par] || replaced[par]:
			z = bound(par)
		case ov.existsNow(par):
			z = ov.nodes[par].stat.Pzxid
		default:
			z = ov.max // not reached: a deletion always has its parent read
		}
		delZxid[p] = z
		return z
	}

	var evs []Event
	changes := make([]change, 0, len(dels)+len(ov.nodes))
	for _, p := range dels {
		n := s.peek(p)
		changes = append(changes, change{path: p, del: true})
		if e.emits(p) {
			evs = append(evs, Event{Type: Deleted, Path: p, Data: n.data, Stat: n.stat, Zxid: bound(p)})
		}
	}
	ups := len(changes)
	for p, o := range ov.nodes {
		if !ov.existsNow(p) {
			continue
		}
		n := s.peek(p)
		var t EventType
		switch {
		case n == nil:
			t = Created
		case replaced[p]:
			if e.emits(p) {
				evs = append(evs, Event{Type: Deleted, Path: p, Data: n.data, Stat: n.stat, Zxid: bound(p)})
			}
			t = Created
		case n.stat.Mzxid != o.stat.Mzxid:
			t = Changed
		case n.stat != o.stat:
			// Only the child fields changed: no event.
		default:
			continue
		}
		changes = append(changes, change{path: p, data: o.data, stat: o.stat})
		if t != 0 && e.emits(p) {
			evs = append(evs, Event{Type: t, Path: p, Data: o.data, Stat: o.stat, Zxid: o.stat.Mzxid})
		}
	}
	// Parents before children, so that the children index holds.
	slices.SortFunc(changes[ups:], func(a, b change) int { return strings.Compare(a.path, b.path) })

	zxid := max(e.zxid, ov.max)
	for _, ev := range evs {
		zxid = max(zxid, ev.Zxid)
	}
	if initial {
		slices.SortFunc(evs, func(a, b Event) int { return strings.Compare(a.Path, b.Path) })
	} else {
		slices.SortFunc(evs, eventOrder)
	}
	s.apply(changes, zxid)
	e.zxid = zxid
	if tracing {
		trace(e, "commit full=%v zxid=%d events=%v", full, zxid, evs)
	}

	for _, ev := range errs {
		e.send(ev)
	}
	for _, ev := range evs {
		e.send(ev)
	}
	if !full {
		return
	}
	e.suspended = false
	e.setSynced(true)
	if initial {
		e.initialized = true
		e.send(Event{Type: Initialized, Zxid: zxid})
		e.mu.Lock()
		if !e.initClosed {
			e.initClosed = true
			close(e.initDone)
		}
		e.mu.Unlock()
	} else {
		e.send(Event{Type: Resynced, Zxid: zxid})
	}
}

// emits reports whether events of path are sent (a ChildrenCache does
// not report its root).
func (e *engine) emits(path string) bool { return !(e.kind == kindChildren && path == e.root) }

// rootBound is the zxid bound of the root's deletion: the pzxid of its
// nearest ancestor that a read found.
func rootBound(root string, ov *overlay) int64 {
	for a := parentOf(root); ; a = parentOf(a) {
		if z, ok := ov.aux[a]; ok {
			return z
		}
		if a == "/" {
			return ov.max
		}
	}
}

// eventOrder sorts a batch by zxid; at one zxid (a multi, or a deletion
// bounded by a later creation) deletions come first, deepest first, then
// creations, shallowest first, then changes.
func eventOrder(a, b Event) int {
	if c := cmp.Compare(a.Zxid, b.Zxid); c != 0 {
		return c
	}
	rank := func(t EventType) int {
		switch t {
		case Deleted:
			return 0
		case Created:
			return 1
		}
		return 2
	}
	if c := cmp.Compare(rank(a.Type), rank(b.Type)); c != 0 {
		return c
	}
	da, db := strings.Count(a.Path, "/"), strings.Count(b.Path, "/")
	if a.Type == Deleted {
		da, db = db, da
	}
	if c := cmp.Compare(da, db); c != 0 {
		return c
	}
	return strings.Compare(a.Path, b.Path)
}
