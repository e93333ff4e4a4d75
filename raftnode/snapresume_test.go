package raftnode

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/storage"
)

// resumingRecorder is a Handler that keeps what a broken snapshot stream
// delivered, as the storage's partial file does.
type resumingRecorder struct {
	*recorder
	badCRC atomic.Bool // HeldSnapshot lies about the held bytes' CRC once

	ended chan int64 // each receive's held bytes when it ended (buffered)

	mu    sync.Mutex // guards index, held, offs
	index uint64     // the snapshot held is for
	held  []byte
	offs  []int64 // the offset of every stream, in order
}

func (r *resumingRecorder) HeldSnapshot(m raftpb.Message) (int64, uint32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.index != m.Snapshot.Metadata.Index {
		r.held = nil
	}
	sum := crc32.Checksum(r.held, snapCRCTable)
	if r.badCRC.CompareAndSwap(true, false) {
		sum ^= 1
	}
	return int64(len(r.held)), sum, nil
}

func (r *resumingRecorder) ProcessSnapshot(ctx context.Context, m raftpb.Message, data io.Reader) error {
	return r.ResumeSnapshot(ctx, m, 0, data)
}

func (r *resumingRecorder) ResumeSnapshot(ctx context.Context, m raftpb.Message, off int64, data io.Reader) error {
	r.mu.Lock()
	r.offs = append(r.offs, off)
	if off != int64(len(r.held)) || (off > 0 && r.index != m.Snapshot.Metadata.Index) {
		r.mu.Unlock()
		return errors.New("resumed at an offset not held")
	}
	r.index = m.Snapshot.Metadata.Index
	buf := bytes.NewBuffer(r.held)
	r.mu.Unlock()
	_, err := io.Copy(buf, data)
	r.mu.Lock()
	r.held = buf.Bytes()
	if errors.Is(err, storage.ErrStreamCorrupt) {
		r.held = nil
	}
	whole := r.held
	if err == nil {
		r.held = nil
	}
	r.ended <- int64(len(r.held))
	r.mu.Unlock()
	if err != nil {
		return err
	}
	snap := *m.Snapshot
	snap.Data = whole
	m.Snapshot = &snap
	return r.Process(ctx, m)
}

// cutProxy forwards connections to to; the first connection that carries
// more than cut bytes towards to is cut there. It counts the bytes of
// every connection.
type cutProxy struct {
	ln  net.Listener
	to  string
	cut int64

	mu      sync.Mutex // guards sent, cutConn, open, closed
	sent    []int64    // bytes towards to, per connection
	cutConn int        // the connection cut (-1: none yet)
	open    []net.Conn // every connection, either side
	closed  bool
	conns   sync.WaitGroup
}

func newCutProxy(t *testing.T, to string, cut int64) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, to: to, cut: cut, cutConn: -1}
	go p.run()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		p.closed = true
		for _, c := range p.open {
			c.Close()
		}
		p.mu.Unlock()
		p.conns.Wait()
	})
	return p
}

func (p *cutProxy) run() {
	for i := 0; ; i++ {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.sent = append(p.sent, 0)
		p.mu.Unlock()
		p.conns.Add(1)
		go p.forward(i, c)
	}
}

func (p *cutProxy) forward(i int, c net.Conn) {
	defer p.conns.Done()
	defer c.Close()
	up, err := net.Dial("tcp", p.to)
	if err != nil {
		return
	}
	defer up.Close()
	p.mu.Lock()
	p.open = append(p.open, c, up)
	if p.closed {
		c.Close()
	}
	p.mu.Unlock()
	go func() { io.Copy(c, up); c.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.sent[i] += int64(n)
			over := (p.cutConn == -1 || p.cutConn == i) && p.sent[i] > p.cut
			if over {
				p.cutConn = i
			}
			p.mu.Unlock()
			if over {
				return // the first connection breaks here
			}
			if _, err := up.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// bytes returns the bytes sent towards to on each connection, and their
// sum over the connections after the cut one.
func (p *cutProxy) bytes() (sent []int64, afterCut int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, n := range p.sent {
		if p.cutConn >= 0 && i > p.cutConn {
			afterCut += n
		}
	}
	return append([]int64(nil), p.sent...), afterCut
}

func newResumingTCP(t *testing.T, id uint64, old bool) (*TCPTransport, *resumingRecorder) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTCPTransport(TCPConfig{ID: id, ClusterID: 7, Listener: ln, MaxFrameBytes: 1 << 10,
		BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond, oldSnapStreams: old})
	if err != nil {
		t.Fatal(err)
	}
	rec := &resumingRecorder{recorder: newRecorder(), ended: make(chan int64, 10)}
	if err := tr.Start(rec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	return tr, rec
}

func snapData(n int) []byte {
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*13 + i>>11)
	}
	return data
}

func snapMsg(index uint64) raftpb.Message {
	return raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: 2, Term: 3,
		Snapshot: &raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: index, Term: 3}}}
}

