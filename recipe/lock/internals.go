package lock

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/internal/link"
	"github.com/zkgo/zkgo/recipe/internal/turn"
	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/zk"
)

// Option configures a lock. It is recipe.Option: the settings every recipe
// shares (recipe.WithACL, recipe.WithPolicy) apply, and the options of this
// package are recipe.Options too; a lock ignores the options of other
// recipe packages.
type Option = recipe.Option

type options struct {
	data     []byte
	acl      []zk.ACL
	policy   recipe.Policy
	onRevoke func()
}

// WithData sets the data stored in the lock node (Curator stores the
// client's address by default; zkgo stores nothing unless told).
func WithData(data []byte) Option { return recipe.Extend(func(o *options) { o.data = data }) }

// WithACL sets the ACL of the lock nodes (default: open). It is
// recipe.WithACL.
func WithACL(acl []zk.ACL) Option { return recipe.WithACL(acl) }

// WithPolicy sets the error policy that decides when a held lock counts as
// lost (default recipe.Strict). It is recipe.WithPolicy.
func WithPolicy(p recipe.Policy) Option { return recipe.WithPolicy(p) }

// WithRevocation makes the lock revocable, as Curator's makeRevocable: fn is
// called (on a recipe goroutine) when another process asks the holder to
// release it with AttemptRevoke. fn should arrange for Unlock to be called.
// Revocable lock nodes carry no data, as with Curator.
func WithRevocation(fn func()) Option { return recipe.Extend(func(o *options) { o.onRevoke = fn }) }

func buildOptions(opts []Option) options {
	ro := recipe.Build(opts)
	o := options{acl: ro.ACL, policy: ro.Policy}
	recipe.ApplyExtensions(ro, &o)
	return o
}

// internals is the acquire/release machinery shared by the locks (Curator's
// LockInternals).
type internals struct {
	src       zk.Sessions
	base      string
	lockName  string
	sortNames []string
	decide    recipeutil.Decide
	opts      options
}

// acquire creates our node and waits (or, with wait false, checks once) for
// our turn. It returns (nil, nil) when wait is false and the lock is taken.
func (in *internals) acquire(ctx context.Context, wait bool) (*recipe.Grant, error) {
	data := in.opts.data
	if in.opts.onRevoke != nil {
		data = nil
	}
	for attempt := 0; ; attempt++ {
		// Each attempt runs in one session: the current one.
		conn := in.src.Current()
		path, st, listed, err := turn.CreateNodeListed(ctx, conn, in.base, in.lockName, data, in.opts.acl)
		if err != nil {
			return nil, err
		}
		ours := path[len(in.base)+1:]
		var ok bool
		var early chan link.Read
		if wait {
			// Our node is read (with the watch the grant keeps) while we
			// wait: when the turn comes, the grant starts at once, not a
			// round trip later — that round trip was on every handoff's
			// path from one holder to the next. If the turn comes first
			// (the list that came with the create puts us first), the
			// grant does not wait for the read either.
			early = make(chan link.Read, 1)
			go func() {
				var r link.Read
				r.Data, _, r.Ev, r.Err = conn.GetW(ctx, path)
				early <- r
			}()
			// Every decide of this package is monotone (FirstN(1), the
			// read-write lock's).
			err = turn.WaitTurnMonotone(ctx, conn, in.base, in.sortNames, ours, in.decide, listed)
			ok = err == nil
		} else {
			ok, err = turn.CheckTurnListed(ctx, conn, in.base, in.sortNames, ours, in.decide, listed)
		}
		if err == nil && ok {
			var hold recipeutil.HoldOptions
			hold.Policy = in.opts.policy
			if fn := in.opts.onRevoke; fn != nil {
				hold.OnData = func(d []byte) {
					if bytes.Equal(d, recipe.RevokeMessage) {
						fn()
					}
				}
			}
			var g *recipe.Grant
			var herr error
			if early != nil {
				g, herr = holdRead(ctx, conn, path, st.Czxid, hold.Policy, hold.OnData, early)
			} else {
				g, herr = recipeutil.Hold(ctx, conn, path, st.Czxid, hold)
			}
			if herr == nil {
				return g, nil
			}
			err = herr
		}
		// Not ours (try-lock), cancelled, or failed: never leave the node.
		derr := recipeutil.DeleteNode(ctx, conn, path)
		if err == nil {
			return nil, derr
		}
		// Our node vanished while the session lives (someone deleted it):
		// start over, as Curator does, a bounded number of times.
		if (errors.Is(err, recipe.ErrNodeMissing) || errors.Is(err, recipe.ErrNodeDeleted)) && attempt < 3 && ctx.Err() == nil {
			continue
		}
		return nil, err
	}
}

