// Package statemachine is a member's replicated state: the format of the
// raft log entries zkgo writes (entry.go, fixed by golden bytes) and the
// Machine that applies committed entries to the ZooKeeper tree.
//
// The Machine owns the tree and its lock, and is the only code that takes
// that lock. raft's apply goroutine calls Apply, Snapshot, CheckSnapshot
// and Restore (raftnode.StateMachine); the AdminServer's snapshot command
// calls Snapshot too (the capture takes the lock once, like the apply
// goroutine's); the rest of the server reads the
// tree inside View, or through a Waiter's Applied while a batch holds the
// tree write-locked (Batch.Tree), and changes /zookeeper/config outside
// the log through SetConfigData and ReconfigData.
//
// Lock order (see docs/LOCKS.md): Machine.mu (the tree) is taken before
// any lock a Waiter or a SessionObserver takes while it is held — a
// connection's pipeMu and outMu, the watch manager's, the session
// tracker's. checkedMu is a leaf.
package statemachine