// A stream cut in the middle is resumed by the next one: it carries only
// what the receiver lacks, and the receiver ends with the whole data.
func TestTCPSnapshotStreamResumes(t *testing.T) {
	dst, rec := newResumingTCP(t, 2, false)
	src, srec := newTCP(t, 1, 7, 1<<10)
	data := snapData(6*snapChunk + 4321)
	proxy := newCutProxy(t, dst.Addr().String(), int64(4*snapChunk))
	src.AddPeer(2, proxy.ln.Addr().String())
	m := snapMsg(9)

	src.SendSnapshot(m, io.NopCloser(bytes.NewReader(data)), int64(len(data)))
	if s := recv(t, srec.snaps, "the first stream's outcome"); s != raft.SnapshotFailure {
		t.Fatalf("a stream cut in the middle reported %v", s)
	}
	// The receiver keeps what it read before the break. (Waiting for it
	// keeps the test exact: a new stream would close the old one and drop
	// what its socket still buffers.)
	if held := recv(t, rec.ended, "the receiver to see the break"); held < int64(2*snapChunk) {
		t.Fatalf("the receiver kept %d bytes of the first stream", held)
	}
	src.SendSnapshot(m, io.NopCloser(bytes.NewReader(data)), int64(len(data)))
	if s := recv(t, srec.snaps, "the second stream's outcome"); s != raft.SnapshotFinish {
		t.Fatalf("the resumed stream reported %v", s)
	}
	got := recv(t, rec.msgs, "the snapshot")
	if !bytes.Equal(got.Snapshot.Data, data) {
		t.Fatalf("received %d bytes, not the %d sent", len(got.Snapshot.Data), len(data))
	}
	rec.mu.Lock()
	offs := append([]int64(nil), rec.offs...)
	rec.mu.Unlock()
	sent, after := proxy.bytes()
	t.Logf("stream offsets %v, bytes per connection %v", offs, sent)
	if len(offs) != 2 || offs[0] != 0 || offs[1] < int64(2*snapChunk) {
		t.Fatalf("stream offsets %v: the second stream did not resume", offs)
	}
	if missing := int64(len(data)) - offs[1]; after > missing+64<<10 {
		t.Fatalf("bytes per connection %v: %d bytes went after the cut, for the %d bytes missing", sent, after, missing)
	}
}

// A held part that does not match the sender's data fails the stream's
// checksum and is dropped; the next stream starts from zero and succeeds.
func TestTCPSnapshotResumeBadHeldData(t *testing.T) {
	dst, rec := newResumingTCP(t, 2, false)
	src, srec := newTCP(t, 1, 7, 1<<10)
	data := snapData(4*snapChunk + 10)
	proxy := newCutProxy(t, dst.Addr().String(), int64(2*snapChunk+100))
	src.AddPeer(2, proxy.ln.Addr().String())
	m := snapMsg(11)
	src.SendSnapshot(m, io.NopCloser(bytes.NewReader(data)), int64(len(data)))
	recv(t, srec.snaps, "the first stream's outcome")
	if held := recv(t, rec.ended, "the receiver to see the break"); held == 0 {
		t.Fatal("the receiver kept nothing of the first stream")
	}
	rec.badCRC.Store(true)
	src.SendSnapshot(m, io.NopCloser(bytes.NewReader(data)), int64(len(data)))
	if s := recv(t, srec.snaps, "the second stream's outcome"); s != raft.SnapshotFailure {
		t.Fatalf("a stream over a bad held part reported %v", s)
	}
	src.SendSnapshot(m, io.NopCloser(bytes.NewReader(data)), int64(len(data)))
	if s := recv(t, srec.snaps, "the third stream's outcome"); s != raft.SnapshotFinish {
		t.Fatalf("the stream after a dropped held part reported %v", s)
	}
	got := recv(t, rec.msgs, "the snapshot")
	rec.mu.Lock()
	offs := append([]int64(nil), rec.offs...)
	rec.mu.Unlock()
	if !bytes.Equal(got.Snapshot.Data, data) || len(offs) != 3 || offs[1] == 0 || offs[2] != 0 {
		t.Fatalf("received %d bytes (want %d), offsets %v", len(got.Snapshot.Data), len(data), offs)
	}
}

// Members of the version before resumable streams and members after it
// send each other snapshots: the new sender falls back to the old stream.
func TestTCPSnapshotStreamMixedVersions(t *testing.T) {
	for _, tc := range []struct {
		name             string
		oldSrc, oldDst   bool
		wantResumedFirst bool
	}{
		{name: "new to old", oldDst: true},
		{name: "old to new", oldSrc: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst, rec := newResumingTCP(t, 2, tc.oldDst)
			src, _ := newResumingTCP(t, 1, tc.oldSrc)
			srec := src.h.(*resumingRecorder)
			src.AddPeer(2, dst.Addr().String())
			data := snapData(2*snapChunk + 5)
			src.SendSnapshot(snapMsg(5), io.NopCloser(bytes.NewReader(data)), int64(len(data)))
			if s := recv(t, srec.snaps, "the outcome"); s != raft.SnapshotFinish {
				t.Fatalf("reported %v", s)
			}
			if got := recv(t, rec.msgs, "the snapshot"); !bytes.Equal(got.Snapshot.Data, data) {
				t.Fatalf("received %d bytes, not %d", len(got.Snapshot.Data), len(data))
			}
		})
	}
}
