package node

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/zk"
)

// Option configures a PersistentNode (and the nodes of the other types of
// this package). It is recipe.Option: of the settings every recipe shares,
// the nodes use the ACL (recipe.WithACL); the others, and the options of
// other recipe packages, are ignored.
type Option = recipe.Option

type options struct {
	acl       []zk.ACL
	protected bool
	ttl       time.Duration
}

// WithACL sets the node's ACL (default zk.OpenACLUnsafe). It is
// recipe.WithACL.
func WithACL(acl []zk.ACL) Option { return recipe.WithACL(acl) }

// WithProtection gives the node Curator's protected name:
// parent/_c_<uuid>-<name>[seq]. A create whose reply is lost with the
// connection is then found by its prefix instead of being created twice.
// Use it with the sequential modes, whose names cannot be known otherwise.
func WithProtection() Option { return recipe.Extend(func(o *options) { o.protected = true }) }

// WithTTL sets the time to live of a node created in one of the TTL modes
// (zk.ModePersistentWithTTL, zk.ModePersistentSequentialWithTTL; the
// server must enable extended types).
func WithTTL(d time.Duration) Option { return recipe.Extend(func(o *options) { o.ttl = d }) }

func buildOptions(opts []Option) options {
	ro := recipe.Build(opts)
	o := options{acl: ro.ACL}
	recipe.ApplyExtensions(ro, &o)
	if o.acl == nil {
		o.acl = zk.OpenACLUnsafe
	}
	return o
}

// PersistentNode is Curator's PersistentNode: a node that stays in
// ZooKeeper, holding the latest data given to it, for as long as it is not
// closed. Whatever removes it — a deletion by another client, the end of
// the session for an ephemeral node — it is created again, with the
// current data, on the next connection. One goroutine per node owns its
// state; the methods may be called from any goroutine.
//
// The path it is created at is Path: the given path for the plain modes,
// with a sequence number for the sequential modes (a new one each time it
// is created again), and with the "_c_<uuid>-" prefix in front of its name
// under WithProtection. Missing parents are created as containers.
type PersistentNode struct {
	src  zk.Sessions
	base string
	mode zk.CreateMode
	opts options

	setc chan setReq
	stop chan struct{} // closed by Close
	done chan struct{} // closed when run returns
	once sync.Once     // closes stop

	created chan struct{} // closed the first time the node exists

	// mu guards path, data and err (copies of the owner goroutine's
	// state for the accessors).
	mu   sync.Mutex // guards path, data, err
	path string
	data []byte
	err  error
}

type setReq struct {
	data []byte
	done chan error // receives once: nil when the node holds data
}

// ErrClosed is returned by the methods of a node that was closed.
var ErrClosed = errors.New("node: closed")

// New starts keeping a node at path with data and mode (zk.ModeEphemeral,
// zk.ModeEphemeralSequential, zk.ModePersistent,
// zk.ModePersistentSequential, zk.ModeContainer or a TTL mode with
// WithTTL). src is a *zk.Conn (the node is kept while that session lives)
// or a *zk.Redialer (the node is created again in each new session).
// Creation happens in the background: WaitCreated waits for it.
func New(src zk.Sessions, path string, mode zk.CreateMode, data []byte, opts ...Option) *PersistentNode {
	o := buildOptions(opts)
	n := &PersistentNode{
		src: src, base: path, mode: mode, opts: o,
		setc:    make(chan setReq),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		created: make(chan struct{}),
		data:    slices.Clone(data),
	}
	go n.run(slices.Clone(data))
	return n
}

// WaitCreated waits until the node has been created once and returns its
// path at that time. It fails if the node stops first (Err) or ctx ends.
func (n *PersistentNode) WaitCreated(ctx context.Context) (string, error) {
	select {
	case <-n.created:
		return n.Path(), nil
	case <-n.done:
		return "", n.Err()
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Path returns the node's path as last created or confirmed, or "" before
// the first creation. It is kept while the connection is suspended and
// while the node is being created again (it may then name a node that is
// gone: a sequential node gets a new path).
func (n *PersistentNode) Path() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.path
}

// Data returns a copy of the data the node is to hold.
func (n *PersistentNode) Data() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.data)
}

// Done is closed when the node is no longer kept: it was closed, or its
// Sessions has no more sessions (a *zk.Conn whose session ended). Err then
// says why.
func (n *PersistentNode) Done() <-chan struct{} { return n.done }

