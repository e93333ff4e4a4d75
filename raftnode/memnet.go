package raftnode

import (
	"context"
	"sync"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// MemNetwork connects in-memory transports, for tests. Links can be cut
// and healed to simulate partitions. Messages are copied (marshalled and
// unmarshalled), delivered in order per destination, and dropped when the
// destination's inbound queue is full.
type MemNetwork struct {
	mu      sync.Mutex // guards members, cut and held
	members map[uint64]*MemTransport
	cut     map[[2]uint64]bool // directed links (from, to) that drop everything
	// held: members whose proposals (MsgProp) are held back, in order,
	// until ReleaseProposals (HoldProposals); nil slice: holding, none yet.
	held map[uint64][]raftpb.Message
}

// NewMemNetwork returns an empty network.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{members: map[uint64]*MemTransport{}, cut: map[[2]uint64]bool{}, held: map[uint64][]raftpb.Message{}}
}

// HoldProposals holds back the proposals member id forwards to its
// leader, as a paused process or a congested link would: they are neither
// delivered nor reported lost until ReleaseProposals. Other messages flow.
func (nw *MemNetwork) HoldProposals(id uint64) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if _, ok := nw.held[id]; !ok {
		nw.held[id] = nil
	}
}

// HeldProposals returns how many proposals of member id are held back.
func (nw *MemNetwork) HeldProposals(id uint64) int {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return len(nw.held[id])
}

// ReleaseProposals stops holding member id's proposals and delivers the
// held ones, in order, before it returns (to members still reachable;
// the others' are dropped).
func (nw *MemNetwork) ReleaseProposals(id uint64) {
	nw.mu.Lock()
	msgs := nw.held[id]
	delete(nw.held, id)
	nw.mu.Unlock()
	for _, m := range msgs {
		if dst := nw.route(id, m.To); dst != nil {
			select {
			case dst.in <- m:
			default:
			}
		}
	}
}

// hold keeps m back if its sender's proposals are held; it reports
// whether it did.
func (nw *MemNetwork) hold(from uint64, m raftpb.Message) bool {
	if m.Type != raftpb.MsgProp {
		return false
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	q, ok := nw.held[from]
	if ok {
		nw.held[from] = append(q, m)
	}
	return ok
}

// memQueue is the inbound queue length of a MemTransport.
const memQueue = 4096

// Transport returns a transport for member id on this network. It joins
// the network when the Node starts it and leaves it when stopped.
func (nw *MemNetwork) Transport(id uint64) *MemTransport {
	return &MemTransport{nw: nw, id: id, in: make(chan raftpb.Message, memQueue)}
}

// Cut drops all messages between a and b, both ways.
func (nw *MemNetwork) Cut(a, b uint64) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.cut[[2]uint64{a, b}] = true
	nw.cut[[2]uint64{b, a}] = true
}

// CutOneWay drops the messages from one member to another.
func (nw *MemNetwork) CutOneWay(from, to uint64) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.cut[[2]uint64{from, to}] = true
}

// Partition cuts every link between members of different groups. Members
// in no group keep their links.
func (nw *MemNetwork) Partition(groups ...[]uint64) {
	for i, g := range groups {
		for _, h := range groups[i+1:] {
			for _, a := range g {
				for _, b := range h {
					nw.Cut(a, b)
				}
			}
		}
	}
}

// Isolate cuts id from every other member of the network, present or
// future, until Heal.
func (nw *MemNetwork) Isolate(id uint64) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.cut[[2]uint64{id, 0}] = true // wildcard: see blocked
}

// Heal restores every link.
func (nw *MemNetwork) Heal() {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	clear(nw.cut)
}

// route returns the destination of a message from `from` to `to`, or nil
// if it is unknown or the link is cut.
func (nw *MemNetwork) route(from, to uint64) *MemTransport {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.cut[[2]uint64{from, to}] || nw.cut[[2]uint64{from, 0}] || nw.cut[[2]uint64{to, 0}] {
		return nil
	}
	return nw.members[to]
}

// MemTransport is a member's end of a MemNetwork.
type MemTransport struct {
	nw     *MemNetwork
	id     uint64
	in     chan raftpb.Message
	h      Handler
	ctx    context.Context // cancelled by Stop
	cancel context.CancelFunc
	done   chan struct{}
}

// Start implements Transport.
func (t *MemTransport) Start(h Handler) error {
	t.h = h
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.done = make(chan struct{})
	t.nw.mu.Lock()
	t.nw.members[t.id] = t
	t.nw.mu.Unlock()
	go t.deliver()
	return nil
}

func (t *MemTransport) deliver() {
	defer close(t.done)
	for {
		select {
		case m := <-t.in:
			t.h.Process(t.ctx, m) // an error means the node stopped: drop
		case <-t.ctx.Done():
			return
		}
	}
}

// Send implements Transport.
func (t *MemTransport) Send(msgs []raftpb.Message) {
	for i := range msgs {
		m := &msgs[i]
		dst := t.nw.route(t.id, m.To)
		if dst == nil {
			t.h.ReportUnreachable(m.To)
			switch m.Type {
			case raftpb.MsgSnap:
				t.h.ReportSnapshot(m.To, raft.SnapshotFailure)
			case raftpb.MsgProp:
				t.h.ReportProposalLost(m.To)
			}
			continue
		}
		b, err := m.Marshal()
		if err != nil {
			panic(err) // a message raft built always marshals
		}
		var cp raftpb.Message
		if err := cp.Unmarshal(b); err != nil {
			panic(err)
		}
		if t.nw.hold(t.id, cp) {
			continue
		}
		select {
		case dst.in <- cp:
			if m.Type == raftpb.MsgSnap {
				t.h.ReportSnapshot(m.To, raft.SnapshotFinish)
			}
		default:
			switch m.Type {
			case raftpb.MsgSnap:
				t.h.ReportSnapshot(m.To, raft.SnapshotFailure)
			case raftpb.MsgProp:
				t.h.ReportProposalLost(m.To)
			}
		}
	}
}

// AddPeer implements Transport; every member of the network is reachable.
func (t *MemTransport) AddPeer(id uint64, addr string) {}

// RemovePeer implements Transport.
func (t *MemTransport) RemovePeer(id uint64) {}

// Stop implements Transport: the member leaves the network.
func (t *MemTransport) Stop() {
	t.nw.mu.Lock()
	if t.nw.members[t.id] == t {
		delete(t.nw.members, t.id)
	}
	t.nw.mu.Unlock()
	t.cancel()
	<-t.done
}
