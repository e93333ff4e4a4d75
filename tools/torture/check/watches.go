package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Watch is a persistent watch, registered with AddWatch.
type Watch struct {
	ID        string // names the watch in WatchEvents; a watch added again (on a new session) is a new Watch
	Client    string // the client holding it: its ConnChanges split the watch's events into spans
	Path      string
	Recursive bool  // persistent recursive; false: persistent
	Added     int64 // when AddWatch returned
}

// Write is a create, delete or setData under a watched path. Record every
// write to the watched subtree, with its zxid when it is known.
type Write struct {
	Client       string
	Path         string
	Change       Change // Created, Deleted or DataChanged
	Call, Return int64
	Outcome      Outcome
	// Zxid is the change's zxid, 0 when not known. Neither client hands a
	// write's reply-header zxid back, so: create with Create2 and take
	// Stat.Czxid; setData: the returned Stat.Mzxid; delete: Conn.LastZxid
	// read right after Delete returned, on a Conn that one goroutine uses
	// for nothing else (the delete's reply is then the last reply it
	// got). A write of unknown outcome that the final state shows took
	// effect (a node still there with its Czxid or Mzxid) may be given
	// its zxid: with a zxid, a write that is not Failed counts as
	// committed.
	Zxid int64
}

// String formats w on one line.
func (w Write) String() string {
	s := fmt.Sprintf("%s %s %s %s -> %v", w.Client, writeVerb(w.Change), w.Path, span(w.Call, w.Return), w.Outcome)
	if w.Zxid != 0 {
		s += " zxid " + hex(w.Zxid)
	}
	return s
}

func writeVerb(c Change) string {
	switch c {
	case Created:
		return "create"
	case Deleted:
		return "delete"
	case DataChanged:
		return "setData"
	}
	return c.String()
}

// WatchEvent is a notification as the watch's reader received it, in the
// order received (one reader goroutine per watch).
type WatchEvent struct {
	Watch  string // the Watch's ID
	At     int64
	Change Change // Change(ev.Type); other event types are ignored
	Path   string
}

// ConnChange is a connection state change of a watcher's client, as the
// workload observed it: Connected false when it saw the disconnection
// (StateSuspended; go-zookeeper: StateDisconnected), true when it saw the
// reconnection (StateReconnected; StateHasSession).
type ConnChange struct {
	Client    string
	At        int64
	Connected bool
}

// WatchHistory is the watch workload's history.
type WatchHistory struct {
	Watches []Watch
	Writes  []Write
	Events  []WatchEvent
	Conns   []ConnChange
}

// WatchOptions configure Watches.
type WatchOptions struct {
	// Slop bounds how late the workload sees a connection change, and how
	// long an event waits in the watch's queue before its reader records
	// it. An event recorded more than Slop before a disconnection was
	// observed came on the old connection; one recorded more than Slop
	// after it, on a later one; between, the checker may place the span
	// boundary before or after it.
	Slop time.Duration
}

// evKey is what an event shows of a change: its type and path.
type evKey struct {
	change Change
	path   string
}

// expect is a change a watch should report.
type expect struct {
	key   evKey
	write *Write
}

// watchCheck checks the events of one watch.
type watchCheck struct {
	w      Watch
	known  []expect // committed changes with a zxid, in zxid order
	maybe  []expect // changes that may have happened, at an unknown zxid, by call time
	events []WatchEvent
	byKey  map[evKey][]int // known indices by key
	mayKey map[evKey][]int // maybe indices by key, in call order
	reach  map[int]walk    // memo of best(a)
}

// walk is how far a greedy explanation of the events got.
type walk struct {
	start int // first event explained
	reach int // first event not explained (len(events): all)
	next  int // the known change expected next
	prev  int // the event before reach matched known[prev] (-1: a maybe or none)
	prevM int // ... or maybe[prevM] (-1: none)
}

