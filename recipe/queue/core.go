package queue

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/zk"
)

// Errors of the queues.
var (
	// ErrUnknownOutcome: a put lost its connection before its reply; the
	// item may or may not be in the queue. The error also wraps
	// zk.ErrConnectionLoss.
	ErrUnknownOutcome = errors.New("queue: outcome of the put unknown (connection lost before its reply)")
	// ErrTooLarge: the encoded item exceeds the node size limit.
	ErrTooLarge = errors.New("queue: item too large")
	// ErrNotLockSafe: Requeue or Release on a queue without a lock path
	// (the item was removed when it was taken).
	ErrNotLockSafe = errors.New("queue: not lock-safe (no lock path)")
	// ErrLockLost: the item's lock node is gone (the session ended, or it
	// was deleted): another consumer may have the item now.
	ErrLockLost = errors.New("queue: the item's lock is gone")
	// ErrItemGone: the item was removed by someone else while this
	// consumer held its lock (IDQueue.Remove without a lock path, or a
	// hand-made delete).
	ErrItemGone = errors.New("queue: the item is gone")
	// ErrFinished: Ack, Requeue or Release on a Message already finished.
	ErrFinished = errors.New("queue: message already acked, requeued or released")
)

// ErrorMode says what Consume does with an item whose function failed
// (Curator's ErrorMode). It matters only with a lock path.
type ErrorMode int

const (
	// Requeue puts the item back at the end of its ordering class (the
	// default, as Curator's REQUEUE).
	Requeue ErrorMode = iota
	// Delete removes the item anyway (Curator's DELETE).
	Delete
)

// DefaultMaxNodeBytes is the default limit on the encoded size of one item
// node: ZooKeeper's default jute.maxbuffer (1 MiB) less room for the rest
// of the create request.
const DefaultMaxNodeBytes = 1<<20 - 4096

// Option configures a queue. It is recipe.Option: the settings every
// recipe shares (recipe.WithACL, recipe.WithPolicy) apply; the options of
// other recipe packages are ignored.
type Option = recipe.Option

type options struct {
	lockPath  string
	maxItems  int
	errorMode ErrorMode
	acl       []zk.ACL
	policy    recipe.Policy
	maxBytes  int
}

// WithLockPath makes consumption lock-safe (Curator's lockPath): a
// consumer takes an item by creating the ephemeral node
// "<lockPath>/<item name>", and the item is removed only when it is acked
// (or requeued). If the consumer's session ends first, the lock node goes
// with it and the item is taken again by another consumer. Every consumer
// of the queue, Go or Java, must use the same lock path.
func WithLockPath(p string) Option { return recipe.Extend(func(o *options) { o.lockPath = p }) }

// WithMaxItems bounds the queue (Curator's maxItems): a put waits while
// the queue node has n or more children. Producers do not coordinate, so
// concurrent puts can overshoot the bound a little, as with Curator.
func WithMaxItems(n int) Option { return recipe.Extend(func(o *options) { o.maxItems = n }) }

// WithErrorMode sets what Consume does when its function fails (default
// Requeue). Without a lock path the item is gone already and the mode has
// no effect.
func WithErrorMode(m ErrorMode) Option { return recipe.Extend(func(o *options) { o.errorMode = m }) }

// WithACL sets the ACL of the nodes created (default: open). It is
// recipe.WithACL.
func WithACL(acl []zk.ACL) Option { return recipe.WithACL(acl) }

// WithPolicy sets when a taken message's Grant counts as lost (default
// recipe.Strict: already when the connection is suspended). It is
// recipe.WithPolicy.
func WithPolicy(p recipe.Policy) Option { return recipe.WithPolicy(p) }

// WithMaxNodeBytes sets the limit on an encoded item node (default
// DefaultMaxNodeBytes); puts above it fail with ErrTooLarge.
func WithMaxNodeBytes(n int) Option { return recipe.Extend(func(o *options) { o.maxBytes = n }) }

func buildOptions(opts []Option) options {
	ro := recipe.Build(opts)
	o := options{maxBytes: DefaultMaxNodeBytes, acl: ro.ACL, policy: ro.Policy}
	recipe.ApplyExtensions(ro, &o)
	if o.acl == nil {
		o.acl = zk.OpenACLUnsafe
	}
	return o
}

// core is what the four queues share: putting, taking, consuming.
type core struct {
	src  zk.Sessions
	path string
	kind kind
	opts options
}

// conn returns the Conn of the current session.
func (q *core) conn() *zk.Conn { return q.src.Current() }

