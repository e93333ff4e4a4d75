package leader

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/internal/link"
	"github.com/zkgo/zkgo/recipe/internal/turn"
	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/zk"
)

const latchName = "latch-"

// CloseMode says whether Close reports the loss of leadership to the
// latch's listeners (Curator's LeaderLatch.CloseMode).
type CloseMode int

const (
	// Silent: Close sends no event.
	Silent CloseMode = iota
	// NotifyLeader: if the latch leads, Close sends a not-leader event.
	NotifyLeader
)

// Option configures a Latch, Selector or Election. It is recipe.Option:
// the settings every recipe shares (recipe.WithACL, recipe.WithPolicy)
// apply; the options of other recipe packages are ignored.
type Option = recipe.Option

type options struct {
	policy      recipe.Policy
	acl         []zk.ACL
	closeMode   CloseMode
	autoRequeue bool
}

// WithPolicy sets the error policy (default recipe.Strict). It is
// recipe.WithPolicy.
func WithPolicy(p recipe.Policy) Option { return recipe.WithPolicy(p) }

// WithACL sets the ACL of the election nodes (default: open). It is
// recipe.WithACL.
func WithACL(acl []zk.ACL) Option { return recipe.WithACL(acl) }

// WithCloseMode sets the Latch's close mode (default Silent).
func WithCloseMode(m CloseMode) Option {
	return recipe.Extend(func(o *options) { o.closeMode = m })
}

// WithAutoRequeue makes a Selector rejoin the queue each time its function
// returns (Curator's autoRequeue).
func WithAutoRequeue() Option { return recipe.Extend(func(o *options) { o.autoRequeue = true }) }

func buildOptions(opts []Option) options {
	ro := recipe.Build(opts)
	o := options{policy: ro.Policy, acl: ro.ACL}
	recipe.ApplyExtensions(ro, &o)
	return o
}

// LatchEvent reports a change of leadership.
type LatchEvent struct {
	// Leader is true when the latch became leader (isLeader), false when it
	// stopped leading (notLeader).
	Leader bool
	// Grant is the leadership (when Leader), or the one that ended.
	Grant *recipe.Grant
}

// ErrLatchState is returned by Start on a latch that was already started or
// closed.
var ErrLatchState = errors.New("leader: latch already started or closed")

// Latch is a participant in a leader election (Curator's LeaderLatch).
type Latch struct {
	src  zk.Sessions
	path string
	id   string
	opts options

	mu       sync.Mutex // guards the fields below
	started  bool
	closed   bool
	grant    *recipe.Grant // current leadership, or nil
	changed  chan struct{} // closed and replaced on every change of grant
	failed   error         // the latch stopped for good (session lost)
	ourPath  string
	events   *recipeutil.Stream[LatchEvent]
	cancel   context.CancelFunc
	loopDone chan struct{}
}

// NewLatch returns a latch for the election at path; id is stored in its
// node (and shown by Participants).
func NewLatch(src zk.Sessions, path, id string, opts ...Option) *Latch {
	return &Latch{src: src, path: path, id: id, opts: buildOptions(opts), changed: make(chan struct{})}
}

// ID returns the latch's id.
func (l *Latch) ID() string { return l.id }

// Start joins the election in the background.
func (l *Latch) Start() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.closed {
		return ErrLatchState
	}
	l.started = true
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.loopDone = make(chan struct{})
	go l.run(ctx)
	return nil
}

// Events returns the stream of leadership changes. Receive until it is
// closed (after Close).
func (l *Latch) Events() <-chan LatchEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.events == nil {
		l.events = recipeutil.NewStream[LatchEvent]()
		if l.closed {
			l.events.Close()
		}
	}
	return l.events.C()
}

// HasLeadership reports whether the latch leads now.
func (l *Latch) HasLeadership() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.grant != nil && l.grant.Held()
}

// Grant returns the current leadership, or nil.
func (l *Latch) Grant() *recipe.Grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.grant
}

