package zk

import (
	"sync"
	"sync/atomic"

	"github.com/zkgo/zkgo/proto"
)

// EventType is the type of a watch event.
type EventType = proto.EventType

// Event types.
const (
	EventNodeCreated            = proto.EventNodeCreated
	EventNodeDeleted            = proto.EventNodeDeleted
	EventNodeDataChanged        = proto.EventNodeDataChanged
	EventNodeChildrenChanged    = proto.EventNodeChildrenChanged
	EventDataWatchRemoved       = proto.EventDataWatchRemoved
	EventChildWatchRemoved      = proto.EventChildWatchRemoved
	EventPersistentWatchRemoved = proto.EventPersistentWatchRemoved
	// EventNotWatching ends a watch that will never fire: the session was
	// lost or the Conn closed. Event.Err says which.
	EventNotWatching EventType = -2
)

// Event is a watch event.
type Event struct {
	Type EventType
	// Path is the node's path, relative to the chroot.
	Path string
	// Err is set for EventNotWatching: ErrSessionExpired (StateLost) or
	// ErrClosing.
	Err error
	// Zxid is the zxid of the transaction that caused a node event
	// (NodeCreated, NodeDeleted, NodeDataChanged, NodeChildrenChanged),
	// as ZooKeeper 3.9 servers and zkgo send it (ZOOKEEPER-4655): the
	// node's czxid, mzxid or pzxid after the change, or the deletion's
	// zxid. It is -1 (NoZxid) where the server sent none: servers before
	// 3.9, the catch-up events a reconnection's setWatches fires, and
	// events the client makes itself (EventNotWatching, WatchRemoved).
	Zxid int64
}

// NoZxid is the Zxid of an Event that carries none.
const NoZxid int64 = -1

// Watcher is a persistent (AddWatchPersistent) or persistent recursive
// (AddWatchPersistentRecursive) watch. Its events are queued without bound,
// so the connection never waits for the reader and nothing is dropped;
// receive them from Events until it is closed, or call Close.
type Watcher struct {
	c         *Conn
	path      string
	recursive bool
	q         *queue[Event]
	queued    atomic.Uint64 // events pushed to q (push, under watchManager.mu)
}

// push queues ev and counts it.
func (w *Watcher) push(ev Event) {
	if w.q.push(ev) {
		w.queued.Add(1)
	}
}

// Events returns the channel of events. It is closed after the watch ends:
// after Close, after RemoveWatches removed it (EventPersistentWatchRemoved
// is the last event), or after the session ends (EventNotWatching).
func (w *Watcher) Events() <-chan Event { return w.q.ch }

// Queued returns how many events have been queued for the watch so far,
// whether or not they have been received from Events yet.
//
// The Conn queues a notification before it completes the reply to any
// request that the server answered after sending the notification. So
// Queued, read after a call on the same Conn has returned, counts every
// event of this watch that arrived before that call's reply (and maybe a
// few that arrived after it): a receiver that has taken that many events
// from Events has seen every change the server notified before answering
// the call. Caches use it as a barrier between their reads and the
// watch's events.
func (w *Watcher) Queued() uint64 { return w.queued.Load() }

// Path returns the watched path.
func (w *Watcher) Path() string { return w.path }

// Close stops the watch: undelivered events are discarded and the channel
// is closed. When no other watch of this Conn remains on the path, the
// server-side registration is removed too (best effort, not awaited).
func (w *Watcher) Close() error {
	w.c.watches.removePersistent(w)
	w.q.stop()
	return nil
}

// watchManager holds the client side of the watches, keyed by the caller's
// paths (chroot stripped). Registration happens in the reader goroutine when
// a reply arrives, dispatch when a notification arrives; both are ordered
// with respect to each other.
type watchManager struct {
	c *Conn // set by init

	// mu guards the tables (data, exist, child, persistent, recursive),
	// inflight, ended and endErr. One-shot channels are fired and
	// persistent Watchers' queues pushed to with mu held, so events reach
	// each watch in the order the notifications arrived; registration
	// (add, addPersistent) and terminate also hold it, so a watch
	// registered after terminate ends at once and none ends twice.
	// Inside mu only queue.mu is taken (Watcher.q); Conn.mu and link
	// locks are not (removePersistent releases mu before sendAsync).
	mu         sync.Mutex              // guards the tables, inflight, ended, endErr
	data       map[string][]chan Event // GetW, GetConfigW, ExistsW on an existing node
	exist      map[string][]chan Event // ExistsW on a missing node
	child      map[string][]chan Event // ChildrenW
	persistent map[string][]*Watcher   // AddWatchPersistent
	recursive  map[string][]*Watcher   // AddWatchPersistentRecursive
	inflight   map[string]int          // watch-setting requests awaiting replies
	ended      bool                    // terminate was called: new watches end at once
	endErr     error                   // the Err of the EventNotWatching events after ended
}

