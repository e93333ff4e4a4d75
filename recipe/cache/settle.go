package cache

import (
	"context"
	"errors"

	"github.com/zkgo/zkgo/zk"
)

// A settle brings the cache up to date with the server. It reads (the
// whole subtree, or the nodes the watch named), then takes a barrier: it
// receives every watch event the server sent before answering the reads
// (Watcher.Queued, read after the last reply, counts them). Events that
// arrived meanwhile name nodes that may have changed after they were
// read; they are read again, and the barrier taken again, until a round
// of reads ends with no event behind it. At that point every node the
// cache read still has the state it read (a change would have sent an
// event before the barrier's reads were answered), so the reads together
// are the subtree as it was at one zxid: the batch is committed (commit.go)
// as one change of the store, its events in zxid order.

// work is the set of nodes to read in the next round, with their depths.
type work struct{ paths map[string]int }

func newWork() *work { return &work{paths: make(map[string]int)} }

func (w *work) add(path string, depth int) { w.paths[path] = depth }
func (w *work) empty() bool                { return len(w.paths) == 0 }

// job is one node to read.
type job struct {
	path  string
	depth int
	// full: read every child the listing names (a read of the whole
	// subtree), not only those the cache does not know.
	full bool
	// aux: an ancestor of the missing root, read for its pzxid only.
	aux bool
	// One-shot mode: which watches this read sets (the dispatcher knows
	// which are set already).
	watchData, watchChild, watchExist bool
}

// obs is what a read found.
type obs struct {
	exists   bool
	data     []byte
	stat     zk.Stat
	listed   bool     // children holds the child list
	children []string // names
	err      error    // the node could not be read (ErrNoAuth...): treated as missing
}

// overlay collects the reads of one settle; later reads of a node replace
// earlier ones.
type overlay struct {
	nodes map[string]*obs
	aux   map[string]int64 // pzxid of the root's ancestors, when the root is missing
	max   int64            // the largest zxid any read showed
}

func newOverlay() *overlay {
	return &overlay{nodes: make(map[string]*obs), aux: make(map[string]int64)}
}

func (ov *overlay) note(st *zk.Stat) {
	ov.max = max(ov.max, st.Mzxid, st.Pzxid, st.Czxid)
}

// existsNow reports whether the settle read path and found it.
func (ov *overlay) existsNow(path string) bool {
	o := ov.nodes[path]
	return o != nil && o.exists && o.err == nil
}

// result is a read's outcome, handed from the reading goroutine to the
// dispatcher.
type result struct {
	job  job
	obs  *obs
	aux  *zk.Stat // aux jobs: the ancestor's Stat (nil: missing)
	err  error    // the read failed as a whole (connection, session, ctx)
	data <-chan zk.Event
	chld <-chan zk.Event
	exst <-chan zk.Event
	// exstFound: the exists read found the node, so exst is a data watch
	// (fired by a change or the deletion), not an exist watch.
	exstFound bool
}

