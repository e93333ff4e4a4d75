package cache

import (
	"context"
	"fmt"
	"strings"

	"github.com/zkgo/zkgo/zk"
)

// TreeCache keeps a subtree in memory (Curator's TreeCache and
// CuratorCache): the root (which need not exist) and its descendants, to
// WithMaxDepth levels. Its methods are safe for concurrent use.
type TreeCache struct{ e *engine }

// NewTree returns a cache of the subtree at path, read through src (a
// *zk.Conn, or a *zk.Redialer: the cache then follows it to each new
// session after an expiry, as with WithRedial). It
// does nothing until Start.
func NewTree(src zk.Sessions, path string, opts ...Option) *TreeCache {
	return &TreeCache{e: newEngine(src, path, kindTree, opts)}
}

// Start reads the subtree and returns once the initial snapshot is in
// the cache (Initialized has been sent) and the cache follows the
// changes, or with the error that stopped it. If ctx is done first, the
// cache is closed and ctx's error returned. Call Events before Start to
// receive the snapshot as Created events.
func (c *TreeCache) Start(ctx context.Context) error { return c.e.startChecked(ctx) }

// Events returns the channel of events (see EventType). It is created by
// the first call: a cache whose Events is never called keeps no events.
// The channel's queue is unbounded, so the cache never waits for the
// receiver; receive until it is closed (after Close, or after Stopped).
func (c *TreeCache) Events() <-chan Event { return c.e.eventsChan() }

// Get returns the cached node at path.
func (c *TreeCache) Get(path string) (Entry, bool) { return c.e.store.get(path) }

// Children returns the names of the cached children of path, sorted (nil
// if path is not cached).
func (c *TreeCache) Children(path string) []string { return c.e.store.children(path) }

// Snapshot returns every cached node, sorted by path, and the zxid at
// which the server's subtree was in that state: a consistent copy, even
// while the cache changes.
func (c *TreeCache) Snapshot() ([]Entry, int64) { return c.e.store.snapshot() }

// Len returns the number of cached nodes.
func (c *TreeCache) Len() int { return c.e.store.len() }

// Synced reports whether the cache follows the server now: true from
// Initialized (or Resynced) until the connection is suspended or the
// session lost.
func (c *TreeCache) Synced() bool { return c.e.isSynced() }

// Err returns nil while the cache runs, and why it stopped afterwards
// (ErrClosed after Close).
func (c *TreeCache) Err() error { return c.e.errNow() }

// Close stops the cache: it removes its persistent watch, stops its
// goroutines, empties the cache and closes the Events channel. The Conn
// given to NewTree is not closed (a Conn from WithRedial is). One-shot
// watches cannot be removed one by one: they stay on the server (and in
// the Conn's book) until they fire or the session ends.
func (c *TreeCache) Close() error { return c.e.close() }

// NodeCache keeps one node in memory (Curator's NodeCache): its data and
// Stat, or its absence. Its methods are safe for concurrent use.
type NodeCache struct{ e *engine }

// NewNode returns a cache of the node at path (which need not exist).
func NewNode(src zk.Sessions, path string, opts ...Option) *NodeCache {
	return &NodeCache{e: newEngine(src, path, kindNode, opts)}
}

// Start: see TreeCache.Start.
func (c *NodeCache) Start(ctx context.Context) error { return c.e.startChecked(ctx) }

// Events: see TreeCache.Events.
func (c *NodeCache) Events() <-chan Event { return c.e.eventsChan() }

// Get returns the node, or ok false while it does not exist.
func (c *NodeCache) Get() (Entry, bool) { return c.e.store.get(c.e.root) }

// Synced: see TreeCache.Synced.
func (c *NodeCache) Synced() bool { return c.e.isSynced() }

// Err: see TreeCache.Err.
func (c *NodeCache) Err() error { return c.e.errNow() }

// Close: see TreeCache.Close.
func (c *NodeCache) Close() error { return c.e.close() }

// ChildrenCache keeps the children of a node in memory, with their data
// (Curator's PathChildrenCache). Events report the children only, never
// the parent. Its methods are safe for concurrent use.
type ChildrenCache struct{ e *engine }

// NewChildren returns a cache of the children of path (which need not
// exist).
func NewChildren(src zk.Sessions, path string, opts ...Option) *ChildrenCache {
	return &ChildrenCache{e: newEngine(src, path, kindChildren, opts)}
}

// Start: see TreeCache.Start.
func (c *ChildrenCache) Start(ctx context.Context) error { return c.e.startChecked(ctx) }

// Events: see TreeCache.Events.
func (c *ChildrenCache) Events() <-chan Event { return c.e.eventsChan() }

// Get returns the cached child at path (a full path, as in Event.Path).
func (c *ChildrenCache) Get(path string) (Entry, bool) {
	if path == c.e.root || parentOf(path) != c.e.root {
		return Entry{}, false
	}
	return c.e.store.get(path)
}

// Current returns the cached children, sorted by path.
func (c *ChildrenCache) Current() []Entry {
	all, _ := c.e.store.snapshot()
	out := all[:0]
	for _, en := range all {
		if en.Path != c.e.root {
			out = append(out, en)
		}
	}
	return out
}

// Synced: see TreeCache.Synced.
func (c *ChildrenCache) Synced() bool { return c.e.isSynced() }

// Err: see TreeCache.Err.
func (c *ChildrenCache) Err() error { return c.e.errNow() }

// Close: see TreeCache.Close.
func (c *ChildrenCache) Close() error { return c.e.close() }

// startChecked validates the root, then starts.
func (e *engine) startChecked(ctx context.Context) error {
	if !strings.HasPrefix(e.root, "/") || (len(e.root) > 1 && strings.HasSuffix(e.root, "/")) || strings.Contains(e.root, "//") {
		return fmt.Errorf("cache: invalid path %q: %w", e.root, zk.ErrInvalidPath)
	}
	return e.start(ctx)
}
