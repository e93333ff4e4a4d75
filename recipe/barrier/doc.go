// Package barrier implements distributed barriers on ZooKeeper with the
// node layout of Apache Curator's barrier recipes, so Go processes using
// this package and Java processes using Curator 5 can wait on the same
// barrier:
//
//   - Barrier (Curator's DistributedBarrier): the barrier is up while the
//     node "<path>" exists. Set creates it (a persistent node, missing
//     parents as containers), Remove deletes it, and Wait blocks until it
//     is gone (an exists watch on the node).
//   - DoubleBarrier (Curator's DistributedDoubleBarrier): N members enter
//     together and leave together. Each member is an ephemeral node
//     "<path>/<uuid>" (a random UUID, no protection prefix, no sequence
//     number); the member that sees N members creates the persistent node
//     "<path>/ready", whose creation releases the members waiting in Enter.
//     Leave is ZooKeeper's double-barrier leave: members other than the
//     lowest (by name) delete their node and wait for the lowest; the
//     lowest waits for the highest and deletes its node last; the ready
//     node is deleted by whoever leaves. The parent "<path>" is created as
//     a container, so the server removes it once a round is over.
//
// N is a threshold, not a limit: more than N members may enter. Like
// Curator's, a double barrier path should be used for one round at a time:
// a member that enters while "<path>/ready" of the previous round still
// exists passes at once. Give each round its own path when rounds follow
// each other closely.
//
// # Connection problems
//
// Waiting survives a suspended connection: the client re-registers its
// watches when it reconnects (and the server reports what changed
// meanwhile), and operations that failed with zk.ErrConnectionLoss are
// retried, each of them idempotent (a member's node has a fixed name, so a
// create whose reply was lost finds it existing). Curator's
// DistributedDoubleBarrier instead throws ConnectionLossException from
// Enter and Leave when a watch sees the connection drop.
//
// When the session ends (zk.StateLost) or the Conn is closed, waiting
// calls return zk.ErrSessionExpired or zk.ErrClosing. A double-barrier
// member's ephemeral node goes with its session, so the other members then
// count one member less: an Enter that had not yet seen N members keeps
// waiting for another one. A Barrier's node is persistent and outlives the
// session that set it.
//
// # Cancellation
//
// Every blocking call takes a context. A cancelled Barrier.Wait leaves
// nothing behind. A cancelled DoubleBarrier.Enter deletes the member's
// node, so an abandoned member is not counted (members that already passed
// may have counted it), and a cancelled Leave deletes it too, so the others
// are not kept waiting for it.
package barrier
