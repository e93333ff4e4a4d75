package recipe

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/zkgo/zkgo/recipe/internal/link"
	"github.com/zkgo/zkgo/recipe/internal/turn"
	"github.com/zkgo/zkgo/zk"
)

// Errors that say why a Grant was lost.
var (
	// ErrSuspended: the connection was suspended under the Strict policy.
	ErrSuspended = errors.New("recipe: connection suspended (strict policy)")
	// ErrNodeDeleted: the node carrying the grant was deleted.
	ErrNodeDeleted = errors.New("recipe: the grant's node was deleted")
	// ErrReleased: the grant was given back by its holder.
	ErrReleased = errors.New("recipe: released")
)

// Errors of recipe operations.
var (
	// ErrNotHeld: Unlock (or a release) of something not held.
	ErrNotHeld = errors.New("recipe: not held")
	// ErrClosed: the recipe was closed.
	ErrClosed = errors.New("recipe: closed")
	// ErrNodeMissing: our own sequential node vanished while we waited
	// (the session ended, or someone deleted it).
	ErrNodeMissing = turn.ErrNodeMissing
)

// Policy decides which connection states end a grant.
type Policy int

const (
	// Strict: a suspended connection ends the grant (Curator's default,
	// StandardConnectionStateErrorPolicy). The safe choice: the holder
	// stops before the server could give the grant to someone else.
	Strict Policy = iota
	// Session: only the end of the session ends the grant
	// (SessionConnectionStateErrorPolicy). The grant survives short
	// disconnections, at the risk that the holder keeps working while the
	// session is, unknown to it, already expired.
	Session
)

// String returns "strict" or "session".
func (p Policy) String() string {
	if p == Session {
		return "session"
	}
	return "strict"
}

// Ends reports whether state s ends a grant under the policy, and the error
// that says why.
func (p Policy) Ends(s zk.State) (bool, error) {
	switch s {
	case zk.StateLost:
		return true, zk.ErrSessionExpired
	case zk.StateClosed:
		return true, zk.ErrClosing
	case zk.StateSuspended:
		if p == Strict {
			return true, ErrSuspended
		}
	}
	return false, nil
}

// RevokeMessage is the data Curator writes into a lock node to ask its
// holder to release it ("__REVOKE__").
var RevokeMessage = []byte("__REVOKE__")

// Grant is something held: a lock, a lease or leadership. Its methods are
// safe for concurrent use.
type Grant struct {
	conn   *zk.Conn
	path   string
	token  int64
	policy Policy
	epoch  uint64 // conn.Suspensions() when the grant began

	done     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	monDone  chan struct{}

	mu  sync.Mutex // guards err
	err error
}

// HoldOptions configure Hold.
//
// Deprecated: Use recipeutil.HoldOptions (a HoldOptions converts to it).
type HoldOptions struct {
	// Policy decides which connection states end the grant.
	Policy Policy
	// OnData, if set, is called (on the grant's own goroutine) with the
	// node's data when it changes.
	OnData func(data []byte)
}

// Hold starts watching the node at path and returns a Grant for it.
//
// Deprecated: Use recipeutil.Hold.
func Hold(ctx context.Context, conn *zk.Conn, path string, czxid int64, opts HoldOptions) (*Grant, error) {
	return hold(ctx, conn, path, czxid, opts.Policy, opts.OnData)
}

func init() {
	link.Hold = hold
	link.HoldRead = holdRead
}

