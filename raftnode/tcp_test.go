package raftnode

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// recorder is a Handler that reports what a transport delivered.
type recorder struct {
	msgs        chan raftpb.Message
	unreachable chan uint64
	snaps       chan raft.SnapshotStatus
}

func newRecorder() *recorder {
	return &recorder{msgs: make(chan raftpb.Message, 100), unreachable: make(chan uint64, 1000), snaps: make(chan raft.SnapshotStatus, 100)}
}

func (r *recorder) Process(ctx context.Context, m raftpb.Message) error {
	select {
	case r.msgs <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *recorder) ReportUnreachable(id uint64) {
	select {
	case r.unreachable <- id:
	default:
	}
}

func (r *recorder) ReportSnapshot(id uint64, s raft.SnapshotStatus) { r.snaps <- s }

func (r *recorder) ReportProposalLost(id uint64) {}

// ProcessSnapshot reads the streamed data into the message and records it.
func (r *recorder) ProcessSnapshot(ctx context.Context, m raftpb.Message, data io.Reader) error {
	b, err := io.ReadAll(data)
	if err != nil {
		return err
	}
	snap := *m.Snapshot
	snap.Data = b
	m.Snapshot = &snap
	return r.Process(ctx, m)
}

func newTCP(t *testing.T, id, cluster uint64, maxFrame int) (*TCPTransport, *recorder) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTCPTransport(TCPConfig{ID: id, ClusterID: cluster, Listener: ln, MaxFrameBytes: maxFrame, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	if err := tr.Start(rec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	return tr, rec
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestTCPDeliversAndReportsSnapshots(t *testing.T) {
	a, arec := newTCP(t, 1, 7, 0)
	b, brec := newTCP(t, 2, 7, 0)
	a.AddPeer(2, b.Addr().String())
	a.Send([]raftpb.Message{
		{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 3},
		{Type: raftpb.MsgApp, From: 1, To: 2, Term: 3, Entries: []raftpb.Entry{{Index: 5, Term: 3, Data: []byte("x")}}},
		{Type: raftpb.MsgSnap, From: 1, To: 2, Term: 3, Snapshot: &raftpb.Snapshot{Data: bytes.Repeat([]byte("s"), 1<<20), Metadata: raftpb.SnapshotMetadata{Index: 9, Term: 3}}},
	})
	if m := recv(t, brec.msgs, "heartbeat"); m.Type != raftpb.MsgHeartbeat || m.Term != 3 {
		t.Fatalf("got %v", m)
	}
	if m := recv(t, brec.msgs, "append"); m.Type != raftpb.MsgApp || string(m.Entries[0].Data) != "x" {
		t.Fatalf("got %v", m)
	}
	if m := recv(t, brec.msgs, "snapshot"); m.Type != raftpb.MsgSnap || len(m.Snapshot.Data) != 1<<20 {
		t.Fatalf("got %v", m.Type)
	}
	if s := recv(t, arec.snaps, "snapshot status"); s != raft.SnapshotFinish {
		t.Fatalf("snapshot status %v", s)
	}
	// Messages to unknown members are dropped and reported.
	a.Send([]raftpb.Message{{Type: raftpb.MsgSnap, From: 1, To: 9, Snapshot: &raftpb.Snapshot{}}})
	if id := recv(t, arec.unreachable, "unreachable"); id != 9 {
		t.Fatalf("unreachable %d", id)
	}
	if s := recv(t, arec.snaps, "snapshot failure"); s != raft.SnapshotFailure {
		t.Fatalf("snapshot status %v", s)
	}
}

func TestTCPRejectsWrongClusterAndMember(t *testing.T) {
	b, brec := newTCP(t, 2, 7, 0)
	for _, tt := range []struct {
		name        string
		id, cluster uint64
		to          uint64
	}{
		{"other cluster", 1, 8, 2},
		{"wrong member", 1, 7, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, arec := newTCP(t, tt.id, tt.cluster, 0)
			a.AddPeer(tt.to, b.Addr().String())
			a.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: tt.id, To: tt.to}})
			if id := recv(t, arec.unreachable, "unreachable"); id != tt.to {
				t.Fatalf("unreachable %d", id)
			}
			c, err := a.dial(&tcpPeer{id: tt.to, addr: b.Addr().String(), ctx: context.Background()})
			if !errors.Is(err, ErrHandshake) {
				t.Fatalf("dial: %v, %v", c, err)
			}
			select {
			case m := <-brec.msgs:
				t.Fatalf("delivered %v", m)
			default:
			}
		})
	}
}

// rawConn performs a valid handshake with tr by hand.
func rawConn(t *testing.T, tr *TCPTransport, from uint64) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", tr.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var hello [helloLen]byte
	copy(hello[:], helloMagic)
	binary.BigEndian.PutUint32(hello[8:], helloVersion)
	binary.BigEndian.PutUint64(hello[12:], tr.cfg.ClusterID)
	binary.BigEndian.PutUint64(hello[20:], from)
	binary.BigEndian.PutUint64(hello[28:], tr.cfg.ID)
	if err := writeFrame(c, hello[:]); err != nil {
		t.Fatal(err)
	}
	ack, err := readFrame(c, nil, maxControlFrame)
	if err != nil || ack[0] != ackOK {
		t.Fatalf("handshake: %q %v", ack, err)
	}
	return c
}

func TestTCPClosesOnBadFrames(t *testing.T) {
	b, brec := newTCP(t, 2, 7, 1<<10)
	for _, tt := range []struct {
		name  string
		frame func() []byte
	}{
		{"oversized length", func() []byte { return binary.BigEndian.AppendUint32(nil, 1<<10+1) }},
		{"garbage", func() []byte { return append(binary.BigEndian.AppendUint32(nil, 3), 0xff, 0xff, 0xff) }},
		{"spoofed sender", func() []byte {
			m := raftpb.Message{Type: raftpb.MsgHeartbeat, From: 3, To: 2}
			d, _ := m.Marshal()
			return append(binary.BigEndian.AppendUint32(nil, uint32(len(d))), d...)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := rawConn(t, b, 1)
			if _, err := c.Write(tt.frame()); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(waitTimeout))
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Fatalf("connection not closed: %v", err)
			}
			select {
			case m := <-brec.msgs:
				t.Fatalf("delivered %v", m)
			default:
			}
		})
	}
}

// A message too large for the peer's limit is dropped by the sender, and
// a snapshot among them reported failed; the connection keeps working.
func TestTCPDropsOversizedMessages(t *testing.T) {
	a, arec := newTCP(t, 1, 7, 1<<10)
	b, brec := newTCP(t, 2, 7, 1<<10)
	a.AddPeer(2, b.Addr().String())
	a.Send([]raftpb.Message{
		{Type: raftpb.MsgSnap, From: 1, To: 2, Snapshot: &raftpb.Snapshot{Data: make([]byte, 2<<10), Metadata: raftpb.SnapshotMetadata{Index: 1}}},
		{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 4},
	})
	if s := recv(t, arec.snaps, "snapshot status"); s != raft.SnapshotFailure {
		t.Fatalf("snapshot status %v", s)
	}
	if m := recv(t, brec.msgs, "heartbeat"); m.Type != raftpb.MsgHeartbeat || m.Term != 4 {
		t.Fatalf("got %v", m)
	}
}