// settle reads until reads and events agree, then commits (see above).
// full reads the whole subtree; otherwise w names the nodes to read.
func (e *engine) settle(full bool, w *work) error {
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	// Stop reading as soon as the connection breaks: what was read
	// before and after a disconnection does not make one state.
	epoch := e.conn.Suspensions()
	states, unsub := e.conn.NotifyState()
	defer unsub()
	go func() {
		for s := range states {
			if !s.IsConnected() {
				cancel()
			}
		}
	}()
	if e.conn.Suspensions() != epoch || !e.conn.State().IsConnected() {
		return errSuspended
	}
	fail := func(err error) error {
		if e.ctx.Err() != nil {
			return e.ctx.Err()
		}
		if errors.Is(err, errWatchEnded) {
			return err
		}
		if ctx.Err() != nil || e.conn.Suspensions() != epoch {
			return errSuspended
		}
		return err
	}

	ov := newOverlay()
	// Events already queued are part of this round: take them first.
	pre := newWork()
	if _, err := e.barrier(ctx, pre); err != nil {
		return fail(err)
	}
	var jobs []job
	if full {
		jobs = []job{{path: e.root, full: true}}
	} else {
		for p, d := range pre.paths {
			w.add(p, d)
		}
		jobs = e.jobsFor(w, false)
	}
	for round := 1; ; round++ {
		if tracing {
			trace(e, "fetch full=%v jobs=%v", full, jobs)
		}
		if err := e.fetch(ctx, jobs, ov); err != nil {
			return fail(err)
		}
		if testHookAfterFetch != nil {
			testHookAfterFetch(e, full, round)
		}
		next := newWork()
		n, err := e.barrier(ctx, next)
		if tracing {
			trace(e, "barrier: %d events, next %v, err %v", n, next.paths, err)
		}
		if err != nil {
			return fail(err)
		}
		if n == 0 {
			break
		}
		// A whole read's later rounds are whole reads too: the commit
		// drops every cached node they do not find, so a child a listing
		// names must be read even where the store still holds a node of
		// that name (it may be an older node the first round found gone,
		// whose watches were spent before this settle began).
		jobs = e.jobsFor(next, full)
	}
	if e.conn.Suspensions() != epoch {
		return errSuspended
	}
	e.commit(ov, full)
	if full {
		e.readWhole = epoch
	}
	return nil
}

func (e *engine) jobsFor(w *work, full bool) []job {
	jobs := make([]job, 0, len(w.paths))
	for p, d := range w.paths {
		jobs = append(jobs, job{path: p, depth: d, full: full})
	}
	return jobs
}

// testHookAfterFetch, when set by a test, runs on the engine's goroutine
// after each round of reads of a settle (round counts from 1).
var testHookAfterFetch func(e *engine, full bool, round int)

// barrier receives the watch events the server sent before the reads
// that have returned were answered, and adds the nodes they name to w. It
// returns how many events it received. With one-shot watches it can only
// take the events that have reached the cache so far.
func (e *engine) barrier(ctx context.Context, w *work) (int, error) {
	if e.shots != nil {
		return e.shots.drain(e, w), nil
	}
	if e.watcher == nil {
		return 0, nil
	}
	n := 0
	target := e.watcher.Queued()
	for e.received < target {
		select {
		case ev, ok := <-e.watcher.Events():
			if !ok {
				e.watcher = nil
				return n, errWatchEnded
			}
			e.received++
			n++
			if e.note(ev, w) {
				e.watcher = nil
				return n, errWatchEnded
			}
		case <-ctx.Done():
			return n, ctx.Err()
		}
	}
	return n, nil
}

