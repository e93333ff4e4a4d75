package shared

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/zk"
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.30.0 -type=EventKind

// Errors of the shared values.
var (
	// ErrUnknownOutcome: a conditional write lost its connection before
	// its reply arrived; it may or may not have been applied. The error
	// also wraps zk.ErrConnectionLoss.
	ErrUnknownOutcome = errors.New("shared: outcome of the write unknown (connection lost before its reply)")
	// ErrCorrupt: the node's data does not decode (a Count needs at least
	// 4 bytes, an AtomicLong 0 or at least 8).
	ErrCorrupt = errors.New("shared: corrupt value")
	// ErrNotStarted: a Value or Count used before Start.
	ErrNotStarted = errors.New("shared: not started")
	// ErrStarted: Start called twice, or after Close.
	ErrStarted = errors.New("shared: already started or closed")
	// ErrUninitialized: TrySet with a Versioned value that was never read
	// from the node (Version -1; Curator's IllegalTrySetVersionException).
	ErrUninitialized = errors.New("shared: TrySet with a value never read from the node")
)

// unknownOutcome wraps the error of a conditional write that lost its
// connection.
func unknownOutcome(err error) error {
	return fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
}

// Option configures a Value, Count, AtomicValue or AtomicLong. It is
// recipe.Option: of the settings every recipe shares, these use the ACL
// (recipe.WithACL) and the retry policy (recipe.WithRetry); the others, and
// the options of other recipe packages, are ignored.
type Option = recipe.Option

type options struct {
	acl   []zk.ACL
	retry zk.RetryPolicy
	promo *promotion
}

// WithACL sets the ACL of the nodes created (default: open). It is
// recipe.WithACL.
func WithACL(acl []zk.ACL) Option { return recipe.WithACL(acl) }

func buildOptions(opts []Option) options {
	ro := recipe.Build(opts)
	o := options{acl: ro.ACL, retry: ro.Retry}
	recipe.ApplyExtensions(ro, &o)
	if o.retry == nil {
		o.retry = DefaultRetry
	}
	if o.acl == nil {
		o.acl = zk.OpenACLUnsafe
	}
	return o
}

// Versioned is a value together with the node version and modification
// zxid it was read at (Curator's VersionedValue). A Versioned that was
// never read from the node (the seed before Start) has Version and Zxid -1.
type Versioned[T any] struct {
	Value   T
	Version int32
	Zxid    int64
}

// EventKind says what an Event reports.
type EventKind int

const (
	// ValueChanged: the node holds a new value (Curator's valueHasChanged
	// and countHasChanged).
	ValueChanged EventKind = iota
	// StateChanged: the connection changed state (Curator's
	// stateChanged).
	StateChanged
)

// Event is a change of a shared value or of the connection.
type Event[T any] struct {
	Kind EventKind
	// Value is the value read (ValueChanged). When the data did not
	// decode, Err wraps ErrCorrupt and Value holds only the version and
	// zxid.
	Value Versioned[T]
	Err   error
	// State is the new connection state (StateChanged).
	State zk.State
}

// cell follows one node holding a T; Value and Count are cells. One
// goroutine (run) owns the watch; writers update cur directly.
type cell[T any] struct {
	conn   *zk.Conn
	path   string
	seed   []byte
	acl    []zk.ACL
	encode func(T) []byte
	decode func([]byte) (T, error)

	mu      sync.Mutex // guards the fields below
	cur     Versioned[T]
	started bool
	closed  bool
	stopErr error // why run stopped following the node
	events  *recipeutil.Stream[Event[T]]
	cancel  context.CancelFunc
	done    chan struct{}
}

func newCell[T any](conn *zk.Conn, path string, seed T, encode func(T) []byte, decode func([]byte) (T, error), o options) *cell[T] {
	return &cell[T]{conn: conn, path: path, seed: encode(seed), acl: o.acl, encode: encode, decode: decode,
		cur: Versioned[T]{Value: seed, Version: -1, Zxid: -1}}
}

