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
	"iter"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	byPath    map[string]watcherSet // the watchers on the path, each with its modes; no empty sets
	byWatcher map[Watcher]pathSet   // the paths w holds a registration on; no empty sets
	recursive int                   // registrations holding PersistentRecursive
}

func newTable() table {
	return table{byPath: make(map[string]watcherSet), byWatcher: make(map[Watcher]pathSet)}
}

// add adds mode to w's modes on p.
func (t *table) add(p string, w Watcher, mode Mode) {
	ws := t.byPath[p]
	old := ws.mode(w)
	ws.set(w, old|mode)
	t.byPath[p] = ws
	if old&PersistentRecursive == 0 && mode&PersistentRecursive != 0 {
		t.recursive++
	}
	if old != 0 {
		return
	}
	if ps, ok := t.byWatcher[w]; ok {
		ps.add(p)
		t.byWatcher[w] = ps
	} else {
		t.byWatcher[w] = pathSet{one: p}
	}
}

// clear removes the modes in mask from w's modes on p, the registration
// with the last of them, and reports whether w held any of them.
func (t *table) clear(p string, w Watcher, mask Mode) bool {
	ws := t.byPath[p]
	old := ws.mode(w)
	if old&mask == 0 {
		return false
	}
	if old&mask&PersistentRecursive != 0 {
		t.recursive--
	}
	if left := old &^ mask; left != 0 {
		ws.set(w, left)
		t.byPath[p] = ws
		return true
	}
	if ws.remove(w) {
		delete(t.byPath, p)
	} else {
		t.byPath[p] = ws
	}
	if ps, ok := t.byWatcher[w]; ok {
		if ps.remove(p) {
			delete(t.byWatcher, w)
		} else {
			t.byWatcher[w] = ps
		}
	}
	return true
}

// drop removes every registration of w.
func (t *table) drop(w Watcher) {
	ps, ok := t.byWatcher[w]
	if !ok {
		return
	}
	delete(t.byWatcher, w)
	for p := range ps.all() {
		ws := t.byPath[p]
		if ws.mode(w)&PersistentRecursive != 0 {
			t.recursive--
		}
		if ws.remove(w) {
			delete(t.byPath, p)
		} else {
			t.byPath[p] = ws
		}
	}
}

// paths returns how many paths w holds a registration on.
func (t *table) paths(w Watcher) int {
	if ps, ok := t.byWatcher[w]; ok {
		return ps.len()
	}
	return 0
}

// watcherSet is the set of watchers holding registrations on one path in
// one table, each with its modes (never 0). Many paths have one watcher,
// and a map for it was most of the memory of such a watch, so one
// watcher is kept inline and a map made for the second. The zero value
// is the empty set; a set that shrank to one watcher keeps its map. It
// is a value in the table's map, so a change is stored back.
type watcherSet struct {
	one     Watcher          // the only watcher, or nil, when many is nil
	oneMode Mode             // one's modes
	many    map[Watcher]Mode // the watchers of a set that had two or more
}

// mode returns w's modes in the set, 0 if w is not in it.
func (s *watcherSet) mode(w Watcher) Mode {
	if s.many != nil {
		return s.many[w]
	}
	if s.one != nil && s.one == w {
		return s.oneMode
	}
	return 0
}

// set makes mode (not 0) w's modes, adding w if it is not in the set.
func (s *watcherSet) set(w Watcher, mode Mode) {
	switch {
	case s.many != nil:
		s.many[w] = mode
	case s.one == nil || s.one == w:
		s.one, s.oneMode = w, mode
	default:
		s.many = map[Watcher]Mode{s.one: s.oneMode, w: mode}
		s.one, s.oneMode = nil, 0
	}
}

// remove removes w from the set and reports whether the set is empty.
func (s *watcherSet) remove(w Watcher) (empty bool) {
	if s.many != nil {
		delete(s.many, w)
		return len(s.many) == 0
	}
	if s.one != nil && s.one == w {
		s.one, s.oneMode = nil, 0
	}
	return s.one == nil
}

func (s *watcherSet) len() int {
	if s.many != nil {
		return len(s.many)
	}
	if s.one != nil {
		return 1
	}
	return 0
}

// all yields the set's watchers with their modes. The set's watchers may
// be removed (through the table) while it does, as in a range over a map;
// none may be added.
func (s watcherSet) all() iter.Seq2[Watcher, Mode] {
	return func(yield func(Watcher, Mode) bool) {
		if s.many == nil {
			if s.one != nil {
				yield(s.one, s.oneMode)
			}
			return
		}
		for w, mode := range s.many {
			if !yield(w, mode) {
				return
			}
		}
	}
}