// Err returns why the node is no longer kept (ErrClosed, or the session's
// error such as zk.ErrSessionExpired), or nil while it is.
func (n *PersistentNode) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// SetData changes the data the node holds, and waits until the node holds
// it (a setData on the node, or its creation with that data). A later
// creation after a loss uses the latest data. If ctx ends first, the data
// is still written once the connection allows.
func (n *PersistentNode) SetData(ctx context.Context, data []byte) error {
	req := setReq{data: slices.Clone(data), done: make(chan error, 1)}
	select {
	case n.setc <- req:
	case <-n.done:
		return n.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops keeping the node and deletes it (a guaranteed delete on the
// current session: if its outcome is unknown it continues in the
// background, see zk.Conn.PendingDeletes). It returns the delete's error
// other than zk.ErrNoNode and unknown outcomes.
func (n *PersistentNode) Close(ctx context.Context) error {
	path := n.shutdown()
	if path == "" {
		return nil
	}
	err := n.src.DeleteGuaranteed(ctx, path, zk.AnyVersion)
	if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrConnectionLoss) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing) || ctx.Err() != nil {
		return nil
	}
	return err
}

// shutdown stops the owner goroutine and returns the node's last path.
func (n *PersistentNode) shutdown() string {
	n.once.Do(func() { close(n.stop) })
	<-n.done
	return n.Path()
}

func (n *PersistentNode) setPath(p string) {
	n.mu.Lock()
	n.path = p
	n.mu.Unlock()
}

// keeper is the owner goroutine's state.
type keeper struct {
	n       *PersistentNode
	ctx     context.Context // canceled when stop closes
	path    string          // the node's path, "" when it must be created anew
	data    []byte
	seq     int // the number of SetData calls taken
	waiters []waiter
}

type waiter struct {
	seq  int
	done chan error
}

func (n *PersistentNode) run(data []byte) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-n.stop:
		case <-n.done:
		}
		cancel()
	}()
	k := &keeper{n: n, ctx: ctx, data: data}
	err := ErrClosed
	conn := n.src.Current()
	for {
		if !k.serve(conn) {
			break
		}
		next, nerr := n.src.Next(ctx, conn)
		if nerr != nil {
			if ctx.Err() == nil {
				err = nerr
			}
			break
		}
		conn = next
		if n.mode.IsSequential() || n.opts.protected {
			k.path = "" // the old session's node name is not ours to reuse
		}
	}
	n.mu.Lock()
	n.err = err
	n.mu.Unlock()
	for _, w := range k.waiters {
		w.done <- err
	}
	close(n.done)
}

// serve keeps the node on conn. It returns true when conn's session ended
// (so the next session should take over) and false when the node is
// closed.
func (k *keeper) serve(conn *zk.Conn) bool {
	var watch <-chan zk.Event
	need := true
	pause := 10 * time.Millisecond
	var retry <-chan time.Time
	for {
		if need {
			ev, err := k.ensure(conn)
			switch {
			case err == nil:
				need, watch, retry, pause = false, ev, nil, 10*time.Millisecond
				k.wrote()
			case k.ctx.Err() != nil:
				return false
			case errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing):
				return true
			default:
				// A connection loss (the Conn reconnects by itself) or a
				// refusal such as ErrNoAuth: try again later.
				need, retry = false, time.After(pause)
				pause = min(2*pause, 2*time.Second)
			}
		}
		select {
		case ev := <-watch:
			watch = nil
			if ev.Type == zk.EventNotWatching {
				return k.ctx.Err() == nil
			}
			need = true // deleted or changed: look again
		case req := <-k.n.setc:
			k.seq++
			k.data = req.data
			k.waiters = append(k.waiters, waiter{seq: k.seq, done: req.done})
			k.n.mu.Lock()
			k.n.data = slices.Clone(req.data)
			k.n.mu.Unlock()
			need = true
		case <-retry:
			need = true
		case <-k.ctx.Done():
			return false
		}
	}
}

// wrote completes the SetData calls whose data the node now holds.
func (k *keeper) wrote() {
	k.waiters = slices.DeleteFunc(k.waiters, func(w waiter) bool {
		if w.seq <= k.seq {
			w.done <- nil
			return true
		}
		return false
	})
}

// ensure makes the node exist with the current data and returns a data
// watch on it.
func (k *keeper) ensure(conn *zk.Conn) (<-chan zk.Event, error) {
	for range 10 {
		if k.path != "" {
			data, _, ev, err := conn.GetW(k.ctx, k.path)
			if err == nil {
				if bytes.Equal(data, k.data) {
					k.confirm()
					return ev, nil
				}
				// Someone else's data, or our SetData: write ours (the
				// watch set above then fires, and we look again).
				if _, err := conn.Set(k.ctx, k.path, k.data, zk.AnyVersion); err != nil && !errors.Is(err, zk.ErrNoNode) {
					return nil, err
				}
				continue
			}
			if !errors.Is(err, zk.ErrNoNode) {
				return nil, err
			}
			if k.n.mode.IsSequential() || k.n.opts.protected {
				k.path = ""
			}
		}
		p, err := k.create(conn)
		if errors.Is(err, zk.ErrNodeExists) {
			p, err = k.n.base, nil // a plain name someone holds: take it over
		}
		if err != nil {
			return nil, err
		}
		k.path = p
	}
	return nil, errors.New("node: the node keeps changing under us")
}

// confirm publishes the path and, the first time, signals the creation.
func (k *keeper) confirm() {
	k.n.setPath(k.path)
	select {
	case <-k.n.created:
	default:
		close(k.n.created)
	}
}

// create creates the node, and its missing parents as containers.
func (k *keeper) create(conn *zk.Conn) (string, error) {
	var copts []zk.CreateOption
	if k.n.opts.ttl > 0 {
		copts = append(copts, zk.WithTTLDuration(k.n.opts.ttl))
	}
	do := func() (string, error) {
		if k.n.opts.protected {
			p, _, err := conn.CreateProtected(k.ctx, k.n.base, k.data, k.n.opts.acl, k.n.mode, copts...)
			return p, err
		}
		return conn.Create(k.ctx, k.n.base, k.data, k.n.opts.acl, k.n.mode, copts...)
	}
	p, err := do()
	if errors.Is(err, zk.ErrNoNode) {
		parent := k.n.base[:strings.LastIndexByte(k.n.base, '/')]
		if parent != "" {
			if err := conn.EnsurePath(k.ctx, parent, zk.OpenACLUnsafe, zk.AsContainers()); err != nil {
				return "", err
			}
		}
		p, err = do()
	}
	return p, err
}
