package zkcli

import (
	"container/heap"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/zkgo/zkgo/zk"
)

// zkCli registers every watch with one default watcher, and the Java
// client delivers a notification once per distinct watcher: a change that
// fires "get -w" and "ls -w" on the same node, or a one-shot watch and a
// persistent one, prints one WATCHER:: line. The Go client hands each watch
// its own channel instead, so the shell keeps a book of what it registered
// and prints each notification once: when an event arrives, the copies the
// same notification delivers to the other registrations are claimed
// (one-shot registrations are marked, persistent ones get a count of
// events to skip), and dropped when they arrive.

type watchKind int

const (
	kindData  watchKind = iota // getData and exists watches
	kindChild                  // getChildren watches
)

type evKey struct {
	typ  zk.EventType
	path string
}

// oneShot is a one-shot watch the shell registered.
type oneShot struct {
	kind    watchKind
	path    string
	claimed bool // its event was printed through another registration
}

// persistent is a persistent (recursive) watch the shell registered.
type persistent struct {
	w         *zk.Watcher
	path      string
	recursive bool
	skip      map[evKey]int
}

type watchBook struct {
	mu         sync.Mutex // guards gen, oneShots, persistent and their entries
	gen        int        // incremented when the session closes
	oneShots   map[string][]*oneShot
	persistent map[string]*persistent // key: path + "\x00" + "r" or "p"
}

func persistentKey(path string, recursive bool) string {
	if recursive {
		return path + "\x00r"
	}
	return path + "\x00p"
}

func (b *watchBook) reset() {
	b.mu.Lock()
	b.gen++
	b.oneShots = map[string][]*oneShot{}
	b.persistent = map[string]*persistent{}
	b.mu.Unlock()
}

// oneShotMatches reports whether a notification of type t on the watch's
// path reaches a one-shot watch of kind k (ZKWatchManager.materialize).
func oneShotMatches(k watchKind, t zk.EventType) bool {
	switch t {
	case zk.EventNodeCreated, zk.EventNodeDataChanged, zk.EventDataWatchRemoved:
		return k == kindData
	case zk.EventNodeChildrenChanged, zk.EventChildWatchRemoved:
		return k == kindChild
	case zk.EventNodeDeleted:
		return true
	}
	return false
}

// persistentMatches reports whether the event reaches watch p.
func persistentMatches(p *persistent, ev evKey) bool {
	switch ev.typ {
	case zk.EventDataWatchRemoved, zk.EventChildWatchRemoved:
		return false
	case zk.EventPersistentWatchRemoved:
		return p.path == ev.path
	}
	if !p.recursive {
		return p.path == ev.path
	}
	if ev.typ == zk.EventNodeChildrenChanged {
		return false
	}
	return isAncestorOrSelf(p.path, ev.path)
}

func isAncestorOrSelf(a, p string) bool {
	if a == "/" || a == p {
		return true
	}
	return strings.HasPrefix(p, a) && len(p) > len(a) && p[len(a)] == '/'
}

// claimLocked claims the copies of ev that other registrations will
// receive. src is the registration ev arrived through (nil for none).
func (b *watchBook) claimLocked(ev evKey, srcOne *oneShot, srcP *persistent) {
	list := b.oneShots[ev.path]
	kept := list[:0]
	for _, o := range list {
		if o != srcOne && oneShotMatches(o.kind, ev.typ) {
			o.claimed = true
			continue
		}
		kept = append(kept, o)
	}
	if len(kept) == 0 {
		delete(b.oneShots, ev.path)
	} else {
		b.oneShots[ev.path] = kept
	}
	for _, p := range b.persistent {
		if p != srcP && persistentMatches(p, ev) {
			p.skip[ev]++
		}
	}
}

