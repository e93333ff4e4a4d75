// Package shared implements values shared through one ZooKeeper node with
// the byte layouts of Apache Curator's recipes, so Go processes using this
// package and Java processes using Curator 5 read and write the same
// values:
//
//   - Value (Curator's SharedValue): any bytes. Start creates the node with
//     a seed value if it does not exist, then follows it with a data watch:
//     Get returns the latest value seen, Events delivers every change.
//     Set writes unconditionally; TrySet writes only if the node still
//     holds the Versioned value the caller read (a versioned setData).
//   - Count (Curator's SharedCount): a Value holding a 32-bit integer, 4
//     bytes big-endian (Java's ByteBuffer.putInt).
//   - AtomicValue (Curator's DistributedAtomicValue): bytes changed by
//     optimistic compare-and-set: read the node, compute the new value,
//     write it with the version read; on a conflict, retry as the retry
//     policy allows and then, optionally, once more while holding a mutex
//     at a separate lock path (Curator's PromotedToLock; the mutex is
//     recipe/lock's Mutex, Curator's InterProcessMutex layout). Every
//     operation returns a Result: whether it succeeded, the value before
//     and after, and how many tries it took (Curator's AtomicValue and
//     AtomicStats).
//   - AtomicLong (Curator's DistributedAtomicLong): an AtomicValue holding
//     a 64-bit integer, 8 bytes big-endian (ByteBuffer.putLong); a missing
//     node or empty data reads as 0.
//
// The nodes are persistent; their missing parents are created as
// containers, as Curator does (creatingParentContainersIfNeeded).
//
// # Connection problems
//
// Reads are retried across a suspended connection (they wait for the
// reconnection). A write whose connection is lost before its reply may or
// may not have been applied. Set (unconditional) is simply repeated. For a
// conditional write (TrySet, CompareAndSet, an AtomicValue update) a
// repeat cannot tell its own earlier success from another writer's
// change, so it is not repeated: the call returns an error wrapping both
// ErrUnknownOutcome and zk.ErrConnectionLoss, and the caller decides (read
// the value, and compare). Curator repeats such a write inside its retry
// loop; the repeat fails with a version conflict and its optimistic loop
// then applies the change again, so an increment can count twice.
//
// An AtomicValue or AtomicLong keeps no state between calls: while the
// connection is suspended its operations wait for the reconnection (or
// their context), and once the session has ended they fail with
// zk.ErrSessionExpired. With promotion, the mutex is held only for the
// attempts made under it; a mutex node left by a session that ended goes
// with the session.
//
// A Value or Count follows its node while the session lives: its watch is
// re-registered on reconnection (the server reports a change made while
// the connection was down), and Events reports each connection state.
// While the connection is suspended Get returns the last value seen, which
// may be stale. When the session ends (zk.StateLost) or the Conn closes,
// the Value stops following the node: Events sends the state and is
// closed, Get keeps returning the last value, Err says why, and writes fail
// with zk.ErrSessionExpired (or zk.ErrClosing). The node and its value
// outlive the session; a new Conn and a new Value pick them up.
//
// If the node is deleted, a Value waits for it to be created again (an
// exists watch; Curator's SharedValue stops hearing about changes then),
// and Set fails with zk.ErrNoNode meanwhile, as with Curator.
package shared
