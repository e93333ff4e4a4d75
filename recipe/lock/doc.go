// Package lock implements distributed locks on ZooKeeper with the node
// layout of Apache Curator's InterProcess* locks, so Go processes using this
// package and Java processes using Curator 5 exclude each other on the same
// path:
//
//   - Mutex (InterProcessMutex): "<path>/_c_<uuid>-lock-<seq>"
//   - RWMutex (InterProcessReadWriteLock): "..-__READ__<seq>" and "..-__WRIT__<seq>"
//   - Semaphore (InterProcessSemaphoreV2): "<path>/locks/..-lock-<seq>" guards
//     "<path>/leases/_c_<uuid>-lease-<seq>"
//   - SemaphoreMutex (InterProcessSemaphoreMutex): a Semaphore of one lease
//   - MultiLock (InterProcessMultiLock): several locks, all or none
//
// Every acquirer creates an ephemeral sequential node (with Curator's
// "_c_<uuid>-" protection, so a create whose reply was lost is found again
// rather than orphaned) and waits, with a watch on the one node ahead of
// it (and, further back in the queue, on the node ahead of that one),
// until its node is first. Parents are created as containers, which the
// server removes once they are empty. Round trips Curator makes are
// saved: the lock's children come with the create (a getChildren sent
// right behind it), so an acquirer that is first holds the lock after one
// round trip; the waiter reads its own node (the grant's watch) while it
// waits, and a grant does not wait for that read; and when the node it
// watched was first in the list it read, that node's deletion gives it
// the lock without listing again. A waiter further back lists again when
// the node two ahead of it goes, while the one ahead holds, so that list
// is already there when its own turn comes: a release wakes two waiters,
// the next holder and the one behind it.
//
// Acquiring returns a recipe.Grant: its Token is a fencing token, and its
// Done channel closes when the lock is lost (see package recipe). A
// cancelled or timed-out acquire deletes its own node. When the session
// ends, waiting acquirers return zk.ErrSessionExpired.
//
// Reentrancy is per Mutex value, not per goroutine (Go has no goroutine
// identity): a Mutex is one holder. Give each goroutine that must be
// excluded from the others its own Mutex.
package lock