var holdRead = link.HoldRead.(func(context.Context, *zk.Conn, string, int64, recipe.Policy, func([]byte), <-chan link.Read) (*recipe.Grant, error))

// release gives the grant back and deletes its node.
func (in *internals) release(ctx context.Context, g *recipe.Grant) error {
	g.Release()
	// The current session's: if the grant's session has ended since, its
	// node went with it and the delete finds nothing.
	return recipeutil.DeleteNode(ctx, in.src.Current(), g.Path())
}

// Mutex is a reentrant distributed mutex (Curator's InterProcessMutex).
// Its methods are safe for concurrent use, but the Mutex is one holder:
// Lock on a Mutex that holds the lock just counts up.
type Mutex struct {
	in internals

	acq chan struct{} // one acquisition at a time

	mu    sync.Mutex // guards grant and count
	grant *recipe.Grant
	count int
}

// NewMutex returns a mutex on path (its nodes are "<path>/..lock-<seq>").
// src is a *zk.Conn or a *zk.Redialer: each Lock runs in the session
// current at the time.
func NewMutex(src zk.Sessions, path string, opts ...Option) *Mutex {
	return newMutex(src, path, "lock-", []string{"lock-"}, recipeutil.FirstN(1), buildOptions(opts))
}

func newMutex(src zk.Sessions, path, lockName string, sortNames []string, decide recipeutil.Decide, o options) *Mutex {
	return &Mutex{
		in:  internals{src: src, base: path, lockName: lockName, sortNames: sortNames, decide: decide, opts: o},
		acq: make(chan struct{}, 1),
	}
}

// Lock acquires the mutex, waiting as long as ctx allows. If this Mutex
// already holds it, Lock counts up and returns the same Grant (or the
// grant's error if it was lost meanwhile). A Lock that fails or is
// cancelled leaves no node behind.
func (m *Mutex) Lock(ctx context.Context) (*recipe.Grant, error) {
	g, _, err := m.lock(ctx, true)
	return g, err
}

// TryLock acquires the mutex only if it is free now. ok is false if it is
// held by someone else.
func (m *Mutex) TryLock(ctx context.Context) (g *recipe.Grant, ok bool, err error) {
	return m.lock(ctx, false)
}

func (m *Mutex) reenter() (*recipe.Grant, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.grant == nil {
		return nil, false, nil
	}
	if err := m.grant.Err(); err != nil {
		return nil, true, err
	}
	m.count++
	return m.grant, true, nil
}

func (m *Mutex) lock(ctx context.Context, wait bool) (*recipe.Grant, bool, error) {
	if g, held, err := m.reenter(); held {
		return g, err == nil, err
	}
	select {
	case m.acq <- struct{}{}:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	defer func() { <-m.acq }()
	if g, held, err := m.reenter(); held {
		return g, err == nil, err
	}
	g, err := m.in.acquire(ctx, wait)
	if err != nil || g == nil {
		return nil, false, err
	}
	m.mu.Lock()
	m.grant, m.count = g, 1
	m.mu.Unlock()
	return g, true, nil
}

// Unlock releases one Lock; the last one deletes the node. It returns
// ErrNotHeld if this Mutex does not hold the lock. Unlocking a lock that
// was lost (Grant().Done() closed) still cleans up and returns nil.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.mu.Lock()
	if m.grant == nil {
		m.mu.Unlock()
		return recipe.ErrNotHeld
	}
	m.count--
	if m.count > 0 {
		m.mu.Unlock()
		return nil
	}
	g := m.grant
	m.grant = nil
	m.mu.Unlock()
	return m.in.release(ctx, g)
}

// Grant returns the current grant, or nil if this Mutex does not hold the
// lock.
func (m *Mutex) Grant() *recipe.Grant {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.grant
}

// IsHeld reports whether this Mutex holds the lock and has not lost it.
func (m *Mutex) IsHeld() bool {
	g := m.Grant()
	return g != nil && g.Held()
}

// Participants returns the lock's queue: the holder first, then the
// waiters in order.
func (m *Mutex) Participants(ctx context.Context) ([]recipe.Participant, error) {
	return recipeutil.Participants(ctx, m.in.src.Current(), m.in.base, m.in.sortNames, nil)
}

// AttemptRevoke asks the holder of the lock node at nodePath to release it,
// as Curator's Revoker does (it writes "__REVOKE__" into the node). Only
// holders that made their lock revocable react.
func AttemptRevoke(ctx context.Context, src zk.Sessions, nodePath string) error {
	_, err := src.Current().Set(ctx, nodePath, recipe.RevokeMessage, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}
