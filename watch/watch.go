// Package watch keeps the server's watch registrations and turns tree
// events into notifications with ZooKeeper 3.8's rules.
//
// Like ZooKeeper, the manager keeps two tables: data watches (set by
// getData and exists; exists on a missing node watches for its creation) and
// child watches (set by getChildren). Persistent and persistent-recursive
// watches (addWatch) are entered in both tables. A watcher (a client
// connection) has one registration per path and table holding a set of
// modes, as in ZooKeeper 3.9 (ZOOKEEPER-4466): a one-shot watch set on a
// path where the same connection has a persistent watch is kept beside it,
// fires once with it (one notification for both), and goes; the persistent
// watch stays. ZooKeeper 3.8 kept one mode, the one set last, so there the
// one-shot watch replaced the persistent one.
//
// Event rules:
//   - NodeCreated, NodeDataChanged: data watches on the path; recursive
//     watches on the path and its ancestors.
//   - NodeDeleted: data and child watches on the path (a watcher told once);
//     recursive watches on the path and its ancestors.
//   - NodeChildrenChanged: child watches on the path (one-shot and
//     persistent), never recursive ones.
//
// One-shot registrations are removed as they fire.
package watch

import (
	"sort"
	"strings"
	"sync"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// Watcher receives notifications. Deliver is called by Trigger with the
// manager's lock released, from the goroutine that called Trigger; it must
// not block (the server appends to the connection's outgoing queue). zxid
// is the zxid of the transaction that caused the event, which ZooKeeper
// 3.9 sends in the notification's reply header (ZOOKEEPER-4655; -1 where
// there is none). acl is the ACL the watcher must hold READ on to be told
// (see tree.Event).
type Watcher interface {
	Deliver(ev proto.WatcherEvent, zxid int64, acl []proto.ACL)
	// SessionID identifies the watcher in dumps (wchc, wchp).
	SessionID() int64
}

// Mode is a registration's mode.
type Mode uint8

// Modes. A watcher may hold several modes on one path of one table (a
// set of them), as ZooKeeper 3.9 keeps them (ZOOKEEPER-4466).
const (
	Standard Mode = 1 << iota
	Persistent
	PersistentRecursive
)

type table struct {
	byPath    map[string]map[Watcher]Mode // the modes w holds on the path
	byWatcher map[Watcher]map[string]struct{}
	recursive int // registrations holding PersistentRecursive
}

func newTable() table {
	return table{byPath: make(map[string]map[Watcher]Mode), byWatcher: make(map[Watcher]map[string]struct{})}
}

// add adds mode to w's modes on p.
func (t *table) add(p string, w Watcher, mode Mode) {
	ws := t.byPath[p]
	if ws == nil {
		ws = make(map[Watcher]Mode, 1)
		t.byPath[p] = ws
	}
	old := ws[w]
	ws[w] = old | mode
	if old&PersistentRecursive == 0 && mode&PersistentRecursive != 0 {
		t.recursive++
	}
	if old != 0 {
		return
	}
	ps := t.byWatcher[w]
	if ps == nil {
		ps = make(map[string]struct{})
		t.byWatcher[w] = ps
	}
	ps[p] = struct{}{}
}

// clear removes the modes in mask from w's modes on p, the registration
// with the last of them, and reports whether w held any of them.
func (t *table) clear(p string, w Watcher, mask Mode) bool {
	ws := t.byPath[p]
	old, ok := ws[w]
	if !ok || old&mask == 0 {
		return false
	}
	if old&mask&PersistentRecursive != 0 {
		t.recursive--
	}
	if left := old &^ mask; left != 0 {
		ws[w] = left
		return true
	}
	delete(ws, w)
	if len(ws) == 0 {
		delete(t.byPath, p)
	}
	if ps := t.byWatcher[w]; ps != nil {
		delete(ps, p)
		if len(ps) == 0 {
			delete(t.byWatcher, w)
		}
	}
	return true
}

// has reports whether w holds one of the modes in mask on p.
func (t *table) has(p string, w Watcher, mask Mode) bool {
	return t.byPath[p][w]&mask != 0
}

func (t *table) count() int {
	n := 0
	for _, ws := range t.byPath {
		n += len(ws)
	}
	return n
}

const allModes = Standard | Persistent | PersistentRecursive

// Manager holds all watch registrations of one server. It is safe for
// concurrent use.
type Manager struct {
	mu    sync.Mutex // guards data and child
	data  table
	child table
	// fanOut, if set (SetFanOutHook, before the manager is used), is
	// told after each event that fired watchers how many it fired.
	fanOut func(typ proto.EventType, watchers int)
}

// SetFanOutHook makes Trigger call f, on Trigger's goroutine and without
// the manager's lock, with the type of each event that fired at least one
// watcher and how many it fired (the server's watch fan-out summaries,
// ZooKeeper's node_*_watch_count). It must be called before the manager
// is used.
func (m *Manager) SetFanOutHook(f func(typ proto.EventType, watchers int)) { m.fanOut = f }

// NewManager returns an empty manager.
func NewManager() *Manager {
	return &Manager{data: newTable(), child: newTable()}
}

// WatchesOf returns how many registrations w holds (a persistent watch
// counts twice: it watches data and children).
func (m *Manager) WatchesOf(w Watcher) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.data.byWatcher[w]) + len(m.child.byWatcher[w])
}

