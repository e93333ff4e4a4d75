package faultnet

import (
	"maps"
	"math"
	"time"
)

// Dir is one direction of bytes between two nodes: the bytes From sends
// to To, on every connection between them, whichever of them dialed.
// Every fault applies to a Dir.
type Dir struct{ From, To string }

// String returns "From->To".
func (d Dir) String() string { return d.From + "->" + d.To }

// Reverse returns the other direction between the same nodes.
func (d Dir) Reverse() Dir { return Dir{From: d.To, To: d.From} }

// rule is the faults set on one Dir.
type rule struct {
	// blocked: a partition set on this Dir (Partition,
	// PartitionOneWay); isolation is kept apart (faults.isolated).
	blocked bool
	// delay and jitter: every unit read is delivered no sooner than
	// delay plus a uniform draw in [0, jitter) after it was read.
	delay, jitter time.Duration
	// drop and reorder are the probabilities of DropFrames and
	// ReorderFrames, in [0, 1].
	drop, reorder float64
}

// faults is one immutable state of every fault. Net.faults holds the
// current one; a change publishes a modified copy, so readers and writers
// of connections look faults up without a lock.
type faults struct {
	dirs     map[Dir]rule    // only Dirs with some fault set
	isolated map[string]bool // nodes cut off by Isolate
}

// rule returns the faults in force on d, isolation included.
func (f *faults) rule(d Dir) rule {
	r := f.dirs[d]
	if f.isolated[d.From] || f.isolated[d.To] {
		r.blocked = true
	}
	return r
}

// blocked reports whether bytes on d are discarded.
func (f *faults) blocked(d Dir) bool { return f.rule(d).blocked }

func (f *faults) clone() *faults {
	return &faults{dirs: maps.Clone(f.dirs), isolated: maps.Clone(f.isolated)}
}

// edit changes the rule of d, dropping it when no fault is left.
func (f *faults) edit(d Dir, change func(r *rule)) {
	r := f.dirs[d]
	change(&r)
	if r == (rule{}) {
		delete(f.dirs, d)
	} else {
		f.dirs[d] = r
	}
}

// change publishes the faults edit makes of the current ones, logs the
// change, and closes every connection that lost bytes to a partition now
// lifted from a direction that lost them (see conn.healed): its stream
// has a gap and must not go on.
func (n *Net) change(msg string, edit func(f *faults), attrs ...any) {
	n.mu.Lock()
	f := n.faults.Load().clone()
	edit(f)
	n.faults.Store(f)
	var gapped []*conn
	for c := range n.conns {
		if c.healed(f) {
			gapped = append(gapped, c)
		}
	}
	n.mu.Unlock()
	n.log.Info("faultnet: "+msg, attrs...)
	for _, c := range gapped {
		c.close(closeHealed)
	}
}

// Partition cuts both directions between a and b: their bytes are
// discarded on every connection between them (see the package doc for
// what the endpoints see, and what Heal does to such connections).
func (n *Net) Partition(a, b string) {
	n.change("partition", func(f *faults) {
		f.edit(Dir{a, b}, func(r *rule) { r.blocked = true })
		f.edit(Dir{b, a}, func(r *rule) { r.blocked = true })
	}, "a", a, "b", b)
}

// PartitionOneWay discards the bytes from sends to to; the other
// direction flows.
func (n *Net) PartitionOneWay(from, to string) {
	n.change("one-way partition", func(f *faults) {
		f.edit(Dir{from, to}, func(r *rule) { r.blocked = true })
	}, "from", from, "to", to)
}

// Isolate cuts both directions between node and every other node,
// including nodes whose links are created later. Heal does not lift it;
// HealNode and HealAll do.
func (n *Net) Isolate(node string) {
	n.change("isolate", func(f *faults) { f.isolated[node] = true }, "node", node)
}

