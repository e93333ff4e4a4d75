package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/zk"
)

// kind is which of the three caches an engine serves.
type kind int

const (
	kindNode     kind = iota // the root alone, persistent watch
	kindChildren             // the root's children (root events not sent)
	kindTree                 // the subtree to maxDepth
)

// engine is what NodeCache, ChildrenCache and TreeCache share: one
// goroutine (run) owns the session, the watch and the reading; the cached
// state lives in store, which readers reach under its own lock.
//
// Lock order: engine.mu, then recipeutil.Stream's lock (send), or
// store.mu (finish clears the store under engine.mu); store.mu is a leaf.
type engine struct {
	// Set by newEngine, then read-only.
	root     string
	kind     kind
	maxDepth int
	opts     options
	store    *store
	ctx      context.Context // cancelled by Close
	cancel   context.CancelFunc
	initDone chan struct{} // closed by finish or once Initialized is sent
	done     chan struct{} // closed when run returns

	// mu guards the fields from events to initClosed.
	mu         sync.Mutex
	events     *recipeutil.Stream[Event] // nil until Events is called
	started    bool
	closed     bool  // Close was called
	finished   bool  // finish ran: nothing more is sent or served
	synced     bool  // Initialized or Resynced, and no Suspended or Lost since
	err        error // why the cache stopped; nil while it runs
	initClosed bool  // initDone is closed

	// Owned by run (Start sets conn, states and unsub before run starts);
	// conn is also written under mu, for currentConn.
	conn        *zk.Conn
	owned       bool        // conn came from redial: the cache closes it
	src         zk.Sessions // what the constructor was given
	states      <-chan zk.State
	unsub       func()
	watcher     *zk.Watcher // persistent mode; nil while not watching
	received    uint64      // events taken from watcher.Events()
	oneShot     bool        // one-shot watches (WithOneShotWatches or fallback)
	shots       *shots      // the one-shot watches (oneshot.go); nil in persistent mode
	initialized bool        // Initialized was sent
	suspended   bool        // Suspended was sent, and neither Resynced nor Lost since
	zxid        int64       // the zxid of the committed state
	// readWhole is conn.Suspensions() when the last whole read of the
	// subtree began: while it differs, the connection has broken since,
	// changes may have been missed, and only a whole read may commit.
	readWhole uint64
}

func newEngine(src zk.Sessions, root string, k kind, opts []Option) *engine {
	o := buildOptions(opts)
	e := &engine{root: root, kind: k, opts: o, src: src, conn: src.Current(), store: newStore(), oneShot: o.oneShot,
		initDone: make(chan struct{}), done: make(chan struct{})}
	switch k {
	case kindNode:
		e.maxDepth = 0
	case kindChildren:
		e.maxDepth = 1
	default:
		e.maxDepth = o.maxDepth
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e
}

// start runs the cache and waits for the initial snapshot.
func (e *engine) start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		e.close()
		return err
	}
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return ErrClosed
	case e.started:
		e.mu.Unlock()
		return ErrStarted
	}
	e.started = true
	e.mu.Unlock()
	e.states, e.unsub = e.conn.NotifyState()
	go e.run()
	select {
	case <-e.initDone:
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.initialized {
			return nil
		}
		return e.err
	case <-ctx.Done():
		e.close()
		return ctx.Err()
	}
}

// close stops the cache (Close).
func (e *engine) close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	started := e.started
	e.mu.Unlock()
	e.cancel()
	if started {
		<-e.done
	}
	e.finish(ErrClosed)
	return nil
}

// finish ends the cache for good: it records why, empties the store (a
// stopped cache serves nothing) and closes the event channel.
func (e *engine) finish(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.finished {
		return
	}
	e.finished = true
	e.synced = false
	if e.err == nil {
		e.err = err
	}
	e.store.clear()
	if e.events != nil {
		e.events.Close()
	}
	if !e.initClosed {
		e.initClosed = true
		close(e.initDone)
	}
}

func (e *engine) eventsChan() <-chan Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.events == nil {
		e.events = recipeutil.NewStream[Event]()
		if e.finished {
			e.events.Close()
		}
	}
	return e.events.C()
}

func (e *engine) send(ev Event) {
	e.mu.Lock()
	s := e.events
	e.mu.Unlock()
	if s != nil {
		s.Send(ev)
	}
}