func newCore(src zk.Sessions, path string, k kind, opts []Option) core {
	return core{src: src, path: path, kind: k, opts: buildOptions(opts)}
}

func (q *core) lockSafe() bool { return q.opts.lockPath != "" }

// put creates one item node "<path>/queue-<infix><seq>" carrying values.
func (q *core) put(ctx context.Context, infix string, values [][]byte) error {
	if len(values) == 0 {
		return errors.New("queue: nothing to put")
	}
	data := Encode(values)
	if len(data) > q.opts.maxBytes {
		return fmt.Errorf("%w: %d bytes encoded, limit %d", ErrTooLarge, len(data), q.opts.maxBytes)
	}
	if err := q.waitRoom(ctx); err != nil {
		return err
	}
	p := q.path + "/" + itemPrefix + infix
	for attempt := 0; ; attempt++ {
		_, err := q.conn().Create(ctx, p, data, q.opts.acl, zk.ModePersistentSequential)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode) && attempt < 3:
			if err := q.ensure(ctx, q.path); err != nil {
				return err
			}
		case errors.Is(err, zk.ErrConnectionLoss):
			// A sequential create may have landed under a name we
			// cannot know: repeating it could put the item twice.
			return fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
		default:
			return err
		}
	}
}

// ensure creates a queue or lock node (persistent, its missing parents as
// containers), as Curator's DistributedQueue.start does.
func (q *core) ensure(ctx context.Context, p string) error {
	for {
		_, err := q.conn().CreateAll(ctx, p, nil, q.opts.acl, zk.ModePersistent, zk.AsContainers())
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		if !errors.Is(err, zk.ErrConnectionLoss) {
			return err
		}
	}
}