// Await waits until the latch leads and returns the leadership. It fails
// with ctx's error, ErrClosed once the latch is closed, or the session's
// error once the latch can no longer lead.
func (l *Latch) Await(ctx context.Context) (*recipe.Grant, error) {
	for {
		l.mu.Lock()
		g, ch, closed, failed := l.grant, l.changed, l.closed, l.failed
		l.mu.Unlock()
		switch {
		case closed:
			return nil, recipe.ErrClosed
		case failed != nil:
			return nil, failed
		case g != nil && g.Held():
			return g, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Participants returns the election's participants in order; the first is
// the leader.
func (l *Latch) Participants(ctx context.Context) ([]recipe.Participant, error) {
	return recipeutil.Participants(ctx, l.src.Current(), l.path, []string{latchName}, nil)
}

// Leader returns the current leader (ok false if there is none).
func (l *Latch) Leader(ctx context.Context) (p recipe.Participant, ok bool, err error) {
	ps, err := l.Participants(ctx)
	if err != nil || len(ps) == 0 {
		return recipe.Participant{}, false, err
	}
	return ps[0], true, nil
}

// Close leaves the election: it deletes the latch's node (so the next
// participant leads) and stops. With NotifyLeader a leading latch sends a
// final not-leader event. The Events channel is then closed.
func (l *Latch) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	cancel, done := l.cancel, l.loopDone
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	l.mu.Lock()
	g, p := l.grant, l.ourPath
	l.grant, l.ourPath = nil, ""
	l.signalLocked()
	ev := l.events
	l.mu.Unlock()
	if g != nil {
		g.Release()
		if l.opts.closeMode == NotifyLeader && ev != nil {
			ev.Send(LatchEvent{Leader: false, Grant: g})
		}
	}
	var err error
	if p != "" {
		err = recipeutil.DeleteNode(ctx, l.src.Current(), p)
	}
	if ev != nil {
		ev.Close()
	}
	return err
}

func (l *Latch) signalLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Latch) setGrant(g *recipe.Grant) {
	l.mu.Lock()
	old := l.grant
	l.grant = g
	l.signalLocked()
	ev := l.events
	l.mu.Unlock()
	if ev == nil {
		return
	}
	if g != nil {
		ev.Send(LatchEvent{Leader: true, Grant: g})
	} else if old != nil {
		ev.Send(LatchEvent{Leader: false, Grant: old})
	}
}

func (l *Latch) fail(err error) {
	l.mu.Lock()
	l.failed = err
	l.signalLocked()
	l.mu.Unlock()
}

// permanent reports whether err means the Conn can no longer take part.
func permanent(err error) bool {
	return errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrAuthFailed)
}

// run is the latch's one goroutine: it owns the node and the leadership.
// It takes part in one session after the other, as long as src has a next
// one (a *zk.Redialer does; a *zk.Conn does not).
func (l *Latch) run(ctx context.Context) {
	defer close(l.loopDone)
	conn := l.src.Current()
	for {
		l.runSession(ctx, conn)
		if ctx.Err() != nil {
			return
		}
		next, err := l.src.Next(ctx, conn)
		if err != nil {
			return
		}
		l.mu.Lock()
		l.failed, l.ourPath = nil, ""
		l.mu.Unlock()
		conn = next
	}
}

// nextSession waits for the session that follows conn's in src; false if
// there is none (src is a *zk.Conn, or closed) or ctx ends first.
func nextSession(ctx context.Context, src zk.Sessions, conn *zk.Conn) bool {
	_, err := src.Next(ctx, conn)
	return err == nil
}