func (e *engine) setSynced(b bool) {
	e.mu.Lock()
	e.synced = b
	e.mu.Unlock()
}

func (e *engine) isSynced() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.synced
}

// currentConn returns the Conn the cache uses now (tests).
func (e *engine) currentConn() *zk.Conn {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.conn
}

func (e *engine) errNow() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// errSuspended: the connection broke while the cache was reading; what
// it read is dropped and the subtree read again once it is back.
var errSuspended = errors.New("cache: connection suspended")

// errWatchEnded: the persistent watch ended (removed, or the session
// ended); the cache sets it again and reads the subtree again.
var errWatchEnded = errors.New("cache: watch ended")

// run is the cache's goroutine.
func (e *engine) run() {
	defer close(e.done)
	err := e.loop()
	e.release()
	if e.ctx.Err() == nil {
		e.send(Event{Type: Stopped, Err: err})
		e.finish(err)
	}
}

// release gives back what the cache holds on its Conn.
func (e *engine) release() {
	e.dropWatches()
	if e.unsub != nil {
		e.unsub()
		e.unsub = nil
	}
	if e.owned {
		e.conn.Close()
	}
}

// dropWatches ends the persistent watch and forgets the one-shot ones.
func (e *engine) dropWatches() {
	if e.watcher != nil {
		e.watcher.Close()
		e.watcher = nil
	}
	if e.shots != nil {
		e.shots.reset()
	}
}

// loop follows the subtree until the cache is closed (it returns
// ctx.Err()) or cannot go on (it returns why).
func (e *engine) loop() error {
	full := true // the subtree must be read whole
	for {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		if full {
			err := e.resync()
			if err == nil {
				full = false
				continue
			}
			if err := e.recover(err); err != nil {
				return err
			}
			continue
		}
		w := newWork()
		select {
		case ev, ok := <-e.watchEvents():
			if !ok {
				// The watch ended: the session did (the states say
				// which way) or someone removed it.
				e.watcher = nil
				full = true
				continue
			}
			e.received++
			if e.note(ev, w) {
				e.watcher = nil // set it again (or learn why not)
				full = true
				continue
			}
		case s := <-e.shotEvents():
			e.shots.note(e, s, w)
		case s, ok := <-e.states:
			if err := e.onState(s, ok, &full); err != nil {
				return err
			}
			continue
		case <-e.ctx.Done():
			return e.ctx.Err()
		}
		if w.empty() {
			continue
		}
		if e.conn.Suspensions() != e.readWhole {
			// The connection broke and came back before its state
			// change reached this loop (select picks among ready
			// channels at random): what changed meanwhile is unknown,
			// and committing these nodes first would report their
			// later changes before the earlier ones the whole read
			// finds.
			full = true
			continue
		}
		if err := e.settle(false, w); err != nil {
			if err := e.recover(err); err != nil {
				return err
			}
			full = true
		}
	}
}

func (e *engine) watchEvents() <-chan zk.Event {
	if e.watcher == nil {
		return nil
	}
	return e.watcher.Events()
}

func (e *engine) shotEvents() <-chan shot {
	if e.shots == nil {
		return nil
	}
	return e.shots.inbox.C()
}

// resync sets the watch if needed and reads the whole subtree.
func (e *engine) resync() error {
	if !e.oneShot && e.watcher == nil {
		mode := zk.AddWatchPersistentRecursive
		if e.kind == kindNode {
			mode = zk.AddWatchPersistent
		}
		w, err := e.conn.AddWatch(e.ctx, e.root, mode)
		switch {
		case err == nil:
			e.watcher, e.received = w, 0
		case errors.Is(err, zk.ErrUnimplemented):
			e.oneShot = true // ZooKeeper before 3.6: no persistent watches
		default:
			return err
		}
	}
	if e.oneShot && e.shots == nil {
		e.shots = newShots()
	}
	return e.settle(true, nil)
}