// waitRoom waits while a bounded queue is full.
func (q *core) waitRoom(ctx context.Context) error {
	if q.opts.maxItems <= 0 {
		return nil
	}
	for {
		children, _, ev, err := q.conn().ChildrenW(ctx, q.path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue
		case err != nil:
			return err
		case len(children) < q.opts.maxItems:
			return nil
		}
		select {
		case e := <-ev:
			if e.Type == zk.EventNotWatching {
				return e.Err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// length counts the items.
func (q *core) length(ctx context.Context) (int, error) {
	for {
		children, _, err := q.conn().Children(ctx, q.path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return 0, nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue
		case err != nil:
			return 0, err
		}
		return len(sortItems(q.kind, children)), nil
	}
}

// take returns the first item that is due and not locked by another
// consumer. With wait false it returns (nil, nil) when there is none.
func (q *core) take(ctx context.Context, wait bool) (*Message, error) {
	for {
		children, _, ev, err := q.conn().ChildrenW(ctx, q.path)
		if errors.Is(err, zk.ErrNoNode) {
			var st *zk.Stat
			st, ev, err = q.conn().ExistsW(ctx, q.path)
			if err == nil && st != nil {
				continue // created meanwhile
			}
		}
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err != nil {
			return nil, err
		}
		now := time.Now()
		var next time.Time  // the earliest due time still ahead
		var locked []string // items skipped for their locks
		for _, name := range sortItems(q.kind, children) {
			if q.kind == delay {
				if due := DueTime(name); due.After(now) {
					if next.IsZero() || due.Before(next) {
						next = due
					}
					continue
				}
			}
			m, held, err := q.claim(ctx, name)
			if err != nil || m != nil {
				return m, err
			}
			if held {
				locked = append(locked, name)
			}
		}
		if !wait {
			return nil, nil
		}
		var lockEv <-chan zk.Event
		if len(locked) > 0 {
			// Wake when a lock goes: its holder may have died without
			// finishing the item. A lock that went before this watch
			// was set fires nothing: look at the locks it returns, and
			// try again at once if one of those skipped is gone.
			var locks []string
			locks, _, lockEv, err = q.conn().ChildrenW(ctx, q.opts.lockPath)
			if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrConnectionLoss) {
				return nil, err
			}
			if errors.Is(err, zk.ErrNoNode) || err == nil && slices.ContainsFunc(locked, func(name string) bool { return !slices.Contains(locks, name) }) {
				continue
			}
		}
		var timer *time.Timer
		var fire <-chan time.Time
		if !next.IsZero() {
			timer = time.NewTimer(time.Until(next))
			fire = timer.C
		}
		var werr error
		select {
		case e := <-ev:
			if e.Type == zk.EventNotWatching {
				werr = e.Err
			}
		case e := <-lockEv:
			if e.Type == zk.EventNotWatching {
				werr = e.Err
			}
		case <-fire:
		case <-ctx.Done():
			werr = ctx.Err()
		}
		if timer != nil {
			timer.Stop()
		}
		if werr != nil {
			return nil, werr
		}
	}
}

// claim tries to take the item name. It returns (nil, held, nil) when the
// item is no longer there or (held true) another consumer holds its lock.
func (q *core) claim(ctx context.Context, name string) (*Message, bool, error) {
	if q.lockSafe() {
		return q.claimLocked(ctx, name)
	}
	itemPath := q.path + "/" + name
	for {
		data, st, err := q.conn().Get(ctx, itemPath)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, false, nil
		}
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		err = q.conn().Delete(ctx, itemPath, st.Version)
		if errors.Is(err, zk.ErrConnectionLoss) {
			// Did our delete land? If the item is still there it did
			// not; if it is gone, someone's did. It is counted as
			// someone else's (at most once), as Curator does.
			continue
		}
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		values, derr := Decode(data)
		if derr != nil {
			return nil, false, fmt.Errorf("item %s dropped: %w", name, derr)
		}
		return &Message{Name: name, Values: values, q: q, data: data}, false, nil
	}
}

func (q *core) claimLocked(ctx context.Context, name string) (*Message, bool, error) {
	lockNode := q.opts.lockPath + "/" + name
	// The lock node carries a random token, so that a create whose reply
	// was lost can be told from a lock this session already holds for
	// another Message.
	var tok [16]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, false, err
	}
	token := []byte(hex.EncodeToString(tok[:]))
	var czxid int64
	lost := false
	for attempt := 0; ; attempt++ {
		_, st, err := q.conn().Create2(ctx, lockNode, token, q.opts.acl, zk.ModeEphemeral)
		if err == nil {
			czxid = st.Czxid
			break
		}
		switch {
		case errors.Is(err, zk.ErrNoNode) && attempt < 3:
			if err := q.ensure(ctx, q.opts.lockPath); err != nil {
				return nil, false, err
			}
			continue
		case errors.Is(err, zk.ErrConnectionLoss):
			lost = true
			continue
		case errors.Is(err, zk.ErrNodeExists):
			if !lost {
				return nil, true, nil // another consumer's
			}
			data, st, err := q.conn().Get(ctx, lockNode)
			if errors.Is(err, zk.ErrConnectionLoss) || errors.Is(err, zk.ErrNoNode) {
				continue // try again (a lock released meanwhile is free)
			}
			if err != nil {
				return nil, false, err
			}
			if !bytes.Equal(data, token) {
				return nil, true, nil
			}
			czxid = st.Czxid // ours: the lost create had landed
		default:
			return nil, false, err
		}
		break
	}
	itemPath := q.path + "/" + name
	for {
		data, _, err := q.conn().Get(ctx, itemPath)
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if errors.Is(err, zk.ErrNoNode) {
			// Finished by the consumer that held the lock before us.
			return nil, false, recipeutil.DeleteNode(ctx, q.conn(), lockNode)
		}
		if err != nil {
			recipeutil.DeleteNode(ctx, q.conn(), lockNode)
			return nil, false, err
		}
		m := &Message{Name: name, q: q, data: data, lockNode: lockNode}
		values, derr := Decode(data)
		if derr != nil {
			// Curator drops a corrupt item too.
			m.Ack(ctx)
			return nil, false, fmt.Errorf("item %s dropped: %w", name, derr)
		}
		m.Values = values
		g, err := recipeutil.Hold(ctx, q.conn(), lockNode, czxid, recipeutil.HoldOptions{Policy: q.opts.policy})
		if err != nil {
			if errors.Is(err, recipe.ErrNodeDeleted) {
				return nil, false, nil
			}
			if errors.Is(err, recipe.ErrSuspended) {
				// The lock may still be ours; give it up and look
				// again once reconnected.
				recipeutil.DeleteNode(ctx, q.conn(), lockNode)
				return nil, false, nil
			}
			return nil, false, err
		}
		m.grant = g
		return m, false, nil
	}
}

// consume runs fn on every value of every item, until ctx is done or the
// session ends.
func (q *core) consume(ctx context.Context, fn func(ctx context.Context, value []byte) error) error {
	for {
		m, err := q.take(ctx, true)
		if errors.Is(err, ErrCorrupt) {
			continue // dropped, as Curator does
		}
		if err != nil {
			return err
		}
		// fn's context ends when the item's lock may be lost.
		fctx, cancel := context.WithCancel(ctx)
		if g := m.Grant(); g != nil {
			go func() {
				select {
				case <-g.Done():
					cancel()
				case <-fctx.Done():
				}
			}()
		}
		failed := false
		for _, v := range m.Values {
			if err := fn(fctx, v); err != nil && q.opts.errorMode == Requeue && q.lockSafe() {
				failed = true
				break
			}
		}
		cancel()
		if failed {
			err = m.Requeue(ctx)
		} else {
			err = m.Ack(ctx)
		}
		if err != nil && (ctx.Err() != nil || permanent(err)) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	}
}

// permanent reports whether err means the Conn can no longer take part.
func permanent(err error) bool {
	return errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrAuthFailed)
}