// fetch runs jobs, and the jobs their results call for (the children a
// listing names, the ancestors of a missing root), with up to
// opts.concurrency reads in flight, pipelined on the Conn. It returns the
// first error that is not about a single node.
func (e *engine) fetch(ctx context.Context, jobs []job, ov *overlay) error {
	limit := e.opts.concurrency
	results := make(chan result, limit)
	seen := make(map[string]bool, len(jobs)) // dispatched in this fetch
	busy := make(map[string]bool)            // dispatched, no result yet
	recheck := make(map[string]bool)         // busy when a listing named it
	queue := jobs
	inflight := 0
	var first error
	conn := e.conn
	for {
		for first == nil && len(queue) > 0 && inflight < limit {
			j := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			key := j.path
			if j.aux {
				key = "\x00" + j.path
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			if !j.aux {
				busy[j.path] = true
			}
			if e.shots != nil && !j.aux {
				e.shots.plan(e, &j)
			}
			inflight++
			go func(j job) { results <- e.read(ctx, conn, j) }(j)
		}
		if inflight == 0 {
			return first
		}
		r := <-results
		inflight--
		if e.shots != nil {
			e.shots.arm(e, r)
		}
		if r.err != nil {
			if first == nil {
				first = r.err
			}
			continue
		}
		if first != nil {
			continue
		}
		if r.job.aux {
			if r.aux != nil {
				ov.aux[r.job.path] = r.aux.Pzxid
				ov.note(r.aux)
			} else if r.job.path != "/" {
				queue = append(queue, job{path: parentOf(r.job.path), aux: true})
			}
			continue
		}
		p := r.job.path
		o := r.obs
		if tracing {
			trace(e, "read %s exists=%v listed=%v children=%v pzxid=%d czxid=%d watch(d,c,e)=%v,%v,%v busy=%v recheck=%v", p, o.exists, o.listed, o.children, o.stat.Pzxid, o.stat.Czxid, r.data != nil, r.chld != nil, r.exst != nil, busy[p], recheck[p])
		}
		ov.nodes[p] = o
		delete(busy, p)
		if o.exists {
			ov.note(&o.stat)
		} else if p == e.root && e.root != "/" {
			queue = append(queue, job{path: parentOf(e.root), aux: true})
		}
		if recheck[p] {
			// A listing named it while this read was in flight: the
			// read may be the older of the two.
			delete(recheck, p)
			if !ov.existsNow(p) {
				delete(seen, p)
				queue = append(queue, r.job)
			}
		}
		if !o.listed || r.job.depth >= e.maxDepth {
			continue
		}
		for _, name := range o.children {
			cp := joinPath(p, name)
			switch {
			case busy[cp]:
				// Its read is in flight, and its result (perhaps older
				// than this listing: results are taken in the order the
				// reading goroutines deliver them, not the order of the
				// replies) will replace what the overlay says now.
				recheck[cp] = true
				continue
			case ov.existsNow(cp):
				continue // read, and found
			case seen[cp]:
				// Read in this fetch and found missing, but the listing
				// names it: created again meanwhile, or the read came
				// first. Read it again (with one-shot watches nothing
				// else would: the listing set the parent's child watch
				// after the creation).
				delete(seen, cp)
			case !r.job.full && ov.nodes[cp] == nil && e.store.peek(cp) != nil:
				continue // cached, and not read in this settle: its own watches cover it
			}
			if tracing {
				trace(e, "  child %s of %s: read", cp, p)
			}
			queue = append(queue, job{path: cp, depth: r.job.depth + 1, full: r.job.full})
		}
	}
}

// read performs one job on conn (in its own goroutine).
func (e *engine) read(ctx context.Context, conn *zk.Conn, j job) result {
	r := result{job: j}
	if j.aux {
		st, err := conn.Exists(ctx, j.path)
		if err != nil {
			r.err = err
		}
		r.aux = st
		return r
	}
	o := &obs{}
	r.obs = o
	var (
		data []byte
		st   *zk.Stat
		err  error
	)
	switch {
	case j.watchExist:
		st, r.exst, err = conn.ExistsW(ctx, j.path)
		if err == nil && st == nil {
			return r // missing; the exist watch waits for it
		}
		if err == nil {
			r.exstFound = true
			// It appeared: the watch set is a data watch now. Read the
			// data (the watch fires if it changed meanwhile).
			data, st, err = conn.Get(ctx, j.path)
		}
	case j.watchData:
		data, st, r.data, err = conn.GetW(ctx, j.path)
	default:
		data, st, err = conn.Get(ctx, j.path)
	}
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return r
		}
		if isConnErr(err) {
			r.err = err
		} else {
			o.err = err
		}
		return r
	}
	o.exists, o.data, o.stat = true, data, *st
	// With the persistent watch only a read of the whole subtree lists
	// children (the watch reports every creation); one-shot watches list
	// every node, to keep a child watch on it (which also keeps
	// numChildren current).
	list := e.shots != nil || (j.full && j.depth < e.maxDepth && st.NumChildren > 0)
	if !list {
		return r
	}
	var children []string
	var st2 *zk.Stat
	if j.watchChild {
		children, st2, r.chld, err = conn.ChildrenW(ctx, j.path)
	} else {
		children, st2, err = conn.Children(ctx, j.path)
	}
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			o.exists = false // deleted between the two reads
			return r
		}
		if isConnErr(err) {
			r.err = err
		} else {
			o.err = err
		}
		return r
	}
	o.listed, o.children = true, children
	if st2.Mzxid == st.Mzxid {
		o.stat = *st2 // the later Stat: newer child fields, same data
	}
	return r
}