func (c *cell[T]) start(ctx context.Context) error {
	c.mu.Lock()
	if c.started || c.closed {
		c.mu.Unlock()
		return ErrStarted
	}
	c.started = true
	c.mu.Unlock()
	for {
		_, err := c.conn.CreateAll(ctx, c.path, c.seed, c.acl, zk.ModePersistent, zk.AsContainers())
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			break
		}
		if !errors.Is(err, zk.ErrConnectionLoss) {
			return err
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	data, st, ev, err := c.read(ctx)
	if err != nil {
		cancel()
		return err
	}
	var last int64
	if st != nil {
		last = st.Mzxid
		if v, derr := c.decode(data); derr == nil {
			c.update(st.Mzxid, st.Version, v)
		}
	}
	c.mu.Lock()
	if c.closed { // closed while starting
		c.mu.Unlock()
		cancel()
		return recipe.ErrClosed
	}
	c.cancel, c.done = cancel, make(chan struct{})
	c.mu.Unlock()
	states, unsub := c.conn.NotifyState()
	go c.run(rctx, states, unsub, ev, last)
	return nil
}

// read reads the node with a data watch, or, when it is gone, sets an
// exists watch that fires when it is created again (data and st are then
// nil). Connection losses are retried.
func (c *cell[T]) read(ctx context.Context) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	for {
		data, st, ev, err := c.conn.GetW(ctx, c.path)
		if errors.Is(err, zk.ErrNoNode) {
			st, ev, err = c.conn.ExistsW(ctx, c.path)
			if err == nil && st != nil {
				continue // created meanwhile: read it
			}
			if err == nil {
				return nil, nil, ev, nil
			}
		}
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		return data, st, ev, err
	}
}

// update installs a value unless cur is already as new (Curator's
// updateValue: the zxid decides, versions wrap around).
func (c *cell[T]) update(zxid int64, version int32, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur.Zxid >= zxid {
		return
	}
	c.cur = Versioned[T]{Value: v, Version: version, Zxid: zxid}
}

func (c *cell[T]) send(e Event[T]) {
	c.mu.Lock()
	s := c.events
	c.mu.Unlock()
	if s != nil {
		s.Send(e)
	}
}

// run follows the node: a fired watch means read again (and report what
// was read, once per new zxid); connection states are reported as they
// come. It stops when the session or the Conn ends, or at Close.
func (c *cell[T]) run(ctx context.Context, states <-chan zk.State, unsub func(), ev <-chan zk.Event, last int64) {
	defer close(c.done)
	defer unsub()
	stop := func(err error) {
		c.mu.Lock()
		if c.stopErr == nil {
			c.stopErr = err
		}
		s := c.events
		c.mu.Unlock()
		if s != nil {
			s.Close()
		}
	}
	final := false // StateLost or StateClosed was reported
	for {
		select {
		case <-ctx.Done():
			stop(recipe.ErrClosed)
			return
		case s, ok := <-states:
			if !ok {
				stop(zk.ErrClosing)
				return
			}
			c.send(Event[T]{Kind: StateChanged, State: s})
			final = final || s == zk.StateLost || s == zk.StateClosed
		case e := <-ev:
			if e.Type == zk.EventNotWatching {
				if !final {
					c.finalStates(ctx, states)
				}
				stop(e.Err)
				return
			}
			data, st, nev, err := c.read(ctx)
			if err != nil {
				if ctx.Err() != nil {
					err = recipe.ErrClosed
				}
				stop(err)
				return
			}
			ev = nev
			if st == nil || st.Mzxid <= last {
				continue // deleted (now waiting for it), or nothing new
			}
			last = st.Mzxid
			v, derr := c.decode(data)
			if derr != nil {
				c.send(Event[T]{Kind: ValueChanged, Value: Versioned[T]{Version: st.Version, Zxid: st.Mzxid}, Err: derr})
				continue
			}
			c.update(st.Mzxid, st.Version, v)
			mine, _ := c.decode(data) // the receiver's own copy
			c.send(Event[T]{Kind: ValueChanged, Value: Versioned[T]{Value: mine, Version: st.Version, Zxid: st.Mzxid}})
		}
	}
}

