// Package faultnet is a userspace TCP proxy on loopback whose faults a
// torture harness switches on and off while traffic flows: partitions
// (both ways, one way, a whole node), delay with jitter, connection
// resets, and, on raft message streams, frame drops and swaps.
//
// # Model
//
// The harness runs every member as a process on 127.0.0.1 and makes every
// connection between two nodes go through a link of one Net: a proxy
// listener (Net.Listen) for one ordered pair, the dialing node and the
// listening one, that dials the listener's real address for each
// connection it accepts. Members dial each other's peer ports, and
// clients dial members, through such links. Nodes are names ("1", "c3").
//
// Faults apply to a direction of bytes, a Dir: the bytes one node sends
// to another, on every connection between them, whichever dialed. Each
// direction of each proxied connection has a reader goroutine, which reads
// the source in chunks of at most ChunkBytes, cuts the bytes into units
// and queues them with a delivery time, and a writer goroutine, which
// delivers each unit at its time. The queue holds at most MaxQueuedBytes;
// when it is full the reader stops reading, so the sender sees ordinary
// TCP backpressure. Faults are looked up for each unit, so a change takes
// effect on the next unit read (drops, delay) or delivered (partitions,
// swaps).
//
// # Units: raft frames and opaque streams
//
// zkgo's raft transport (raftnode/tcp.go) sends frames, a 4-byte
// big-endian length and that many bytes; the dialer's first frame is a
// hello whose payload starts with RaftMagic, and the listener's first
// frame is the ack. The proxy holds a connection's first bytes until they
// show whether they are such a hello (at most a 1 KiB frame): if so, and
// it is not a probe's (receiver 0, raftnode/probe.go), both directions are
// raft message streams and each unit is one whole frame. Every other
// connection — snapshot streams ("zkgosnp2", "zkgosnap"), probes, clients,
// TLS — is an opaque stream, each unit one read chunk. A frame length over
// MaxFrameBytes turns a direction opaque from there on; frames are
// assembled as their bytes arrive, never allocated from their length.
//
// # Partitions
//
// A partitioned direction's units are read and discarded, so the sender
// keeps writing without error, as across a real partition: the peers see
// silence and time out, never a reset. The proxy still accepts new
// connections across a partition (the dialer's connect succeeds) and
// discards the partitioned direction's bytes, so the handshake times out
// on the dialer's side. If the listening node cannot be dialed while the
// link is partitioned either way, the proxy swallows the dialer's bytes
// until the partition is lifted, instead of revealing the refusal.
//
// A stream that lost bytes has a gap, and resuming it after a heal would
// hand the receiver garbage framing. So a connection that had bytes (or
// its end) discarded is reset, both ends at once, as soon as a direction
// that lost bytes flows again: when the heal is made, or, if a discard
// races with the heal, at that direction's next unit. It is never
// resumed. New connections after the heal work. A connection whose lost
// direction is still blocked (a heal of another partition, or an Isolate
// still in force) stays silent until that is lifted too.
//
// Partition and PartitionOneWay set blocks on directions, Isolate on a
// node; Heal lifts the first between two nodes, HealNode everything on
// one node, HealAll every block. Delays and frame faults are separate and
// lifted by setting them to zero or by ClearAll.
//
// # Delay
//
// Delay holds each unit (a chunk, or a frame on a raft stream) until a
// fixed delay plus a uniform jitter after it was read. Byte order is
// kept: a unit never goes before the one read before it, so jitter
// delays later units rather than reordering them.
//
// # Frame faults
//
// DropFrames and ReorderFrames act only on raft message streams, on
// whole frames, and never on a direction's first frame (the hello, the
// ack): the stream stays well framed, and what the receiver sees is what
// a lossy message network would give raft, which tolerates it. They do
// not touch opaque streams at all: a snapshot or client stream that lost
// bytes would only be corrupt, which is not a network fault TCP shows.
// ReorderFrames swaps a frame with the next one if that is read within
// ReorderHold, so a lone frame is never held long.
//
// # Limits
//
// TCP never reorders or loses bytes within a connection: it delivers
// them in order or the connection fails. So reordering exists only at
// frame level, and loss of bytes in a stream is modelled as a partition
// (silence, then a reset after the heal) or a reset (ResetConns), never as
// a stream with a hole in it. Establishing a connection is not faulted:
// the proxy accepts every connect at once. Timing is not modelled beyond
// the added delay; loopback is fast. Random choices are seeded (New), so
// a schedule replays the same choices for the same frames on the same
// connections, but which frames meet a fault depends on timing, which is
// not replayed.
package faultnet