// Watches checks that each persistent watch reports, between two
// disconnections of its client, every committed change under its path
// exactly once and in zxid order: the events of one connection's span
// match a run of consecutive changes (in zxid order) of the watched
// subtree, with changes of unknown outcome or unknown zxid allowed
// anywhere after their call, at most once, or not at all. Across a
// reconnection events may be missing (ZooKeeper re-registers persistent
// watches without replaying what they missed) and may repeat or go back
// (the new server may be behind the notifications of the old one), so
// spans are checked separately.
//
// Events carry no zxid (ZooKeeper sends notifications with zxid -1), so
// events are matched to changes by type and path, and a span may start at
// any change; an event must come after its write was called. A recursive
// watch expects NodeCreated, NodeDeleted and NodeDataChanged of its path
// and every descendant; a persistent one, those of its path and
// NodeChildrenChanged of its path for a child's create or delete.
//
// It assumes every change in the watched subtrees is a recorded write
// (no containers or TTL nodes the server removes, no sequential names).
func Watches(h WatchHistory, o WatchOptions) Result {
	res := Result{Name: "watches", OK: true, Checked: len(h.Writes) + len(h.Events)}
	events := make(map[string][]WatchEvent)
	for _, e := range h.Events {
		if e.Change.valid() {
			events[e.Watch] = append(events[e.Watch], e)
		}
	}
	downs := make(map[string][]int64)
	for _, c := range h.Conns {
		if !c.Connected {
			downs[c.Client] = append(downs[c.Client], c.At)
		}
	}
	unknown, noZxid := 0, 0
	for _, w := range h.Writes {
		switch {
		case w.Outcome == Failed:
		case w.Zxid == 0 && w.Outcome == Unknown:
			unknown++
		case w.Zxid == 0:
			noZxid++
		}
	}
	watches := slices.Clone(h.Watches)
	slices.SortStableFunc(watches, func(a, b Watch) int { return cmp.Compare(a.ID, b.ID) })
	spans := 0
	for _, w := range watches {
		c := newWatchCheck(w, h.Writes, events[w.ID])
		ds := slices.Clone(downs[w.Client])
		slices.Sort(ds)
		var n int
		if n = c.check(ds, int64(o.Slop), &res); n < 0 {
			return res
		}
		spans += n
	}
	res.note("%d watches, %d events in %d connection spans, %d writes (%d of unknown outcome without a zxid, %d acknowledged without a zxid: either may explain one event, neither is required)",
		len(h.Watches), len(h.Events), spans, len(h.Writes), unknown, noZxid)
	return res
}

// newWatchCheck selects the changes w should report.
func newWatchCheck(w Watch, writes []Write, events []WatchEvent) *watchCheck {
	c := &watchCheck{w: w, byKey: make(map[evKey][]int), mayKey: make(map[evKey][]int), reach: make(map[int]walk)}
	c.events = slices.Clone(events)
	slices.SortStableFunc(c.events, func(a, b WatchEvent) int { return cmp.Compare(a.At, b.At) })
	for i := range writes {
		wr := &writes[i]
		if wr.Outcome == Failed || (wr.Change != Created && wr.Change != Deleted && wr.Change != DataChanged) {
			continue
		}
		var key evKey
		switch {
		case w.Recursive && under(w.Path, wr.Path):
			key = evKey{wr.Change, wr.Path}
		case !w.Recursive && wr.Path == w.Path:
			key = evKey{wr.Change, wr.Path}
		case !w.Recursive && wr.Path != "/" && parentPath(wr.Path) == w.Path && wr.Change != DataChanged:
			key = evKey{ChildrenChanged, w.Path}
		default:
			continue
		}
		if wr.Zxid != 0 {
			c.known = append(c.known, expect{key, wr})
		} else {
			c.maybe = append(c.maybe, expect{key, wr})
		}
	}
	slices.SortStableFunc(c.known, func(a, b expect) int { return cmp.Compare(a.write.Zxid, b.write.Zxid) })
	slices.SortStableFunc(c.maybe, func(a, b expect) int { return cmp.Compare(a.write.Call, b.write.Call) })
	for i, e := range c.known {
		c.byKey[e.key] = append(c.byKey[e.key], i)
	}
	for i, e := range c.maybe {
		c.mayKey[e.key] = append(c.mayKey[e.key], i)
	}
	return c
}

// check checks the watch's events, split into spans at the disconnections
// downs (observation times, sorted). It returns the number of spans, or -1
// after recording a violation in res.
func (c *watchCheck) check(downs []int64, slop int64, res *Result) int {
	n := len(c.events)
	count := func(pred func(int64) bool) int {
		return countPrefix(c.events, pred)
	}
	// The split point after disconnection d: events[:p] came before it.
	// It lies in [lo[d], hi[d]].
	lo, hi, natural := make([]int, len(downs)), make([]int, len(downs)), make([]int, len(downs))
	for d, at := range downs {
		lo[d] = count(func(t int64) bool { return t < at-slop })
		hi[d] = count(func(t int64) bool { return t <= at+slop })
		natural[d] = count(func(t int64) bool { return t <= at })
	}
	// Reachable split points, disconnection by disconnection: p is
	// reachable if the span from some reachable p' to p is explained.
	reachable := []int{0}
	for d := range downs {
		var next []int
		for p := lo[d]; p <= hi[d]; p++ {
			for _, q := range reachable {
				if q <= p && p <= c.best(q).reach {
					next = append(next, p)
					break
				}
			}
		}
		if reachable = next; len(reachable) == 0 {
			break
		}
	}
	for _, q := range reachable {
		if c.best(q).reach == n {
			return len(downs) + 1
		}
	}
	// No placement of the span boundaries explains the events: the
	// natural placement (at the observed times) has a span that is not
	// explained; report its first unexplained event.
	a := 0
	for d := range downs {
		p := min(max(natural[d], lo[d], a), hi[d])
		if b := c.best(a); b.reach < p {
			c.report(b, res)
			return -1
		}
		a = p
	}
	if b := c.best(a); b.reach < n {
		c.report(b, res)
		return -1
	}
	return len(downs) + 1 // unreachable: the natural placement is one the search tries
}