// runSession takes part in the election in conn's session, until the
// session ends, a permanent error, or ctx ends.
func (l *Latch) runSession(ctx context.Context, conn *zk.Conn) {
	states, stop := conn.NotifyState()
	defer stop()
	var czxid int64
	retry := func(err error) bool {
		if ctx.Err() != nil {
			return false
		}
		if permanent(err) {
			l.fail(err)
			return false
		}
		// Transient (connection loss): pause briefly, then look again.
		t := time.NewTimer(50 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// listed, when not nil, is the list to decide on instead of listing
	// the children: the one that came with our create, or, after the
	// node we waited for went, the list we had without it (every node
	// created since sorts after ours, so if that list puts us first, the
	// real one does: leadership passes as the deletion's event arrives,
	// a round trip sooner than Curator's LeaderLatch, which lists again).
	// early is our node's read with its watch, started while we wait, so
	// that taking the leadership costs no round trip either.
	var listed []string
	var early chan link.Read
	for ctx.Err() == nil {
		l.mu.Lock()
		ours := l.ourPath
		l.mu.Unlock()
		if ours == "" {
			early = nil
			p, st, kids, err := turn.CreateNodeListed(ctx, conn, l.path, latchName, []byte(l.id), l.opts.acl)
			if err != nil {
				if retry(err) {
					continue
				}
				return
			}
			l.mu.Lock()
			l.ourPath, ours, czxid = p, p, st.Czxid
			l.mu.Unlock()
			listed = kids
		}
		children := listed
		listed = nil
		if children == nil {
			var err error
			children, _, err = conn.Children(ctx, l.path)
			if err != nil {
				if retry(err) {
					continue
				}
				return
			}
		}
		recipeutil.SortNodes(children, latchName)
		name := ours[len(l.path)+1:]
		i := slices.Index(children, name)
		if i < 0 {
			// Our node is gone (deleted by someone): join again.
			l.mu.Lock()
			l.ourPath = ""
			l.mu.Unlock()
			continue
		}
		if i == 0 {
			var g *recipe.Grant
			var err error
			if early != nil {
				g, err = holdRead(ctx, conn, ours, czxid, l.opts.policy, nil, early)
				early = nil
			} else {
				g, err = recipeutil.Hold(ctx, conn, ours, czxid, recipeutil.HoldOptions{Policy: l.opts.policy})
			}
			if err != nil {
				if errors.Is(err, recipe.ErrNodeDeleted) {
					l.mu.Lock()
					l.ourPath = ""
					l.mu.Unlock()
					continue
				}
				if errors.Is(err, recipe.ErrSuspended) {
					if !waitReconnected(ctx, states) {
						l.failIfLost(conn)
						return
					}
					continue
				}
				if retry(err) {
					continue
				}
				return
			}
			l.setGrant(g)
			select {
			case <-g.Done():
			case <-ctx.Done():
				return // Close releases the grant
			}
			l.setGrant(nil)
			switch why := g.Err(); {
			case errors.Is(why, recipe.ErrNodeDeleted):
				l.mu.Lock()
				l.ourPath = ""
				l.mu.Unlock()
			case errors.Is(why, recipe.ErrSuspended):
				// Strict policy: leadership ended with the connection;
				// look again once it is back (the node survives if the
				// session does).
				if !waitReconnected(ctx, states) {
					l.failIfLost(conn)
					return
				}
			case permanent(why):
				l.fail(why)
				return
			}
			continue
		}
		if early == nil {
			early = make(chan link.Read, 1)
			go func(ch chan<- link.Read) {
				var r link.Read
				r.Data, _, r.Ev, r.Err = conn.GetW(ctx, ours)
				ch <- r
			}(early)
		}
		// Wait for the node just ahead of ours.
		pred := children[i-1]
		without := func() []string { return slices.DeleteFunc(children, func(n string) bool { return n == pred }) }
		_, _, ev, err := conn.GetW(ctx, l.path+"/"+pred)
		if errors.Is(err, zk.ErrNoNode) {
			listed = without()
			continue
		}
		if err != nil {
			if retry(err) {
				continue
			}
			return
		}
		select {
		case e := <-ev:
			if e.Type == zk.EventNotWatching {
				l.fail(e.Err)
				return
			}
			if e.Type == zk.EventNodeDeleted {
				listed = without()
			}
		case <-ctx.Done():
			return
		}
	}
}

var holdRead = link.HoldRead.(func(context.Context, *zk.Conn, string, int64, recipe.Policy, func([]byte), <-chan link.Read) (*recipe.Grant, error))

// failIfLost records the session's end if that is why waiting stopped.
func (l *Latch) failIfLost(conn *zk.Conn) {
	if s := conn.State(); s == zk.StateLost || s == zk.StateClosed {
		l.fail(zk.ErrSessionExpired)
	}
}

// waitReconnected waits for the connection to come back; false if the
// session ended or ctx is done.
func waitReconnected(ctx context.Context, states <-chan zk.State) bool {
	for {
		select {
		case s, ok := <-states:
			if !ok {
				return false
			}
			switch s {
			case zk.StateConnected, zk.StateReconnected:
				return true
			case zk.StateLost, zk.StateClosed:
				return false
			}
		case <-ctx.Done():
			return false
		}
	}
}