// finalStates reports the connection states up to the one that ended the
// watch: the Conn queues StateLost before it ends the watches, and
// StateClosed right after, so the final state is not lost to select's
// choice between two ready channels.
func (c *cell[T]) finalStates(ctx context.Context, states <-chan zk.State) {
	for {
		select {
		case s, ok := <-states:
			if !ok {
				return
			}
			c.send(Event[T]{Kind: StateChanged, State: s})
			if s == zk.StateLost || s == zk.StateClosed {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func (c *cell[T]) versioned() Versioned[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

func (c *cell[T]) check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started || c.closed {
		return ErrNotStarted
	}
	return nil
}

func (c *cell[T]) set(ctx context.Context, v T) error {
	if err := c.check(); err != nil {
		return err
	}
	data := c.encode(v)
	for {
		st, err := c.conn.Set(ctx, c.path, data, zk.AnyVersion)
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue // an unconditional write may be repeated
		}
		if err != nil {
			return err
		}
		c.update(st.Mzxid, st.Version, v)
		return nil
	}
}

func (c *cell[T]) trySet(ctx context.Context, prev Versioned[T], v T) (bool, error) {
	if err := c.check(); err != nil {
		return false, err
	}
	cur := c.versioned()
	if prev.Zxid != cur.Zxid || !bytes.Equal(c.encode(prev.Value), c.encode(cur.Value)) {
		return false, nil
	}
	if prev.Version == -1 {
		return false, ErrUninitialized
	}
	st, err := c.conn.Set(ctx, c.path, c.encode(v), prev.Version)
	switch {
	case err == nil:
		c.update(st.Mzxid, st.Version, v)
		return true, nil
	case errors.Is(err, zk.ErrBadVersion):
		// Someone else wrote first: refresh, so the caller's next
		// Versioned is current (the watch would do it, later).
		return false, c.readOnce(ctx)
	case errors.Is(err, zk.ErrConnectionLoss):
		return false, unknownOutcome(err)
	default:
		return false, err
	}
}

// readOnce reads the node without a watch and updates cur.
func (c *cell[T]) readOnce(ctx context.Context) error {
	for {
		data, st, err := c.conn.Get(ctx, c.path)
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err != nil {
			return err
		}
		if v, derr := c.decode(data); derr == nil {
			c.update(st.Mzxid, st.Version, v)
		}
		return nil
	}
}

func (c *cell[T]) eventStream() <-chan Event[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.events == nil {
		c.events = recipeutil.NewStream[Event[T]]()
		if c.closed || c.stopErr != nil {
			c.events.Close()
		}
	}
	return c.events.C()
}

func (c *cell[T]) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopErr
}

func (c *cell[T]) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	cancel, done := c.cancel, c.done
	ev := c.events
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	} else if ev != nil {
		ev.Close()
	}
}

// Value is a byte value shared through a node (Curator's SharedValue).
// Its methods are safe for concurrent use.
type Value struct{ c *cell[[]byte] }

// NewValue returns the shared value at path; seed is written if the node
// does not exist when Start runs.
func NewValue(src zk.Sessions, path string, seed []byte, opts ...Option) *Value {
	o := buildOptions(opts)
	ident := func(b []byte) []byte { return b }
	dec := func(b []byte) ([]byte, error) { return bytes.Clone(b), nil }
	return &Value{c: newCell(src.Current(), path, bytes.Clone(seed), ident, dec, o)}
}

// Start creates the node with the seed value if it does not exist (its
// missing parents as containers), reads it and starts following it.
func (v *Value) Start(ctx context.Context) error { return v.c.start(ctx) }

// Get returns a copy of the latest value seen (the seed before Start).
func (v *Value) Get() []byte { return bytes.Clone(v.c.versioned().Value) }

// Versioned returns a copy of the latest value seen with its version and
// zxid, to pass to TrySet.
func (v *Value) Versioned() Versioned[[]byte] {
	cur := v.c.versioned()
	cur.Value = bytes.Clone(cur.Value)
	return cur
}

// Set writes data unconditionally.
func (v *Value) Set(ctx context.Context, data []byte) error { return v.c.set(ctx, bytes.Clone(data)) }

// TrySet writes data only if the node still holds prev (as read by
// Versioned): it reports false, without writing, when this Value has
// since seen a newer value, and false when the node changed since prev
// (then this Value reads the node again, so the next Versioned is
// current). It fails with ErrUninitialized for a prev never read from
// the node, and with ErrUnknownOutcome when the connection was lost
// before the reply.
func (v *Value) TrySet(ctx context.Context, prev Versioned[[]byte], data []byte) (bool, error) {
	return v.c.trySet(ctx, prev, bytes.Clone(data))
}

// Events returns the stream of changes: ValueChanged for each new value
// seen (also those this Value wrote), StateChanged for each connection
// state. It is unbounded and closed after Close or once the session ends;
// receive until it is closed.
func (v *Value) Events() <-chan Event[[]byte] { return v.c.eventStream() }

// Err returns why the Value stopped following its node (recipe.ErrClosed
// after Close, zk.ErrSessionExpired, zk.ErrClosing), or nil.
func (v *Value) Err() error { return v.c.err() }

// Close stops following the node and closes Events. The node stays.
func (v *Value) Close() error {
	v.c.close()
	return nil
}