// Message is one taken item node: the values it carries (one, or several
// when put with PutMulti) and, with a lock path, the lock that keeps other
// consumers off it until it is acked, requeued or released.
type Message struct {
	// Name is the item node's name, e.g. "queue-0000000007".
	Name string
	// Values are the item's values, in the order they were put.
	Values [][]byte

	q        *core
	data     []byte
	lockNode string // "" without a lock path
	grant    *recipe.Grant

	mu       sync.Mutex // guards finished
	finished bool
}

// Grant returns the lock on the item (nil without a lock path): its Done
// channel closes when the lock may be lost, after which another consumer
// may take the item; its Token is a fencing token.
func (m *Message) Grant() *recipe.Grant { return m.grant }

func (m *Message) finish() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished {
		return ErrFinished
	}
	m.finished = true
	return nil
}

// Ack removes the item: with a lock path it deletes the item and its lock
// node in one transaction, which fails with ErrLockLost if the lock is no
// longer this session's; without one the item was removed when taken and
// Ack does nothing.
func (m *Message) Ack(ctx context.Context) error {
	if err := m.finish(); err != nil {
		return err
	}
	if m.lockNode == "" {
		return nil
	}
	return m.transact(ctx, zk.DeleteOp(m.q.path+"/"+m.Name, zk.AnyVersion))
}

// Requeue puts the item back and removes the taken one, in one
// transaction with deleting the lock node: the new item has the same
// priority, due time or id and a new sequence number, so it is taken after
// those already waiting in its class. It needs a lock path.
func (m *Message) Requeue(ctx context.Context) error {
	if m.lockNode == "" {
		return ErrNotLockSafe
	}
	if err := m.finish(); err != nil {
		return err
	}
	return m.transact(ctx,
		zk.DeleteOp(m.q.path+"/"+m.Name, zk.AnyVersion),
		zk.CreateOp(m.q.path+"/"+requeueName(m.Name), m.data, m.q.opts.acl, zk.ModePersistentSequential))
}

// Release gives the item back untouched: it deletes only the lock node, so
// another consumer (or this one) can take it. It needs a lock path.
func (m *Message) Release(ctx context.Context) error {
	if m.lockNode == "" {
		return ErrNotLockSafe
	}
	if err := m.finish(); err != nil {
		return err
	}
	m.releaseGrant()
	return recipeutil.DeleteNode(ctx, m.q.conn(), m.lockNode)
}

// transact runs ops behind the deletion of our lock node. A transaction
// whose reply is lost is tried again; if the lock and the item are then
// both gone, the lost one was applied.
func (m *Message) transact(ctx context.Context, ops ...zk.Op) error {
	defer m.releaseGrant()
	itemPath := m.q.path + "/" + m.Name
	all := append([]zk.Op{zk.DeleteOp(m.lockNode, zk.AnyVersion)}, ops...)
	unknown := false
	for {
		res, err := m.q.conn().Multi(ctx, all...)
		if err == nil {
			return nil
		}
		if errors.Is(err, zk.ErrConnectionLoss) {
			unknown = true
			continue
		}
		if len(res) == 0 || !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if res[0].Err != nil { // our lock is gone
			if unknown {
				st, serr := m.q.conn().Exists(ctx, itemPath)
				if serr != nil {
					return serr
				}
				if st == nil {
					return nil // our lost transaction was applied
				}
			}
			return ErrLockLost
		}
		// The item is gone but our lock is not.
		derr := recipeutil.DeleteNode(ctx, m.q.conn(), m.lockNode)
		return errors.Join(ErrItemGone, derr)
	}
}

func (m *Message) releaseGrant() {
	if m.grant != nil {
		m.grant.Release()
	}
}
