package raftnode

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// A member that has not started raft answers probes (with no cluster id
// check), refuses raft connections until Start, and learns its identity
// with SetIdentity; a member without a Probe handler refuses probes.
func TestTCPProbeBeforeStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTCPTransport(TCPConfig{Listener: ln, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		Probe: func(req []byte, _ *tls.ConnectionState) []byte { return append([]byte("echo "), req...) }})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Stop()
	tr.Listen()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ans, err := Probe(ctx, ln.Addr().String(), nil, []byte("hello"))
	if err != nil || string(ans) != "echo hello" {
		t.Fatalf("probe: %q, %v", ans, err)
	}
	if _, err := Probe(ctx, ln.Addr().String(), nil, make([]byte, MaxProbeBytes+1)); err == nil {
		t.Fatal("an oversized probe was sent")
	}

	// A raft peer is refused until Start.
	peer, rec := newTCP(t, 2, 7, 0)
	peer.AddPeer(1, ln.Addr().String())
	peer.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 2, To: 1}})
	select {
	case <-rec.unreachable:
	case <-ctx.Done():
		t.Fatal("a connection to a member that has not started was not refused")
	}
	got := newRecorder()
	tr.SetIdentity(1, 7)
	if err := tr.Start(got); err != nil {
		t.Fatal(err)
	}
	for {
		peer.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 2, To: 1}})
		select {
		case m := <-got.msgs:
			if m.From != 2 {
				t.Fatalf("got %+v", m)
			}
			// Probes are still answered once raft runs.
			if ans, err := Probe(ctx, ln.Addr().String(), nil, []byte("again")); err != nil || string(ans) != "echo again" {
				t.Fatalf("probe after Start: %q, %v", ans, err)
			}
			return
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no message delivered after Start")
		}
	}
}

func TestTCPProbeRefusedWithoutHandler(t *testing.T) {
	tr, _ := newTCP(t, 1, 7, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Probe(ctx, tr.Addr().String(), nil, []byte("x"))
	if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "probe") {
		t.Fatalf("probe of a member without a handler: %v", err)
	}
}

// Resolve gives the address of a member that was never added.
func TestTCPResolve(t *testing.T) {
	dst, rec := newTCP(t, 2, 7, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewTCPTransport(TCPConfig{ID: 1, ClusterID: 7, Listener: ln,
		Resolve: func(id uint64) (string, bool) { return dst.Addr().String(), id == 2 }})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Start(newRecorder()); err != nil {
		t.Fatal(err)
	}
	defer src.Stop()
	src.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 1, To: 2}})
	select {
	case m := <-rec.msgs:
		if m.From != 1 {
			t.Fatalf("got %+v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered to a resolved member")
	}
}

// A snapshot streamed on a connection of its own arrives whole (several
// chunks), and the sender learns it was taken; a stream whose checksum
// does not match is refused.
func TestTCPSnapshotStream(t *testing.T) {
	dst, rec := newTCP(t, 2, 7, 1<<10) // raft frames are capped at 1 KiB: the snapshot is not one
	src, srec := newTCP(t, 1, 7, 1<<10)
	src.AddPeer(2, dst.Addr().String())
	data := make([]byte, 3*snapChunk+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	m := raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: 2, Term: 3,
		Snapshot: &raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 9, Term: 3}}}
	src.SendSnapshot(m, io.NopCloser(bytes.NewReader(data)), int64(len(data)))
	got := recv(t, rec.msgs, "snapshot")
	if got.Type != raftpb.MsgSnap || !bytes.Equal(got.Snapshot.Data, data) || got.Snapshot.Metadata.Index != 9 {
		t.Fatalf("got %v with %d bytes", got.Type, len(got.Snapshot.Data))
	}
	if s := <-srec.snaps; s != raft.SnapshotFinish {
		t.Fatalf("sender told %v", s)
	}
}

func TestChunkReaderChecksum(t *testing.T) {
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	writeFrameTo(bw, []byte("hello"))
	writeFrameTo(bw, nil)
	writeFrameTo(bw, []byte{0, 0, 0, 0}) // wrong CRC
	bw.Flush()
	a, c := net.Pipe()
	defer a.Close()
	defer c.Close()
	cr := &chunkReader{r: bufio.NewReader(&b), c: c, timeout: time.Second, size: -1}
	if _, err := io.ReadAll(cr); err == nil || !strings.Contains(err.Error(), "checksum") || cr.done {
		t.Fatalf("a bad checksum read as %v", err)
	}
}