func (m *watchManager) init(c *Conn) {
	m.c = c
	m.data = make(map[string][]chan Event)
	m.exist = make(map[string][]chan Event)
	m.child = make(map[string][]chan Event)
	m.persistent = make(map[string][]*Watcher)
	m.recursive = make(map[string][]*Watcher)
	m.inflight = make(map[string]int)
}

func fire(chs []chan Event, ev Event) {
	for _, ch := range chs {
		ch <- ev // buffered 1, sent exactly once
		close(ch)
	}
}

// dispatch delivers a notification, as ZooKeeper's ZKWatchManager does.
func (m *watchManager) dispatch(p string, t EventType, zxid int64) {
	ev := Event{Type: t, Path: p, Zxid: zxid}
	m.mu.Lock()
	defer m.mu.Unlock()
	take := func(tbl map[string][]chan Event) {
		if chs, ok := tbl[p]; ok {
			delete(tbl, p)
			fire(chs, ev)
		}
	}
	switch t {
	case EventNodeCreated, EventNodeDataChanged:
		take(m.data)
		take(m.exist)
	case EventNodeChildrenChanged:
		take(m.child)
	case EventNodeDeleted:
		take(m.data)
		take(m.exist)
		take(m.child)
	}
	for _, w := range m.persistent[p] {
		w.push(ev)
	}
	if t == EventNodeChildrenChanged {
		return // recursive watches get no child events
	}
	for q := p; ; q = parentOf(q) {
		for _, w := range m.recursive[q] {
			w.push(ev)
		}
		if q == "/" {
			break
		}
	}
}

// configKey is the key of a GetConfigW watch when the Conn has a chroot:
// the watch is on the real /zookeeper/config, which is outside the chroot
// and must not be confused with "/zookeeper/config" under it. It is not a
// valid path, so it cannot collide with a caller's key.
const configKey = "\x00config"

// dispatchConfig delivers a notification on /zookeeper/config to GetConfigW
// watches of a chrooted Conn.
func (m *watchManager) dispatchConfig(t EventType, zxid int64) {
	if t != EventNodeDataChanged && t != EventNodeDeleted && t != EventNodeCreated {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if chs, ok := m.data[configKey]; ok {
		delete(m.data, configKey)
		fire(chs, Event{Type: t, Path: ConfigNode, Zxid: zxid})
	}
}

type watchKind int

const (
	watchData watchKind = iota
	watchExist
	watchChild
)

func (m *watchManager) table(k watchKind) map[string][]chan Event {
	switch k {
	case watchData:
		return m.data
	case watchExist:
		return m.exist
	}
	return m.child
}

// begin notes a watch-setting request in flight on p.
func (m *watchManager) begin(p string) {
	m.mu.Lock()
	m.inflight[p]++
	m.mu.Unlock()
}

// end undoes begin.
func (m *watchManager) end(p string) {
	m.mu.Lock()
	if m.inflight[p] <= 1 {
		delete(m.inflight, p)
	} else {
		m.inflight[p]--
	}
	m.mu.Unlock()
}

// add registers a one-shot watch (reader goroutine).
func (m *watchManager) add(k watchKind, p string, ch chan Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		fire([]chan Event{ch}, Event{Type: EventNotWatching, Path: p, Err: m.endErr, Zxid: NoZxid})
		return
	}
	tbl := m.table(k)
	tbl[p] = append(tbl[p], ch)
}

// addPersistent registers a persistent watch (reader goroutine).
func (m *watchManager) addPersistent(w *Watcher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		w.push(Event{Type: EventNotWatching, Path: w.path, Err: m.endErr, Zxid: NoZxid})
		w.q.finish()
		return
	}
	if w.recursive {
		m.recursive[w.path] = append(m.recursive[w.path], w)
	} else {
		m.persistent[w.path] = append(m.persistent[w.path], w)
	}
}

func removeWatcher(tbl map[string][]*Watcher, w *Watcher) bool {
	ws := tbl[w.path]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			if len(ws) == 0 {
				delete(tbl, w.path)
			} else {
				tbl[w.path] = ws
			}
			return true
		}
	}
	return false
}

