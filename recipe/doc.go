// Package recipe holds what every zkgo recipe shares: the Grant (something
// held — a lock, a lease, leadership — with its fencing token and a channel
// that closes when it is lost), the error policy that decides when a
// connection problem counts as a loss, and the options every recipe
// package takes (Options, Option).
//
// The building blocks for writing recipes — Apache Curator's node naming
// and ordering (so that Go and Java processes can take part in the same
// lock or election), waiting for a turn, Hold, Stream — are in package
// recipe/recipeutil; the names this package had for them are deprecated.
//
// The recipes themselves live in the sub-packages: recipe/lock (Mutex,
// RWMutex, Semaphore, SemaphoreMutex, MultiLock), recipe/leader (Latch,
// Selector, Election), recipe/barrier (Barrier, DoubleBarrier),
// recipe/shared (Value, Count, AtomicValue, AtomicLong), recipe/queue
// (Queue, PriorityQueue, DelayQueue, IDQueue, Simple), recipe/node
// (PersistentNode, TTLNode, GroupMember) and recipe/discovery (Discovery,
// Provider: curator-x-discovery). Each depends only on the client package
// zk, this package, recipe/recipeutil and, for recipe/shared's promotion
// to a lock, recipe/lock; recipe/discovery builds on recipe/node.
//
// # Options
//
// Every recipe package's Option type is Option, so one list configures
// recipes of several packages:
//
//	opts := []recipe.Option{recipe.WithACL(acl), recipe.WithPolicy(recipe.Session)}
//	mu := lock.NewMutex(conn, "/app/lock", opts...)
//	latch := leader.NewLatch(conn, "/app/leader", id, opts...)
//
// The shared settings are in Options: the ACL of the nodes created
// (WithACL), the error policy (WithPolicy; see "Losing a grant") and the
// retry policy of optimistic updates (WithRetry). The packages keep their
// own names for them (lock.WithACL is WithACL) and add settings of their
// own (lock.WithData, leader.WithCloseMode, cache.WithMaxDepth, ...) with
// Extend, which a recipe of another package ignores, as it ignores the
// shared settings it has no use for.
//
// Two packages follow Python's kazoo instead of Curator, with kazoo's node
// layouts: recipe/partition (SetPartitioner) and recipe/lease
// (NonBlockingLease, MultiNonBlockingLease). Both use kazoo's lock
// (recipe/internal/kazoolock), not Curator's.
//
// # Losing a grant
//
// A Grant's Done channel closes, and Err says why, when:
//   - the node that carries it is deleted (by someone else, or because the
//     session ended) — ErrNodeDeleted;
//   - the session expires, or the Conn is closed — zk.ErrSessionExpired /
//     zk.ErrClosing;
//   - under the Strict policy (the default), as soon as the connection is
//     suspended — ErrSuspended. The server may still hold the node, but this
//     process can no longer know whether it does: another process may be
//     granted the same thing once the session times out;
//   - the grant is released (Unlock, Close, ...) — ErrReleased.
//
// Under the Session policy only the end of the session (or the node's
// deletion) is a loss; a suspension that ends with a reconnection is not.
// This mirrors Curator's StandardConnectionStateErrorPolicy (strict) and
// SessionConnectionStateErrorPolicy.
//
// # Fencing
//
// Every grant carries a fencing token: the czxid (creation zxid) of the node
// that carries it. Nodes are created in zxid order, so a later grant always
// has a larger token than any earlier grant on the same lock or election.
// Pass the token to the resource you protect, and let it refuse requests
// with an older token. When the resource is ZooKeeper itself, use Guard:
// a check operation on the holder's node that makes a multi fail once the
// node is gone.
//
// # Sessions
//
// Every recipe constructor takes a zk.Sessions: a *zk.Conn or a
// *zk.Redialer. A zk.Conn whose session is lost stays lost; recipes built on
// it stop with an error, and a new Conn (a new session) is needed to take
// part again. A Redialer starts that new session itself, and the recipes
// carry on in it: each Lock, Acquire, queue or counter operation runs in
// the session current at the time; a leader.Latch or leader.Selector takes
// part again in the next session; caches read the tree again and deliver
// the differences (Lost, then Resynced); recipe/node and recipe/discovery
// create their nodes again. What a recipe held in the old session (a lock,
// leadership) is lost with it, as the Grant's Err says. A DoubleBarrier
// member, a SetPartitioner, a leader.Election and a shared Value or Count
// live in the session current when they are created (or started).
//
// # Connection state
//
// To follow the connection state beside a recipe, use the Conn's
// NotifyState (a channel of every transition, and a stop function), on
// src.Current() and, with a Redialer, again on the Conn that src.Next
// returns after an expiry. zk.WithStateListener and Conn.StateChanges are
// deprecated older forms of the same stream (see CHANGES.md).
package recipe
