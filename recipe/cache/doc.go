// Package cache keeps ZooKeeper data in memory and follows its changes,
// as Apache Curator's caches do:
//
//   - NodeCache: one node (Curator's NodeCache);
//   - ChildrenCache: a node's children with their data (PathChildrenCache);
//   - TreeCache: a subtree, optionally to a maximum depth (TreeCache,
//     CuratorCache).
//
// A cache is started with Start(ctx), which returns once the initial
// snapshot is in memory; it is read with Get (and Children, Current,
// Snapshot) from any goroutine, and reports what changes on Events:
//
//	nc := cache.NewNode(conn, "/config/feature")
//	events := nc.Events() // before Start, to see the initial state too
//	if err := nc.Start(ctx); err != nil { ... }
//	defer nc.Close()
//	for ev := range events { ... ev.Type, ev.Path, ev.Data, ev.Zxid ... }
//
// # Watching
//
// On servers with persistent watches (ZooKeeper 3.6 and later, zkgo) a
// cache sets one watch: a persistent recursive one on its root (a
// persistent one for a NodeCache), whatever the size of the subtree.
// Every change in the subtree is notified by the server; the cache reads
// the nodes named (getData; the parent too when a child comes or goes,
// since its Stat changes). When the server answers addWatch with
// Unimplemented (ZooKeeper before 3.6) the cache falls back to one-shot
// watches, as Curator's TreeCache: a data watch and a child watch on every
// cached node (an exists watch on a missing root), each set again by the
// read it causes. WithOneShotWatches chooses them on any server.
//
// The initial build and every re-read of the subtree are pipelined: up to
// WithConcurrency (default 256) getData and getChildren requests in flight
// at once on the Conn's connection, nodes read as soon as their parent's
// listing names them. With persistent watches a leaf costs one getData (a
// node whose Stat says it has no children is not listed); one-shot watches
// list every node, to set its child watch. On this package's benchmark
// (docs/BENCHMARKS.md) a TreeCache of 100,101 nodes builds in about half a
// second against zkgo and takes about 265 bytes of heap per node with 16
// bytes of data, path included.
//
// # Guarantees
//
// With persistent watches:
//
//   - The cache's content is always the subtree as the server had it at
//     one zxid. The initial snapshot (delivered as Created events, parents
//     before children, then Initialized) is the subtree at the zxid
//     Initialized carries; every later state is too (Snapshot returns it
//     with that zxid). The cache gets there by taking a barrier after its
//     reads: it waits for every watch event the server sent before it
//     answered them (zk.Watcher.Queued). A node named by such an event
//     may have changed after it was read, so it is read again, and the
//     barrier taken again, until a round of reads has no event behind it;
//     then none of the nodes read has changed since, and the reads are the
//     subtree at one zxid. They are applied to the cache at once, as one
//     batch. (A subtree written to so often that no round trip passes
//     without a change keeps a batch open: its events wait, none is lost.)
//   - Node events come in zxid order: from Initialized on, the Zxid of
//     Created, Changed and Deleted events never decreases. Created and
//     Changed carry the mzxid of the state they report. Deleted carries an
//     upper bound of the deletion's zxid: the pzxid of the parent read
//     after it (exact unless the parent's children changed again before
//     that read), the czxid of the node that replaced it, or the deletion
//     of its parent for a node deleted with its parent. At equal zxids,
//     deletions come first (deepest first), then creations (parents
//     first), then changes.
//   - Events report states, not every transaction: two changes to a node
//     that reach the cache in one batch are one Changed event with the
//     later state, and a node created and deleted within one batch is
//     never reported. A node deleted and created again is reported as
//     Deleted then Created (its czxid changed), never as Changed.
//   - No change is missed across reconnections. The server keeps the
//     persistent watch through a reconnection (the client registers it
//     again), but sends nothing for what changed while the connection was
//     down. So after every reconnection the cache reads the whole subtree
//     again and delivers exactly the differences (Created, Changed,
//     Deleted, in zxid order), then Resynced.
//   - A change of a node's child list alone (numChildren, cversion, pzxid)
//     updates its cached Stat without an event, as Curator does; the Stat
//     is current too. Only the ACL version (aversion) can lag: setACL
//     sends no notification.
//   - Stale data is never served silently. When the connection breaks the
//     cache sends Suspended and Synced turns false; its content is then
//     the state at the disconnection, until Resynced. When the session
//     expires it sends Lost. With WithRedial it then dials a new session,
//     reads the subtree on it and delivers the differences, then Resynced;
//     without, it sends Stopped (Err zk.ErrSessionExpired) and serves
//     nothing more: Get reports nothing, Err says why. A cache whose Conn
//     is closed stops the same way (zk.ErrClosing).
//
// With one-shot watches each watch event reaches the cache on its own
// channel, so the cache cannot tell which events the server sent before a
// given reply: it takes those that have arrived, not more. It still
// misses no change (a fired watch is always set again by the read it
// causes, and reconnections are handled as above) and per node its events
// are in zxid order, but across nodes an event can come before another
// with a smaller zxid, and a state (Snapshot) can mix two moments. One-shot
// watches also cost a goroutine per set watch (two per cached node) and a
// watch on the server per node. Prefer persistent watches where the
// server has them.
//
// # Events
//
// Events returns an unbounded channel: the cache never waits for its
// reader, and a reader must receive until it is closed (after Close, or
// after Stopped). It exists from the first call, so call Events before
// Start to receive the initial snapshot. When an event is received, the
// cache already holds that state (and perhaps later ones: Get shows the
// latest batch).
//
// # Sharing a Conn
//
// Several caches, locks and elections may share one Conn, with one
// exception that ZooKeeper imposes: a session keeps one watch per path, so
// two caches of one Conn must not have the same root (a TreeCache and a
// NodeCache of the same node, say), and a one-shot watch set by other code
// on a cache's root turns the cache's persistent watch into a one-shot
// one. Use a Conn per cache when roots coincide. If the watch is removed
// (RemoveWatches) the cache sets it again and reads the subtree again
// (Resynced).
package cache