// removePersistent unregisters w (Watcher.Close) and, when nothing else of
// this Conn watches the path, asks the server to drop its registration.
func (m *watchManager) removePersistent(w *Watcher) {
	m.mu.Lock()
	tbl := m.persistent
	if w.recursive {
		tbl = m.recursive
	}
	removed := removeWatcher(tbl, w)
	p := w.path
	// With nothing left on p, every watch of the session on p goes
	// (WatcherAny, which every server version knows). With one-shot
	// watches or the other persistent mode left, only the mode whose
	// last Watcher closed goes: ZooKeeper 3.9's types 4 and 5, which zkgo
	// knows too; a 3.8 server refuses them (the reply is ignored) and
	// keeps the watch, as before.
	var typ WatcherType
	if removed && !m.ended && m.inflight[p] == 0 {
		switch {
		case len(m.persistent[p]) == 0 && len(m.recursive[p]) == 0 &&
			len(m.data[p]) == 0 && len(m.exist[p]) == 0 && len(m.child[p]) == 0:
			typ = WatcherAny
		case len(tbl[p]) == 0 && w.recursive:
			typ = proto.WatcherPersistentRecursive
		case len(tbl[p]) == 0:
			typ = proto.WatcherPersistent
		}
	}
	m.mu.Unlock()
	if typ != 0 {
		m.c.sendAsync(proto.OpRemoveWatches, &proto.RemoveWatchesRequest{Path: m.c.addRoot(p), Type: typ})
	}
}

// removed applies a successful removeWatches locally: the removed one-shot
// watches get a *WatchRemoved event, and for WatcherAny the persistent ones
// get EventPersistentWatchRemoved and end.
func (m *watchManager) removed(p string, typ WatcherType) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if typ == WatcherData || typ == WatcherAny {
		ev := Event{Type: EventDataWatchRemoved, Path: p, Zxid: NoZxid}
		fire(m.data[p], ev)
		fire(m.exist[p], ev)
		delete(m.data, p)
		delete(m.exist, p)
	}
	if typ == WatcherChildren || typ == WatcherAny {
		fire(m.child[p], Event{Type: EventChildWatchRemoved, Path: p, Zxid: NoZxid})
		delete(m.child, p)
	}
	if typ == WatcherAny {
		ev := Event{Type: EventPersistentWatchRemoved, Path: p, Zxid: NoZxid}
		for _, tbl := range []map[string][]*Watcher{m.persistent, m.recursive} {
			for _, w := range tbl[p] {
				w.push(ev)
				w.q.finish()
			}
			delete(tbl, p)
		}
	}
}

// terminate ends every watch with EventNotWatching (session lost or Conn
// closed). Later registrations end at once.
func (m *watchManager) terminate(_ State, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		return
	}
	m.ended, m.endErr = true, err
	for _, tbl := range []map[string][]chan Event{m.data, m.exist, m.child} {
		for p, chs := range tbl {
			fire(chs, Event{Type: EventNotWatching, Path: p, Err: err, Zxid: NoZxid})
			delete(tbl, p)
		}
	}
	for _, tbl := range []map[string][]*Watcher{m.persistent, m.recursive} {
		for p, ws := range tbl {
			for _, w := range ws {
				w.push(Event{Type: EventNotWatching, Path: p, Err: err, Zxid: NoZxid})
				w.q.finish()
			}
			delete(tbl, p)
		}
	}
}

// setWatchesMax bounds the encoded size of one SetWatches2 request, as
// ZooKeeper's client does (128 KB).
const setWatchesMax = 128 * 1024

// setWatches builds the SetWatches2 requests that re-register every watch
// after a reconnection, with server paths, each under setWatchesMax bytes.
func (m *watchManager) setWatches(zxid int64) []*proto.SetWatches2 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*proto.SetWatches2
	var cur *proto.SetWatches2
	size := 0
	add := func(field func(*proto.SetWatches2) *[]string, p string) {
		sp := m.c.addRoot(p)
		if p == configKey {
			sp = ConfigNode
		}
		if cur == nil || size+4+len(sp) > setWatchesMax-64 {
			cur = &proto.SetWatches2{RelativeZxid: zxid,
				DataWatches: []string{}, ExistWatches: []string{}, ChildWatches: []string{},
				PersistentWatches: []string{}, PersistentRecursiveWatches: []string{}}
			out = append(out, cur)
			size = 8 + 5*4
		}
		f := field(cur)
		*f = append(*f, sp)
		size += 4 + len(sp)
	}
	for p := range m.data {
		add(func(s *proto.SetWatches2) *[]string { return &s.DataWatches }, p)
	}
	for p := range m.exist {
		add(func(s *proto.SetWatches2) *[]string { return &s.ExistWatches }, p)
	}
	for p := range m.child {
		add(func(s *proto.SetWatches2) *[]string { return &s.ChildWatches }, p)
	}
	for p := range m.persistent {
		add(func(s *proto.SetWatches2) *[]string { return &s.PersistentWatches }, p)
	}
	for p := range m.recursive {
		add(func(s *proto.SetWatches2) *[]string { return &s.PersistentRecursiveWatches }, p)
	}
	return out
}