// smallPaths is the most paths a pathSet keeps in a slice; past it, the
// set is a map, and a map that shrinks to smallPaths/2 is a slice again.
const smallPaths = 8

// pathSet is the set of paths one watcher holds registrations on in one
// table. Most watchers (connections) watch one path or a few, and a map
// per watcher was most of the memory of such a watch, so a set of one
// path is the string alone, a set of up to smallPaths paths a slice and
// only a bigger set a map. A pathSet is never empty: the table deletes a
// watcher's entry with its last path and makes the entry with the first
// (pathSet{one: p}). It is a value in the table's map, so a change is
// stored back.
type pathSet struct {
	one  string     // the only path, when more is nil
	more *morePaths // the paths of a set of two or more
}

type morePaths struct {
	few  []string            // the paths (2 to smallPaths of them), when many is nil
	many map[string]struct{} // the paths of a bigger set
}

func (s *pathSet) len() int {
	switch {
	case s.more == nil:
		return 1
	case s.more.many != nil:
		return len(s.more.many)
	default:
		return len(s.more.few)
	}
}

// add adds p to the set.
func (s *pathSet) add(p string) {
	switch {
	case s.more == nil:
		if p != s.one {
			s.more = &morePaths{few: []string{s.one, p}}
			s.one = ""
		}
	case s.more.many != nil:
		s.more.many[p] = struct{}{}
	default:
		for _, q := range s.more.few {
			if q == p {
				return
			}
		}
		if len(s.more.few) < smallPaths {
			s.more.few = append(s.more.few, p)
			return
		}
		many := make(map[string]struct{}, 2*smallPaths)
		for _, q := range s.more.few {
			many[q] = struct{}{}
		}
		many[p] = struct{}{}
		s.more.few, s.more.many = nil, many
	}
}

// remove removes p from the set and reports whether that left it empty
// (the set is then not to be used).
func (s *pathSet) remove(p string) (empty bool) {
	switch {
	case s.more == nil:
		return p == s.one
	case s.more.many != nil:
		delete(s.more.many, p)
		if len(s.more.many) > smallPaths/2 {
			return false
		}
		few := make([]string, 0, smallPaths)
		for q := range s.more.many {
			few = append(few, q)
		}
		s.more.few, s.more.many = few, nil
	default:
		few := s.more.few
		for i, q := range few {
			if q == p {
				last := len(few) - 1
				few[i] = few[last]
				few[last] = "" // let the string go
				s.more.few = few[:last]
				break
			}
		}
	}
	if len(s.more.few) == 1 {
		s.one, s.more = s.more.few[0], nil
	}
	return false
}

// all yields the set's paths. The set must not change while it does.
func (s pathSet) all() iter.Seq[string] {
	return func(yield func(string) bool) {
		switch {
		case s.more == nil:
			yield(s.one)
		case s.more.many != nil:
			for p := range s.more.many {
				if !yield(p) {
					return
				}
			}
		default:
			for _, p := range s.more.few {
				if !yield(p) {
					return
				}
			}
		}
	}
}

// has reports whether w holds one of the modes in mask on p.
func (t *table) has(p string, w Watcher, mask Mode) bool {
	ws := t.byPath[p]
	return ws.mode(w)&mask != 0
}

func (t *table) count() int {
	n := 0
	for _, ws := range t.byPath {
		n += ws.len()
	}
	return n
}

// A HeldWatcher can also queue a notification without waking what sends
// it (DeliverHeld, under the same rules as Deliver; it reports whether a
// Wake is owed), and be woken later. TriggerDeferred uses it for large
// fan-outs (clientport.Conn implements it).
type HeldWatcher interface {
	Watcher
	DeliverHeld(ev proto.WatcherEvent, zxid int64, acl []proto.ACL) (owed bool)
	Wake()
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
	// notified: the sessions most recently notified, for Pending.
	notified [notifiedSlots]notifiedSlot
	slot     atomic.Uint32
	start    time.Time // origin of notifiedSlot.at (monotonic)
}

// notifiedSlots is how many recently notified sessions the manager
// remembers for Pending.
const notifiedSlots = 8

// notifiedSlot is a session told of a change (0: empty) and when, as
// time since the manager's start.
type notifiedSlot struct{ session, at atomic.Int64 }

// noteNotified remembers that session was just sent a notification.
func (m *Manager) noteNotified(session int64, now int64) {
	for i := range m.notified {
		if sl := &m.notified[i]; sl.session.Load() == session {
			sl.at.Store(now)
			return
		}
	}
	sl := &m.notified[m.slot.Add(1)%notifiedSlots]
	sl.at.Store(now)
	sl.session.Store(session)
}