// onState handles a transition of the Conn. It returns an error when the
// cache must stop.
func (e *engine) onState(s zk.State, ok bool, full *bool) error {
	if tracing {
		trace(e, "state %v", s)
	}
	if !ok {
		return zk.ErrClosing // the Conn was closed (StateClosed came first)
	}
	switch s {
	case zk.StateSuspended:
		e.suspend()
	case zk.StateConnected, zk.StateReconnected, zk.StateReadOnly:
		*full = true
	case zk.StateLost:
		if err := e.lost(); err != nil {
			return err
		}
		*full = true
	case zk.StateClosed:
		return zk.ErrClosing
	}
	return nil
}

func (e *engine) suspend() {
	e.setSynced(false)
	if !e.suspended {
		e.suspended = true
		e.send(Event{Type: Suspended})
	}
}

// recover handles the failure of a read of the subtree: it waits for the
// connection to come back (nil: read the subtree again), rebuilds on a new
// session after an expiry (WithRedial), or says why the cache must stop.
func (e *engine) recover(err error) error {
	if e.ctx.Err() != nil {
		return e.ctx.Err()
	}
	if errors.Is(err, errWatchEnded) {
		return nil // setting the watch again says whether the session lives
	}
	if !isConnErr(err) && !errors.Is(err, errSuspended) {
		return err
	}
	// A finished Conn reports nothing more: look at its state first.
	switch e.conn.State() {
	case zk.StateLost:
		return e.lost()
	case zk.StateClosed:
		return zk.ErrClosing
	}
	for {
		select {
		case s, ok := <-e.states:
			full := false
			if err := e.onState(s, ok, &full); err != nil {
				return err
			}
			if full {
				return nil
			}
		case <-e.ctx.Done():
			return e.ctx.Err()
		}
	}
}

// isConnErr reports whether err is about the connection or the session
// rather than a node.
func isConnErr(err error) bool {
	return errors.Is(err, zk.ErrConnectionLoss) || errors.Is(err, zk.ErrSessionExpired) ||
		errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// lost handles the expiry of the session: Lost, then a new session from
// redial (nil) or the end of the cache (the error).
func (e *engine) lost() error {
	e.setSynced(false)
	e.suspended = false
	e.send(Event{Type: Lost, Err: zk.ErrSessionExpired})
	redial, owned := e.opts.redial, true
	if redial == nil {
		if _, plain := e.src.(*zk.Conn); plain {
			return zk.ErrSessionExpired
		}
		// A Redialer (or other Sessions): follow it to its next session;
		// its Conns stay its own.
		prev := e.conn
		redial, owned = func(ctx context.Context) (*zk.Conn, error) { return e.src.Next(ctx, prev) }, false
	}
	e.dropWatches()
	e.unsub()
	e.unsub = nil
	if e.owned {
		e.conn.Close()
	}
	policy := zk.ExponentialBackoff{Base: 50 * time.Millisecond, Max: 5 * time.Second}
	for n := 1; ; n++ {
		c, err := redial(e.ctx)
		if err == nil && c != nil {
			e.mu.Lock()
			e.conn, e.owned = c, owned
			e.mu.Unlock()
			e.states, e.unsub = c.NotifyState()
			return nil
		}
		if e.ctx.Err() != nil {
			return e.ctx.Err()
		}
		if err == nil {
			err = errors.New("redial returned no Conn")
		}
		e.send(Event{Type: Error, Err: fmt.Errorf("cache: redial: %w", err)})
		d, _ := policy.Next(n, 0)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-e.ctx.Done():
			t.Stop()
			return e.ctx.Err()
		}
	}
}

// note turns an event of the persistent watch into reads. It reports
// whether the watch ended.
func (e *engine) note(ev zk.Event, w *work) (ended bool) {
	switch ev.Type {
	case zk.EventNotWatching, zk.EventPersistentWatchRemoved:
		return true
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
	default:
		return false
	}
	if e.kind == kindNode {
		if ev.Path == e.root {
			w.add(e.root, 0)
		}
		return false
	}
	d := depthBelow(e.root, ev.Path)
	if d < 0 {
		return false
	}
	membership := ev.Type == zk.EventNodeCreated || ev.Type == zk.EventNodeDeleted
	if d <= e.maxDepth {
		w.add(ev.Path, d)
	}
	// A child created or deleted changes its parent's Stat (numChildren,
	// cversion, pzxid), and the parent read after a deletion bounds its
	// zxid.
	if membership && d >= 1 && d <= e.maxDepth+1 {
		w.add(parentOf(ev.Path), d-1)
	}
	return false
}