// hold is recipeutil.Hold, which documents it.
func hold(ctx context.Context, conn *zk.Conn, path string, czxid int64, policy Policy, onData func([]byte)) (*Grant, error) {
	g := &Grant{conn: conn, path: path, token: czxid, policy: policy,
		done: make(chan struct{}), stop: make(chan struct{}), monDone: make(chan struct{})}
	states, unsub := conn.NotifyState()
	g.epoch = conn.Suspensions()
	// Subscribe before reading the node, so no transition after the read
	// can be missed; a loss that happened before is seen in State().
	data, _, ev, err := conn.GetW(ctx, path)
	for zk.IsRetryable(err) && ctx.Err() == nil {
		data, _, ev, err = conn.GetW(ctx, path)
	}
	if err != nil {
		unsub()
		if errors.Is(err, zk.ErrNoNode) {
			return nil, ErrNodeDeleted
		}
		return nil, err
	}
	if end, why := policy.Ends(conn.State()); end {
		unsub()
		return nil, why
	}
	if policy == Strict && conn.Suspensions() != g.epoch {
		unsub()
		return nil, ErrSuspended
	}
	if onData != nil && len(data) > 0 {
		onData(data)
	}
	go g.monitor(states, unsub, ev, nil, policy, onData)
	return g, nil
}

// holdRead is hold for a node whose read with a watch was started
// earlier (early delivers it, once): a lock's waiter reads its own node
// while it waits for its turn, so the grant starts without another round
// trip once the turn comes. What happened to the node since the read is
// in its watch (the monitor acts on it: a deletion ends the grant, a
// change of data is read again); the connection's state and suspensions
// are taken from now, as hold does.
//
// If the read is back, a deletion it already saw is ErrNodeDeleted (the
// client fires watches in the order the notifications came, so a
// deletion that preceded the one that gave us the turn is in its watch
// already): a grant is never handed out for a node known gone. If the
// read is not back yet (the turn came with the create's reply), the
// grant starts now and its monitor takes the read when it comes: a
// deletion it then finds ends the grant, as one just after would.
func holdRead(ctx context.Context, conn *zk.Conn, path string, czxid int64, policy Policy, onData func([]byte), early <-chan link.Read) (*Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var pending <-chan link.Read
	var r link.Read
	select {
	case r = <-early:
	default:
		pending = early
	}
	ev := r.Ev
	if pending == nil {
		if r.Err != nil {
			// The read failed (the connection, or ctx): read again, as
			// hold does.
			return hold(ctx, conn, path, czxid, policy, onData)
		}
		select {
		case e, ok := <-ev:
			switch {
			case !ok:
				ev = nil
			case e.Type == zk.EventNodeDeleted:
				return nil, ErrNodeDeleted
			case e.Type == zk.EventNotWatching:
				return nil, e.Err
			default:
				again := make(chan zk.Event, 1)
				again <- e
				ev = again
			}
		default:
		}
	}
	g := &Grant{conn: conn, path: path, token: czxid, policy: policy,
		done: make(chan struct{}), stop: make(chan struct{}), monDone: make(chan struct{})}
	states, unsub := conn.NotifyState()
	g.epoch = conn.Suspensions()
	if end, why := policy.Ends(conn.State()); end {
		unsub()
		return nil, why
	}
	if pending == nil && onData != nil && len(r.Data) > 0 {
		onData(r.Data)
	}
	go g.monitor(states, unsub, ev, pending, policy, onData)
	return g, nil
}