func (b *watchBook) removeOneShotLocked(o *oneShot) {
	list := b.oneShots[o.path]
	for i, x := range list {
		if x == o {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(b.oneShots, o.path)
	} else {
		b.oneShots[o.path] = list
	}
}

// Events are received by dispatcher goroutines ("shards", each selecting
// over at most shardSize registrations, as reflect.Select takes at most
// 65536 cases); only they receive from the channels. Between commands they
// print events as they come. While a command runs they hold them, and
// after it the shell collects what they hold and what is queued
// (flushEvents) and prints it in a deterministic order: the Go client
// queues the events a session causes itself (a "set" on a node it
// watches, a "removewatches") before the call returns, so these are
// printed right after the command's output, and not lost when a script
// ends.

const shardSize = 512

type registration struct {
	ch  <-chan zk.Event
	seq int64 // registration order
	gen int   // the watch book's generation (one per session)
	one *oneShot
	per *persistent
}

type heldEvent struct {
	r  *registration
	ev zk.Event
}

type ctlMsg struct {
	add   *registration
	flush chan []heldEvent // receives the held and queued events
}

type shard struct {
	ctl  chan ctlMsg
	done chan struct{}
	n    atomic.Int32 // registrations held
}

// runShard is a shard's loop; it ends when its ctl channel is closed.
func (s *Shell) runShard(sh *shard) {
	defer close(sh.done)
	var (
		regs []*registration // in registration order
		held []heldEvent
	)
	// cases[0] is the control channel; cases[i+1] receives from regs[i].
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(sh.ctl)}}
	remove := func(i int) {
		regs = append(regs[:i], regs[i+1:]...)
		cases = append(cases[:i+1], cases[i+2:]...)
		sh.n.Add(-1)
	}
	take := func(r *registration, ev zk.Event, hold bool) {
		if hold {
			held = append(held, heldEvent{r, ev})
		} else {
			s.handleEvent(r, ev)
		}
	}
	// drain takes every queued event, registration by registration.
	drain := func(hold bool) {
		for i := 0; i < len(regs); {
			removed := false
		queued:
			for {
				select {
				case ev, ok := <-regs[i].ch:
					if !ok {
						remove(i)
						removed = true
						break queued
					}
					take(regs[i], ev, hold || s.holding.Load())
				default:
					break queued
				}
			}
			if !removed {
				i++
			}
		}
	}
	for {
		i, v, ok := reflect.Select(cases)
		if i > 0 {
			if !ok {
				remove(i - 1)
				continue
			}
			take(regs[i-1], v.Interface().(zk.Event), s.holding.Load())
			drain(false)
			continue
		}
		if !ok {
			return
		}
		m := v.Interface().(ctlMsg)
		if m.add != nil {
			regs = append(regs, m.add)
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(m.add.ch)})
		}
		if m.flush != nil {
			drain(true)
			m.flush <- held
			held = nil
		}
	}
}

// register hands a channel to a shard with room, starting one if needed.
func (s *Shell) register(r *registration) {
	s.ctlMu.Lock()
	defer s.ctlMu.Unlock()
	if s.closed {
		return
	}
	var sh *shard
	for _, x := range s.shards {
		if x.n.Load() < shardSize {
			sh = x
			break
		}
	}
	if sh == nil {
		sh = &shard{ctl: make(chan ctlMsg), done: make(chan struct{})}
		s.shards = append(s.shards, sh)
		go s.runShard(sh)
	}
	s.regSeq++
	r.seq = s.regSeq
	sh.n.Add(1)
	sh.ctl <- ctlMsg{add: r}
}

// flushEvents ends the hold that run set for a command and prints the
// events held and queued meanwhile, in order.
func (s *Shell) flushEvents() {
	s.ctlMu.Lock()
	shards := append([]*shard(nil), s.shards...)
	collect := func(batch []heldEvent) []heldEvent {
		for _, sh := range shards {
			ch := make(chan []heldEvent)
			sh.ctl <- ctlMsg{flush: ch}
			batch = append(batch, <-ch...)
		}
		return batch
	}
	batch := collect(nil)
	s.holding.Store(false)
	batch = collect(batch) // what was held while the first round ran
	s.ctlMu.Unlock()
	for _, h := range orderEvents(batch) {
		s.handleEvent(h.r, h.ev)
	}
}

// orderEvents orders a batch of events: each registration's events stay
// in the order they came, and across registrations an event on a node
// comes before a NodeChildrenChanged (ZooKeeper notifies about the node
// itself, then about its parent's children), then older registrations
// first.
func orderEvents(batch []heldEvent) []heldEvent {
	if len(batch) < 2 {
		return batch
	}
	byReg := map[*registration][]heldEvent{}
	for _, h := range batch {
		byReg[h.r] = append(byReg[h.r], h)
	}
	q := &eventHeap{}
	for _, evs := range byReg {
		*q = append(*q, evs)
	}
	heap.Init(q)
	out := make([]heldEvent, 0, len(batch))
	for q.Len() > 0 {
		evs := (*q)[0]
		out = append(out, evs[0])
		if len(evs) == 1 {
			heap.Pop(q)
		} else {
			(*q)[0] = evs[1:]
			heap.Fix(q, 0)
		}
	}
	return out
}

