package node

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// TouchName is the name of a TTLNode's child that is touched.
const TouchName = "touch"

// TTLNode is Curator's PersistentTtlNode: a container node at path, kept
// by a PersistentNode (so it holds the given data and comes back if
// deleted), with a child "touch" created with a TTL and touched (set
// again) every TTL/2 while the TTLNode runs. Once the TTLNode is closed,
// or its process dies, nobody touches the child: the server deletes it
// when its TTL has elapsed without a change, and then deletes the empty
// container. The server must enable extended types (TTL nodes).
//
// While the connection is suspended nothing is touched; the TTL should be
// well above the session timeout so that a reconnection in time touches
// the child before it expires. After a session expiry, with a
// *zk.Redialer, the touching continues on the next session.
type TTLNode struct {
	node   *PersistentNode
	src    zk.Sessions
	ttl    time.Duration
	child  string
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	opts   options
	touchN touchCount
}

// touchCount counts successful touches (for Touches).
type touchCount struct {
	mu sync.Mutex // guards n
	n  int
}

// NewTTL starts keeping the container node at path with data and its
// touched child with time to live ttl.
func NewTTL(src zk.Sessions, path string, data []byte, ttl time.Duration, opts ...Option) *TTLNode {
	o := buildOptions(opts)
	t := &TTLNode{
		node:  New(src, path, zk.ModeContainer, data, opts...),
		src:   src,
		ttl:   ttl,
		child: path + "/" + TouchName,
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		opts:  o,
	}
	go t.run()
	return t
}

// Node returns the PersistentNode that keeps the container (for SetData,
// Data, WaitCreated).
func (t *TTLNode) Node() *PersistentNode { return t.node }

// Touches returns how many times the child has been created or set.
func (t *TTLNode) Touches() int {
	t.touchN.mu.Lock()
	defer t.touchN.mu.Unlock()
	return t.touchN.n
}

// Close stops touching the child and keeping the container, without
// deleting them: the child expires after its TTL and the server then
// removes the container (as Curator's PersistentTtlNode documents).
func (t *TTLNode) Close() {
	t.once.Do(func() { close(t.stop) })
	<-t.done
	t.node.shutdown()
}

func (t *TTLNode) run() {
	defer close(t.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-t.stop:
		case <-t.done:
		}
		cancel()
	}()
	if _, err := t.node.WaitCreated(ctx); err != nil {
		return
	}
	period := max(t.ttl/2, time.Millisecond)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		t.touch(ctx)
		select {
		case <-tick.C:
		case <-t.node.Done():
			return
		case <-ctx.Done():
			return
		}
	}
}

// touch creates the child with its TTL, or sets it if it exists
// (Curator's create().orSetData().withTtl()). A container that is gone
// is left to the PersistentNode to create again.
func (t *TTLNode) touch(ctx context.Context) {
	conn := t.src.Current()
	_, err := conn.Create(ctx, t.child, nil, t.opts.acl, zk.ModePersistentWithTTL, zk.WithTTLDuration(t.ttl))
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = conn.Set(ctx, t.child, nil, zk.AnyVersion)
	}
	if err == nil {
		t.touchN.mu.Lock()
		t.touchN.n++
		t.touchN.mu.Unlock()
	}
}
