// Package queue implements distributed queues on ZooKeeper with the node
// layout and item encoding of Apache Curator's queue recipes, so Go and
// Java (Curator 5) processes can produce into and consume from the same
// queue:
//
//   - Queue (DistributedQueue): first in, first out.
//   - PriorityQueue (DistributedPriorityQueue): lowest priority value
//     first.
//   - DelayQueue (DistributedDelayQueue): each item waits until its due
//     time.
//   - IDQueue (DistributedIdQueue): FIFO items with an id by which they can
//     be removed.
//   - Simple (SimpleDistributedQueue): FIFO raw values, Curator's simple
//     queue (see below).
//
// Every item is a persistent sequential node "<path>/queue-<infix><seq>";
// the infix encodes the priority, due time or id exactly as Curator does
// (see PriorityInfix, DelayInfix, IDInfix). The node's data is Curator's
// item envelope (see Encode) around one value, or several for PutMulti.
// Values are []byte: a Java peer's QueueSerializer<T> turns each T into
// the bytes a Go consumer receives, and back. The queue node is created
// persistent, its missing parents as containers, on the first put (Curator
// creates it when a DistributedQueue starts). Children without the
// "queue-" prefix are ignored.
//
// # Simple queue
//
// Simple has its own layout, Curator's SimpleDistributedQueue's (and that
// of ZooKeeper's recipes' DistributedQueue): each value, as is, is the
// data of a persistent sequential node "<path>/qn-<seq>", and items are
// taken in name order. Offer, Peek, Element, Poll, Remove and Take mean
// what they mean in Curator; Take with a context deadline is Curator's
// poll(timeout). The queue node and its missing parents are created as
// containers on first use (Curator 5's EnsureContainers), and again after
// the server has reaped an emptied queue node. Taking deletes the item
// (at most once delivery); there is no lock-safe mode.
//
// # Taking an item
//
// Without a lock path (the default), Take reads the first item and deletes
// it (with the version it read, so two consumers cannot both get it)
// before returning it: delivery is at most once, and an item whose
// consumer fails after Take is lost. This is Curator's mode without
// lockPath.
//
// With WithLockPath, consumption is lock-safe (Curator's lockPath mode):
// Take creates the ephemeral node "<lockPath>/<item name>" and returns
// the item still in the queue; Message.Ack then deletes the item and the
// lock node in one transaction (Curator deletes the item, then the lock).
// If the consumer's session ends before Ack, the lock node goes with it,
// and another consumer's Take, which watches the lock path whenever it
// skipped a locked item, takes the item. An item is therefore acked
// exactly once, though it may be processed more than once (by a consumer
// that lost its session mid-item): make the processing idempotent, or
// fence it with the Message's Grant token. Message.Requeue puts the item
// back (Curator's ErrorMode.REQUEUE) and Message.Release gives it back
// untouched.
//
// # Connection problems
//
// Reads, and the deletes and lock creations of taking, are retried across
// a suspended connection: a lock node carries a random token, so a lock
// whose create reply was lost is recognized as this claim's, and an Ack or
// Requeue whose reply was lost is recognized by both the lock and the item
// being gone. A put whose reply
// was lost cannot be recognized (the sequence number is unknown, and
// equal values may be queued on purpose), so it is not repeated: Put
// returns an error wrapping ErrUnknownOutcome and zk.ErrConnectionLoss
// (Curator repeats it and may queue the item twice). Without a lock path,
// a take whose delete reply was lost and whose item is then gone counts
// the item as taken by someone else (at most once; it may be lost).
//
// A Message's Grant (lock-safe mode) ends, under the default Strict policy,
// as soon as the connection is suspended, and fn's context in Consume is
// cancelled then: another consumer may get the item if the session
// expires. Ack still succeeds after a reconnection within the session.
// When the session ends (zk.StateLost), Take and Consume return
// zk.ErrSessionExpired, and this consumer's lock nodes are gone: its items
// go to other consumers. Items are persistent and outlive every session.
package queue