// eventHeap holds each registration's pending events, ordered by its
// first event.
type eventHeap [][]heldEvent

func (q eventHeap) Len() int { return len(q) }
func (q eventHeap) Less(i, j int) bool {
	a, b := q[i][0], q[j][0]
	ra, rb := a.ev.Type == zk.EventNodeChildrenChanged, b.ev.Type == zk.EventNodeChildrenChanged
	if ra != rb {
		return rb
	}
	return a.r.seq < b.r.seq
}
func (q eventHeap) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventHeap) Push(x any)   { *q = append(*q, x.([]heldEvent)) }
func (q *eventHeap) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// stopDispatchers ends the shards and waits for them.
func (s *Shell) stopDispatchers() {
	s.ctlMu.Lock()
	shards := s.shards
	s.shards, s.closed = nil, true
	for _, sh := range shards {
		close(sh.ctl)
	}
	s.ctlMu.Unlock()
	for _, sh := range shards {
		<-sh.done
	}
}

// handleEvent applies the book to an event and prints it once.
func (s *Shell) handleEvent(r *registration, ev zk.Event) {
	b := &s.watches
	k := evKey{ev.Type, ev.Path}
	b.mu.Lock()
	if r.gen != b.gen {
		// A closed session's watch: events its closing caused (the
		// deletion of its ephemeral nodes) are not printed.
		b.mu.Unlock()
		return
	}
	if o := r.one; o != nil {
		if o.claimed {
			b.mu.Unlock()
			return
		}
		b.removeOneShotLocked(o)
		if ev.Type == zk.EventNotWatching {
			b.mu.Unlock()
			return
		}
		b.claimLocked(k, o, nil)
	} else {
		p := r.per
		key := persistentKey(p.path, p.recursive)
		if ev.Type == zk.EventNotWatching || ev.Type == zk.EventPersistentWatchRemoved {
			if b.persistent[key] == p {
				delete(b.persistent, key)
			}
		}
		if ev.Type == zk.EventNotWatching {
			b.mu.Unlock()
			return
		}
		if p.skip[k] > 0 {
			p.skip[k]--
			b.mu.Unlock()
			return
		}
		b.claimLocked(k, nil, p)
	}
	b.mu.Unlock()
	s.printEvent(ev)
}

// addOneShot records a one-shot watch.
func (s *Shell) addOneShot(kind watchKind, path string, ch <-chan zk.Event) {
	if ch == nil {
		return
	}
	o := &oneShot{kind: kind, path: path}
	b := &s.watches
	b.mu.Lock()
	b.oneShots[path] = append(b.oneShots[path], o)
	gen := b.gen
	b.mu.Unlock()
	s.register(&registration{ch: ch, gen: gen, one: o})
}

// addPersistent records a persistent watch. A second watch of the same
// path and mode is closed at once: the server holds one registration per
// path anyway, as the Java client's watcher set holds zkCli's one watcher
// once.
func (s *Shell) addPersistent(w *zk.Watcher, path string, recursive bool) {
	b := &s.watches
	key := persistentKey(path, recursive)
	b.mu.Lock()
	if _, ok := b.persistent[key]; ok {
		b.mu.Unlock()
		w.Close()
		return
	}
	// The server keeps one mode per path: the other mode's watch is gone.
	other := b.persistent[persistentKey(path, !recursive)]
	delete(b.persistent, persistentKey(path, !recursive))
	p := &persistent{w: w, path: path, recursive: recursive, skip: map[evKey]int{}}
	b.persistent[key] = p
	gen := b.gen
	b.mu.Unlock()
	if other != nil {
		other.w.Close()
	}
	s.register(&registration{ch: w.Events(), gen: gen, per: p})
}

// printEvent prints a node event as zkCli's default watcher.
func (s *Shell) printEvent(ev zk.Event) {
	text := watchedEvent("SyncConnected", eventTypeName(ev.Type), ev.Path)
	if s.printWatches.Load() {
		s.o.write(s.o.out, text)
	}
	if h := s.eventHook; h != nil {
		h(text)
	}
}