// AddData registers a one-shot data/exists watch.
func (m *Manager) AddData(p string, w Watcher) {
	m.mu.Lock()
	m.data.add(p, w, Standard)
	m.mu.Unlock()
}

// AddChild registers a one-shot child watch.
func (m *Manager) AddChild(p string, w Watcher) {
	m.mu.Lock()
	m.child.add(p, w, Standard)
	m.mu.Unlock()
}

// AddPersistent registers a persistent (or persistent-recursive) watch.
func (m *Manager) AddPersistent(p string, w Watcher, recursive bool) {
	mode := Persistent
	if recursive {
		mode = PersistentRecursive
	}
	m.mu.Lock()
	m.data.add(p, w, mode)
	m.child.add(p, w, mode)
	m.mu.Unlock()
}

// Remove removes w's registrations on p of the given type and reports
// whether any existed (removeWatches; false means NoWatcher), as ZooKeeper
// 3.9 does: WatcherData and WatcherChildren remove the one-shot watch of
// their table only, WatcherPersistent and WatcherPersistentRecursive the
// persistent watch of their mode, WatcherAny every mode. A watch of
// another mode on the same path stays (ZOOKEEPER-4466, 4472).
func (m *Manager) Remove(p string, w Watcher, typ proto.WatcherType) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	removed := false
	switch typ {
	case proto.WatcherChildren:
		removed = m.child.clear(p, w, Standard)
	case proto.WatcherData:
		removed = m.data.clear(p, w, Standard)
	case proto.WatcherPersistent, proto.WatcherPersistentRecursive, proto.WatcherAny:
		mask := allModes
		switch typ {
		case proto.WatcherPersistent:
			mask = Persistent
		case proto.WatcherPersistentRecursive:
			mask = PersistentRecursive
		}
		removed = m.child.clear(p, w, mask)
		removed = m.data.clear(p, w, mask) || removed
	}
	return removed
}

// Contains reports whether w has a registration of the given type on p
// (checkWatches), with Remove's meaning of the types.
func (m *Manager) Contains(p string, w Watcher, typ proto.WatcherType) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch typ {
	case proto.WatcherChildren:
		return m.child.has(p, w, Standard)
	case proto.WatcherData:
		return m.data.has(p, w, Standard)
	case proto.WatcherPersistent:
		return m.data.has(p, w, Persistent)
	case proto.WatcherPersistentRecursive:
		return m.data.has(p, w, PersistentRecursive)
	default:
		return m.child.has(p, w, allModes) || m.data.has(p, w, allModes)
	}
}

// RemoveWatcher drops every registration of w (its connection closed).
func (m *Manager) RemoveWatcher(w Watcher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := range m.data.byWatcher[w] {
		m.data.clear(p, w, allModes)
	}
	for p := range m.child.byWatcher[w] {
		m.child.clear(p, w, allModes)
	}
}