// Pending reports whether a session other than src was sent a
// notification within d and has not proposed a write since (Proposed),
// and whether src itself was. Group commit asks it (as
// raftnode.Config.Notifications): a client just told of a change is often
// about to write — a lock's next holder deletes its node — so a lone
// write from another client may wait a little longer for it.
func (m *Manager) Pending(src uint64, d time.Duration) (other, self bool) {
	since := int64(time.Since(m.start) - d)
	for i := range m.notified {
		sl := &m.notified[i]
		id := sl.session.Load()
		if id == 0 || sl.at.Load() < since {
			continue
		}
		if uint64(id) == src {
			self = true
		} else {
			other = true
		}
	}
	return other, self
}

// Expect counts session as notified for Pending although this manager
// did not notify it: the state machine names a session that a change
// probably wakes elsewhere (statemachine.Machine: the owner of the node
// after a deleted sequential one, which a lock's next holder watches),
// since in an ensemble that session may be connected to another member
// and the leader, which groups the writes, would not know of it.
func (m *Manager) Expect(session int64) {
	if session != 0 {
		m.noteNotified(session, int64(time.Since(m.start)))
	}
}

// Proposed tells that session src proposed a write: it no longer counts
// as notified for Pending.
func (m *Manager) Proposed(src uint64) {
	for i := range m.notified {
		if sl := &m.notified[i]; uint64(sl.session.Load()) == src {
			sl.session.CompareAndSwap(int64(src), 0)
		}
	}
}

// SetFanOutHook makes Trigger call f, on Trigger's goroutine and without
// the manager's lock, with the type of each event that fired at least one
// watcher and how many it fired (the server's watch fan-out summaries,
// ZooKeeper's node_*_watch_count). It must be called before the manager
// is used.
func (m *Manager) SetFanOutHook(f func(typ proto.EventType, watchers int)) { m.fanOut = f }

// NewManager returns an empty manager.
func NewManager() *Manager {
	return &Manager{data: newTable(), child: newTable(), start: time.Now()}
}

// WatchesOf returns how many registrations w holds (a persistent watch
// counts twice: it watches data and children).
func (m *Manager) WatchesOf(w Watcher) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data.paths(w) + m.child.paths(w)
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
	m.data.drop(w)
	m.child.drop(w)
}

// Trigger delivers the notifications caused by the events of one
// transaction, in order.
func (m *Manager) Trigger(events []tree.Event) { m.trigger(events, 0) }

// TriggerDeferred is Trigger, except that the watchers of an event that
// fires at least minFanOut of them (and implement HeldWatcher) get their
// notification queued but are not woken: it returns them, and the caller
// wakes them (Wake) once it has queued and woken what else it had to
// send. The state machine wakes them after the batch's replies, so that a
// write on a node with thousands of watchers is answered without waiting
// for a writer goroutine per watcher to run first. What is queued for
// each watcher, and in which order, is the same as with Trigger.
func (m *Manager) TriggerDeferred(events []tree.Event, minFanOut int) []HeldWatcher {
	return m.trigger(events, max(minFanOut, 1))
}

// trigger is Trigger (minFanOut 0) and TriggerDeferred.
func (m *Manager) trigger(events []tree.Event, minFanOut int) (late []HeldWatcher) {
	if len(events) == 0 {
		return nil
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
	if len(out) > 0 {
		// The first watchers notified (at most notifiedSlots), not
		// every one of a large fan-out.
		now, n := int64(time.Since(m.start)), 0
	note:
		for _, o := range out {
			for _, w := range o.watchers {
				if n == notifiedSlots {
					break note
				}
				if id := w.SessionID(); id != 0 {
					m.noteNotified(id, now)
					n++
				}
			}
		}
	}
	for _, o := range out {
		deferred := minFanOut > 0 && len(o.watchers) >= minFanOut
		for _, w := range o.watchers {
			if hw, ok := w.(HeldWatcher); ok && deferred {
				if hw.DeliverHeld(o.ev, o.zxid, o.acl) {
					late = append(late, hw)
				}
				continue
			}
			w.Deliver(o.ev, o.zxid, o.acl)
		}
		if m.fanOut != nil {
			m.fanOut(o.ev.Type, len(o.watchers))
		}
	}
	return late
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
	for w, mode := range t.byPath[p].all() {
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
		for w, mode := range t.byPath[q].all() {
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
		for w := range ws.all() {
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
		for p := range ps.all() {
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