// Heal lifts the partitions set between a and b (both directions) by
// Partition and PartitionOneWay; an Isolate of either stays. Connections
// that lost bytes in a direction now flowing are reset.
func (n *Net) Heal(a, b string) {
	n.change("heal", func(f *faults) {
		f.edit(Dir{a, b}, func(r *rule) { r.blocked = false })
		f.edit(Dir{b, a}, func(r *rule) { r.blocked = false })
	}, "a", a, "b", b)
}

// HealNode lifts an Isolate of node and every partition set on a
// direction from or to node. Connections that lost bytes in a direction
// now flowing are reset.
func (n *Net) HealNode(node string) {
	n.change("heal node", func(f *faults) {
		delete(f.isolated, node)
		for d := range f.dirs {
			if d.From == node || d.To == node {
				f.edit(d, func(r *rule) { r.blocked = false })
			}
		}
	}, "node", node)
}

// HealAll lifts every partition and isolation; delays and frame faults
// stay. Connections that lost bytes are reset.
func (n *Net) HealAll() {
	n.change("heal all", func(f *faults) {
		clear(f.isolated)
		for d := range f.dirs {
			f.edit(d, func(r *rule) { r.blocked = false })
		}
	})
}

// ClearAll lifts every fault: HealAll, and every delay and frame fault
// set to zero.
func (n *Net) ClearAll() {
	n.change("clear all", func(f *faults) {
		clear(f.isolated)
		clear(f.dirs)
	})
}

// Delay holds every unit sent from from to to (a read chunk, or a whole
// frame on a raft message stream) for d plus a uniform draw in
// [0, jitter) after the proxy read it. Order is kept: a unit is never
// delivered before the one read before it. It applies to units read from
// now on; zero d and jitter end it. Negative durations count as zero.
func (n *Net) Delay(from, to string, d, jitter time.Duration) {
	d, jitter = max(d, 0), max(jitter, 0)
	n.change("delay", func(f *faults) {
		f.edit(Dir{from, to}, func(r *rule) { r.delay, r.jitter = d, jitter })
	}, "from", from, "to", to, "delay", d, "jitter", jitter)
}

// DropFrames drops, with probability p each, the frames from sends to to
// on raft message streams, except each direction's first frame (the
// hello and its ack); the stream's framing stays whole. Opaque streams
// are not touched. p <= 0 (or NaN) ends it; p >= 1 drops every frame.
func (n *Net) DropFrames(from, to string, p float64) {
	p = clampProb(p)
	n.change("drop frames", func(f *faults) {
		f.edit(Dir{from, to}, func(r *rule) { r.drop = p })
	}, "from", from, "to", to, "p", p)
}

// ReorderFrames swaps, with probability p each, a frame from from to to
// on a raft message stream with the frame after it, if that one is read
// within ReorderHold; else the held frame goes alone. The first frame of
// each direction is never held. Opaque streams are not touched. p <= 0
// (or NaN) ends it; p >= 1 swaps every pair it can.
func (n *Net) ReorderFrames(from, to string, p float64) {
	p = clampProb(p)
	n.change("reorder frames", func(f *faults) {
		f.edit(Dir{from, to}, func(r *rule) { r.reorder = p })
	}, "from", from, "to", to, "p", p)
}

// ResetConns resets (TCP RST, both ends) every connection open now
// between a and b, whichever dialed. Later connections are not affected.
func (n *Net) ResetConns(a, b string) {
	n.mu.Lock()
	n.resets[pairKey(Dir{a, b})]++
	var hit []*conn
	for c := range n.conns {
		if c.link == (Dir{a, b}) || c.link == (Dir{b, a}) {
			hit = append(hit, c)
		}
	}
	n.mu.Unlock()
	n.log.Info("faultnet: reset connections", "a", a, "b", b, "conns", len(hit))
	for _, c := range hit {
		c.close(closeResetConns)
	}
}

func clampProb(p float64) float64 {
	if math.IsNaN(p) || p < 0 {
		return 0
	}
	return min(p, 1)
}