// Trigger delivers the notifications caused by the events of one
// transaction, in order.
func (m *Manager) Trigger(events []tree.Event) {
	if len(events) == 0 {
		return
	}
	type delivery struct {
		ev       proto.WatcherEvent
		zxid     int64
		watchers []Watcher
		acl      []proto.ACL
	}
	var out []delivery
	m.mu.Lock()
	for _, ev := range events {
		var ws []Watcher
		switch ev.Type {
		case proto.EventNodeCreated, proto.EventNodeDataChanged:
			ws = m.collect(&m.data, ev.Path, ev.Type, nil)
		case proto.EventNodeDeleted:
			ws = m.collect(&m.data, ev.Path, ev.Type, nil)
			ws = m.collect(&m.child, ev.Path, ev.Type, ws)
		case proto.EventNodeChildrenChanged:
			ws = m.collect(&m.child, ev.Path, ev.Type, nil)
		}
		if len(ws) > 0 {
			out = append(out, delivery{proto.WatcherEvent{Type: ev.Type, State: proto.StateSyncConnected, Path: ev.Path}, ev.Zxid, ws, ev.ACL})
		}
	}
	m.mu.Unlock()
	for _, o := range out {
		for _, w := range o.watchers {
			w.Deliver(o.ev, o.zxid, o.acl)
		}
		if m.fanOut != nil {
			m.fanOut(o.ev.Type, len(o.watchers))
		}
	}
}

// collect appends to already the watchers of t to notify for an event of
// type typ on p, skipping watchers already in the list, and removes one-shot
// registrations that fire. Recursive registrations on ancestors are
// consulted when the table has any (ZooKeeper walks parent paths per table).
func (m *Manager) collect(t *table, p string, typ proto.EventType, already []Watcher) []Watcher {
	var seen map[Watcher]struct{}
	if len(already) > 0 {
		seen = make(map[Watcher]struct{}, len(already))
		for _, w := range already {
			seen[w] = struct{}{}
		}
	}
	add := func(w Watcher) {
		if seen != nil {
			if _, dup := seen[w]; dup {
				return
			}
			seen[w] = struct{}{}
		}
		already = append(already, w)
	}
	for w, mode := range t.byPath[p] {
		if typ == proto.EventNodeChildrenChanged && mode == PersistentRecursive {
			continue // recursive watches fire for no child events
		}
		if mode&Standard != 0 {
			t.clear(p, w, Standard)
		}
		add(w)
	}
	if t.recursive == 0 || typ == proto.EventNodeChildrenChanged {
		return already
	}
	if seen == nil {
		seen = make(map[Watcher]struct{}, len(already))
		for _, w := range already {
			seen[w] = struct{}{}
		}
	}
	for q := p; q != "/"; {
		i := strings.LastIndexByte(q, '/')
		if i <= 0 {
			q = "/"
		} else {
			q = q[:i]
		}
		for w, mode := range t.byPath[q] {
			if mode&PersistentRecursive != 0 {
				add(w)
			}
		}
	}
	return already
}

// Stats summarises the data-watch table as ZooKeeper 3.8's wchs prints it
// (DataTree reports dataWatches only).
type Stats struct {
	Connections int // watchers with at least one registration
	Paths       int // distinct watched paths
	Watches     int // registrations
}

// Stats returns the wchs summary.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{Connections: len(m.data.byWatcher), Paths: len(m.data.byPath), Watches: m.data.count()}
}

// Count returns the registrations in both tables (mntr's zk_watch_count).
func (m *Manager) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data.count() + m.child.count()
}

// ByPath returns, for every path in the data-watch table, the sorted
// session ids watching it (wchp).
func (m *Manager) ByPath() map[string][]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]int64)
	for p, ws := range m.data.byPath {
		for w := range ws {
			out[p] = appendUnique(out[p], w.SessionID())
		}
	}
	for _, v := range out {
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	}
	return out
}

// BySession returns, for every session in the data-watch table, the
// sorted paths it watches (wchc).
func (m *Manager) BySession() map[int64][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := make(map[int64]map[string]struct{})
	for w, ps := range m.data.byWatcher {
		s := set[w.SessionID()]
		if s == nil {
			s = make(map[string]struct{})
			set[w.SessionID()] = s
		}
		for p := range ps {
			s[p] = struct{}{}
		}
	}
	out := make(map[int64][]string, len(set))
	for id, s := range set {
		ps := make([]string, 0, len(s))
		for p := range s {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		out[id] = ps
	}
	return out
}

func appendUnique(s []int64, v int64) []int64 {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