// countPrefix counts the events whose time satisfies pred, which holds for a
// prefix of the events (they are sorted by time).
func countPrefix(events []WatchEvent, pred func(int64) bool) int {
	i, j := 0, len(events)
	for i < j {
		h := int(uint(i+j) >> 1)
		if pred(events[h].At) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// best returns the explanation of the events from a on that gets
// furthest, over every known change the span could start at.
func (c *watchCheck) best(a int) walk {
	if b, ok := c.reach[a]; ok {
		return b
	}
	b := walk{start: a, reach: a, next: -1, prev: -1, prevM: -1}
	if a < len(c.events) {
		e := c.events[a]
		key := evKey{e.Change, e.Path}
		var starts []int
		if c.usable(key, 0, e.At) {
			starts = make([]int, len(c.known)+1)
			for i := range starts {
				starts[i] = i
			}
		} else {
			for _, s := range c.byKey[key] {
				if c.known[s].write.Call < e.At {
					starts = append(starts, s)
				}
			}
		}
		for _, s := range starts {
			// From known[s] on, at most the known changes left and every
			// maybe change explain events: a start that cannot beat the
			// best so far, nor can any later one.
			if a+len(c.known)-s+len(c.maybe) <= b.reach {
				break
			}
			if g := c.greedy(a, s); g.reach > b.reach {
				b = g
				if b.reach == len(c.events) {
					break
				}
			}
		}
	}
	c.reach[a] = b
	return b
}

// usable reports whether the used+1st maybe change of key, in call order,
// was called before at (the earliest unused one is the best to use: every
// later event comes later still).
func (c *watchCheck) usable(key evKey, used int, at int64) bool {
	m := c.mayKey[key]
	return used < len(m) && c.maybe[m[used]].write.Call < at
}

// greedy explains the events from a on, the first known change of the
// span being known[s]: each event matches the next known change if it can,
// else a maybe change not used yet. Preferring the known change loses
// nothing: an explanation that gives the event a maybe change and the
// known change to a later event of the same key can swap them.
func (c *watchCheck) greedy(a, s int) walk {
	g := walk{start: a, reach: a, next: s, prev: -1, prevM: -1}
	used := make(map[evKey]int)
	for j := a; j < len(c.events); j++ {
		e := c.events[j]
		key := evKey{e.Change, e.Path}
		switch {
		case g.next < len(c.known) && c.known[g.next].key == key && c.known[g.next].write.Call < e.At:
			g.prev, g.prevM = g.next, -1
			g.next++
		case c.usable(key, used[key], e.At):
			g.prev, g.prevM = -1, c.mayKey[key][used[key]]
			used[key]++
		default:
			return g
		}
		g.reach = j + 1
	}
	return g
}

// report records the violation at the first event b could not explain.
func (c *watchCheck) report(b walk, res *Result) {
	j := b.reach
	e := c.events[j]
	key := evKey{e.Change, e.Path}
	kind := "persistent"
	if c.w.Recursive {
		kind = "persistent recursive"
	}
	name := fmt.Sprintf("watch %s (%s on %s, client %s)", c.w.ID, kind, c.w.Path, c.w.Client)
	this := c.describe(j)
	var matches []string // the writes that could make this event
	for _, i := range c.byKey[key] {
		matches = append(matches, "a write that would explain it: "+c.known[i].write.String())
	}
	for _, i := range c.mayKey[key] {
		matches = append(matches, "a write that would explain it: "+c.maybe[i].write.String())
	}
	if len(matches) > 3 {
		matches = append(matches[:3], fmt.Sprintf("... and %d more", len(matches)-3))
	}
	if j == b.start {
		if len(matches) == 0 {
			res.fail(fmt.Sprintf("%s got %v %s, but no write of that path makes that event", name, e.Change, e.Path), this)
		} else {
			res.fail(fmt.Sprintf("%s got %v %s before any write that makes it was called", name, e.Change, e.Path), append([]string{this}, matches...)...)
		}
		return
	}
	ev := []string{c.describe(j - 1)}
	switch {
	case b.prev >= 0:
		ev = append(ev, "  matched "+c.known[b.prev].write.String())
	case b.prevM >= 0:
		ev = append(ev, "  matched "+c.maybe[b.prevM].write.String())
	}
	if b.next < len(c.known) {
		want := c.known[b.next]
		ev = append(ev, "next committed change: "+want.write.String(), this)
		res.fail(fmt.Sprintf("%s got %v %s where %v %s (zxid %s) was next: a change was skipped, repeated or reordered",
			name, e.Change, e.Path, want.key.change, want.key.path, hex(want.write.Zxid)), append(ev, matches...)...)
		return
	}
	ev = append(ev, this)
	res.fail(fmt.Sprintf("%s got %v %s after the last committed change it could report: a repeated or forged event", name, e.Change, e.Path),
		append(ev, matches...)...)
}

// describe formats event j of the watch.
func (c *watchCheck) describe(j int) string {
	e := c.events[j]
	return fmt.Sprintf("watch %s event #%d at %s: %v %s", c.w.ID, j+1, ts(e.At), e.Change, e.Path)
}

// under reports whether p is root or below it.
func under(root, p string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// parentPath returns the parent of an absolute path other than "/".
func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}
