// Package linearize checks that histories of real ZooKeeper clients are
// linearizable, with porcupine (github.com/anishathalye/porcupine).
//
// # The model
//
// The znodes a test works on are a set of registers, one per path, each
// absent or holding data and a data version. Three operations act on a
// register:
//
//   - Get: sync, then getData. It answers the data and version, or NoNode.
//     A plain getData is served by the member the session is connected to
//     from its own copy of the tree and may be stale (ZooKeeper promises
//     sequential consistency for reads, not linearizability); sync makes
//     that member apply everything committed before the sync first (in
//     zkgo sync is a barrier entry through raft), so a getData behind it on
//     the same session sees every write acknowledged before the sync
//     began. The operation spans both requests: it is called before the
//     sync is sent and returns when the getData answers.
//   - Set: setData, unconditional (version -1) or conditional on the data
//     version. It answers the new version, NoNode or BadVersion.
//   - Create: create (version 0); a write like Set. It answers OK or
//     NodeExists.
//
// Operations on different paths never constrain each other, so the
// checker partitions a history by path (porcupine's P-compositionality)
// and checks each path alone: histories of thousands of operations check
// in milliseconds.
//
// # Unknown outcomes
//
// A request that ends without an answer from the ensemble — a connection
// loss, a timeout, a closed client, a cancelled context — may or may not
// have taken effect, and may still take effect later (a proposal in the
// raft log commits after its client gave up). Recording such a write as
// failed is the classic mistake: a later read of its data then looks like
// a read of a value never written. Recording it as succeeded is the
// opposite mistake. The Recorder records it with Status Unknown and, in
// History, with a return time at the end of the history, after every
// other event: the checker may then put its effect at any point after its
// call, or after every other operation, where it is invisible — both
// outcomes are allowed. A read with an unknown outcome constrains nothing
// and is left out of the history. Only ZooKeeper's definite answers
// (success, NoNode, NodeExists, BadVersion) count as outcomes; every other
// error is taken as unknown (see StatusOf), which can only make the check
// weaker, never wrong.
//
// # Use
//
// A test makes one Recorder, one Client per ZooKeeper session (each used
// by one goroutine at a time), runs its workload, and once every client
// has stopped passes Recorder.History to Check (or Require, which fails
// the test and writes porcupine's visualization of a history that is not
// linearizable to a file).
package linearize
