package faultnet

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/raftnode"
)

// inbox is a raftnode.Handler that hands every message to a channel.
type inbox chan raftpb.Message

func (h inbox) Process(ctx context.Context, m raftpb.Message) error {
	select {
	case h <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (inbox) ReportUnreachable(uint64)                   {}
func (inbox) ReportSnapshot(uint64, raft.SnapshotStatus) {}
func (inbox) ReportProposalLost(uint64)                  {}
func (inbox) ProcessSnapshot(context.Context, raftpb.Message, io.Reader) error {
	return io.ErrUnexpectedEOF
}

// transport starts member id's TCP transport (formation set, so the
// hello is version 2) delivering to in; stopped at the end of the test.
func transport(t *testing.T, id uint64, in inbox) *raftnode.TCPTransport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := raftnode.NewTCPTransport(raftnode.TCPConfig{ID: id, ClusterID: 0xc1, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	tr.SetFormation(0xf0)
	if err := tr.Start(in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	return tr
}

// The real raft transport through a link: its stream is recognised as
// a raft message stream, frame drops lose messages without breaking the
// connection, and a partition followed by a heal makes it reconnect.
func TestRaftTransportThroughLink(t *testing.T) {
	n := newNet(t, 1)
	in := make(inbox, 1024)
	t1 := transport(t, 1, make(inbox, 1024))
	t2 := transport(t, 2, in)
	addr, err := n.Listen("1", "2", t2.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t1.AddPeer(2, addr)

	send := func(index uint64) {
		t1.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 1, Commit: index}})
	}
	// receive waits for the heartbeat of commit index, skipping older
	// ones (sent while faults were on).
	receive := func(index uint64) {
		t.Helper()
		timeout := time.After(eventually)
		for {
			select {
			case m := <-in:
				if m.Commit == index {
					return
				}
			case <-timeout:
				t.Fatalf("no heartbeat of commit %d", index)
			}
		}
	}
	send(1)
	receive(1)
	if st := n.Stats()[Dir{"1", "2"}]; st.Frames != 2 || st.Conns != 1 {
		t.Fatalf("after the hello and one message: %+v", st)
	}

	n.DropFrames("1", "2", 1)
	for i := uint64(2); i <= 5; i++ {
		send(i)
	}
	waitFor(t, "4 messages dropped", func() bool { return n.Stats()[Dir{"1", "2"}].FramesDropped == 4 })
	n.DropFrames("1", "2", 0)
	send(6)
	receive(6)
	if len(in) != 0 {
		t.Fatalf("%d dropped messages arrived", len(in))
	}

	n.Partition("1", "2")
	send(7)
	waitFor(t, "a message discarded", func() bool { return n.Stats()[Dir{"1", "2"}].FramesLost > 0 })
	n.Heal("1", "2")
	// The gapped connection is reset; the transport dials again (its
	// queue may have lost messages with the old connection).
	waitFor(t, "a message after the heal", func() bool {
		send(8)
		select {
		case m := <-in:
			return m.Commit == 8
		default:
			return false
		}
	})
	if st := n.Stats()[Dir{"1", "2"}]; st.Conns < 2 || st.Resets != 1 {
		t.Errorf("after the heal: %+v", st)
	}
}