// monitor ends the grant on what ends it: Release, the connection's
// state, the node's deletion (a watch's event on ev). pending, if not
// nil, delivers the node's first read with its watch (holdRead): until
// then ev is nil.
func (g *Grant) monitor(states <-chan zk.State, unsub func(), ev <-chan zk.Event, pending <-chan link.Read, policy Policy, onData func([]byte)) {
	defer close(g.monDone)
	defer unsub()
	rearmed := make(chan (<-chan zk.Event), 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// reread reads the node again with a watch, off this goroutine; its
	// watch (or a deletion) comes back on rearmed.
	reread := func() {
		go func() {
			for {
				data, _, ch, err := g.conn.GetW(ctx, g.path)
				if err == nil {
					if onData != nil {
						onData(data)
					}
					rearmed <- ch
					return
				}
				if errors.Is(err, zk.ErrNoNode) {
					ch := make(chan zk.Event, 1)
					ch <- zk.Event{Type: zk.EventNodeDeleted, Path: g.path}
					rearmed <- ch
					return
				}
				// A connection lost under the Session policy (the grant
				// lives on): read again on the next one, which GetW
				// waits for. Other errors: the session or the Conn
				// ended, or the monitor did, which it learns otherwise.
				if !zk.IsRetryable(err) {
					return
				}
				select {
				case <-time.After(10 * time.Millisecond):
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	for {
		select {
		case r := <-pending:
			pending = nil
			switch {
			case r.Err == nil:
				if onData != nil && len(r.Data) > 0 {
					onData(r.Data)
				}
				ev = r.Ev
			case errors.Is(r.Err, zk.ErrNoNode):
				g.end(ErrNodeDeleted)
				return
			default:
				// The read failed (the connection, or its ctx ended
				// after the grant began): read again.
				reread()
			}
		case <-g.stop:
			g.end(ErrReleased)
			return
		case s, ok := <-states:
			if !ok {
				g.end(zk.ErrClosing)
				return
			}
			if end, why := policy.Ends(s); end {
				g.end(why)
				return
			}
		case e, ok := <-ev:
			if !ok {
				ev = nil
				continue
			}
			switch e.Type {
			case zk.EventNodeDeleted:
				g.end(ErrNodeDeleted)
				return
			case zk.EventNotWatching:
				g.end(e.Err)
				return
			case zk.EventNodeDataChanged:
				ev = nil
				reread()
			}
		case ch := <-rearmed:
			ev = ch
		}
	}
}

func (g *Grant) end(err error) {
	g.mu.Lock()
	if g.err == nil {
		g.err = err
		close(g.done)
	}
	g.mu.Unlock()
}

// Path returns the path of the node that carries the grant.
func (g *Grant) Path() string { return g.path }

// Token returns the fencing token: the node's creation zxid. It is larger
// than the token of every earlier grant of the same lock or election.
func (g *Grant) Token() int64 { return g.token }

// Done returns a channel that is closed when the grant is lost or released.
func (g *Grant) Done() <-chan struct{} { return g.done }

// Err returns nil while the grant is held, and afterwards why it ended
// (ErrReleased, ErrSuspended, ErrNodeDeleted, zk.ErrSessionExpired,
// zk.ErrClosing).
func (g *Grant) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// Held reports whether the grant is still held, as far as this process
// knows. It also consults the Conn's current state, so it turns false the
// moment the connection is suspended (Strict policy), even before Done is
// closed.
func (g *Grant) Held() bool {
	if g.Err() != nil {
		return false
	}
	if g.policy == Strict && g.conn.Suspensions() != g.epoch {
		return false // suspended since, even if reconnected already
	}
	end, _ := g.policy.Ends(g.conn.State())
	return !end
}

// Guard returns a check operation on the grant's node: put it first in a
// Multi and the multi fails (with ErrNoNode for that op) once the node is
// gone, so a write made by a holder that lost its grant without noticing
// (a long pause, a partition) cannot land.
func (g *Grant) Guard() zk.Op { return zk.CheckOp(g.path, -1) }

// GuardedMulti runs ops in a Multi behind Guard. If the guard fails, it
// returns an error wrapping ErrNodeDeleted (and the zk error).
func (g *Grant) GuardedMulti(ctx context.Context, ops ...zk.Op) ([]zk.OpResult, error) {
	all := make([]zk.Op, 0, len(ops)+1)
	all = append(all, g.Guard())
	all = append(all, ops...)
	res, err := g.conn.Multi(ctx, all...)
	if err != nil && len(res) > 0 && res[0].Err != nil {
		return nil, errors.Join(ErrNodeDeleted, res[0].Err)
	}
	if len(res) > 0 {
		res = res[1:]
	}
	return res, err
}

// Release ends the grant (Err becomes ErrReleased unless it was already
// lost) and stops watching; it does not delete the node. It is safe to call
// more than once.
func (g *Grant) Release() {
	g.stopOnce.Do(func() { close(g.stop) })
	<-g.monDone
}
