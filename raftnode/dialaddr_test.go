package raftnode

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// forwarder is a TCP proxy to one address that counts what it carries.
type forwarder struct {
	ln     net.Listener
	target string
	conns  atomic.Int64 // connections accepted
	bytes  atomic.Int64 // bytes carried, both ways
	wg     sync.WaitGroup
	mu     sync.Mutex // guards open
	open   []net.Conn
}

func newForwarder(t *testing.T, target string) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{ln: ln, target: target}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *forwarder) addr() string { return f.ln.Addr().String() }

func (f *forwarder) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.conns.Add(1)
		up, err := net.Dial("tcp", f.target)
		if err != nil {
			c.Close()
			continue
		}
		f.mu.Lock()
		f.open = append(f.open, c, up)
		f.mu.Unlock()
		f.wg.Add(2)
		go f.pipe(c, up)
		go f.pipe(up, c)
	}
}

func (f *forwarder) pipe(from, to net.Conn) {
	defer f.wg.Done()
	n, _ := io.Copy(to, from)
	f.bytes.Add(n)
	to.Close()
	from.Close()
}

func (f *forwarder) close() {
	f.ln.Close()
	f.mu.Lock()
	for _, c := range f.open {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// TCPConfig.DialAddr routes every connection a member dials to a peer —
// raft messages, snapshot streams — and ProbeVia a probe, through another
// address, while the peer is still known by its own.
func TestTCPDialAddr(t *testing.T) {
	b, brec := newTCP(t, 2, 7, 0)
	fwd := newForwarder(t, b.Addr().String())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards asked
	var asked []string
	a, err := NewTCPTransport(TCPConfig{ID: 1, ClusterID: 7, Listener: ln, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		DialAddr: func(id uint64, addr string) string {
			mu.Lock()
			asked = append(asked, addr)
			mu.Unlock()
			if id == 2 {
				return fwd.addr()
			}
			return addr
		}})
	if err != nil {
		t.Fatal(err)
	}
	arec := newRecorder()
	if err := a.Start(arec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	a.AddPeer(2, b.Addr().String())

	a.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 3}})
	if m := recv(t, brec.msgs, "heartbeat"); m.Type != raftpb.MsgHeartbeat || m.Term != 3 {
		t.Fatalf("got %v", m)
	}
	data := bytes.Repeat([]byte("s"), 3<<20)
	a.SendSnapshot(raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: 2, Term: 3, Snapshot: &raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 9, Term: 3}}},
		io.NopCloser(bytes.NewReader(data)), int64(len(data)))
	if m := recv(t, brec.msgs, "snapshot"); m.Type != raftpb.MsgSnap || len(m.Snapshot.Data) != len(data) {
		t.Fatalf("got %v", m.Type)
	}
	if s := recv(t, arec.snaps, "snapshot status"); s != raft.SnapshotFinish {
		t.Fatalf("snapshot status %v", s)
	}
	if got := fwd.conns.Load(); got < 2 {
		t.Fatalf("the forwarder carried %d connections, want the raft one and the snapshot stream", got)
	}
	mu.Lock()
	for _, addr := range asked {
		if addr != b.Addr().String() {
			t.Errorf("DialAddr was asked for %q, not the peer's address", addr)
		}
	}
	mu.Unlock()

	// A probe through the forwarder.
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewTCPTransport(TCPConfig{Listener: pln, Probe: func(req []byte, _ *tls.ConnectionState) []byte { return append([]byte("echo "), req...) }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	p.Listen()
	pfwd := newForwarder(t, pln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if ans, err := ProbeVia(ctx, pfwd.addr(), pln.Addr().String(), nil, []byte("hi")); err != nil || string(ans) != "echo hi" {
		t.Fatalf("probe: %q, %v", ans, err)
	}
	if pfwd.conns.Load() != 1 {
		t.Fatal("the probe did not go through the forwarder")
	}
	// Closing the connections makes the pipes count their bytes.
	fwd.close()
	if n := fwd.bytes.Load(); n < int64(len(data)) {
		t.Fatalf("the forwarder carried %d bytes, less than the snapshot", n)
	}
}
