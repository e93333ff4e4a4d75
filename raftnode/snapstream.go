package raftnode

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/storage"
)

// Snapshot streams. A snapshot travels on a connection of its own, not on
// the peer's raft connection, so heartbeats and appends to that member go
// on meanwhile and no message size bounds it. The dialer's hello is the
// raft hello with magic "zkgosnp2" (the same checks: cluster, sender,
// receiver); then:
//
//	dialer:   frame: the MsgSnap, marshalled, without its data (at most 1 MiB)
//	dialer:   frame: the data's length, 8 bytes big-endian
//	receiver: frame: how many bytes of the data it holds already from a
//	          broken stream of the same snapshot, 8 bytes (0: none)
//	dialer:   frames: the data after those bytes, in chunks of at most
//	          snapChunk bytes
//	dialer:   frame: empty (the end of the data)
//	dialer:   frame: CRC-32C (Castagnoli) of the whole data, 4 bytes
//	receiver: frame: a status byte (0: taken) and a reason
//
// The dialer reads the skipped bytes from its file too, to checksum the
// whole data; the receiver continues the CRC of what it held (SnapshotResumer)
// over the new bytes, so a damaged partial file fails the check and is
// dropped, and the next stream starts from zero. The receiver stores the
// data as it arrives (Handler.ProcessSnapshot / SnapshotResumer.
// ResumeSnapshot). Every read and write has a deadline (WriteTimeout per
// chunk); memory on both sides is one chunk. A new stream from a peer
// closes that peer's older one, which a broken connection may have left
// waiting for its read deadline.
//
// Members before resumable streams know only magic "zkgosnap": the same
// without the two length frames. They refuse the new hello as a bad hello,
// and the dialer then sends them the old stream; such a stream, received,
// starts from zero.

const (
	snapChunk      = 1 << 20
	maxSnapMsgSize = 1 << 20
	// snapAckTimeout bounds the wait for the receiver's answer after the
	// last byte: it fsyncs the file and steps the snapshot into raft.
	snapAckTimeout = 2 * time.Minute
)

var snapCRCTable = crc32.MakeTable(crc32.Castagnoli)

// SendSnapshot implements SnapshotStreamer.
func (t *TCPTransport) SendSnapshot(m raftpb.Message, data io.ReadCloser, size int64) {
	defer data.Close()
	t.mu.Lock()
	h := t.h
	p := t.peers[m.To]
	addr := ""
	if p != nil {
		addr = p.addr
	} else if t.cfg.Resolve != nil {
		addr, _ = t.cfg.Resolve(m.To)
	}
	stopped := t.stopped
	if !stopped {
		t.wg.Add(1)
	}
	t.mu.Unlock()
	if stopped {
		return
	}
	defer t.wg.Done()
	start := time.Now()
	err := t.sendSnapshot(m, addr, data, size)
	log := t.log.With("peer", m.To, "index", m.Snapshot.Metadata.Index, "bytes", size)
	if err != nil {
		log.Warn("raftnode: sending a snapshot failed", "err", err)
		h.ReportUnreachable(m.To)
		h.ReportSnapshot(m.To, raft.SnapshotFailure)
		return
	}
	log.Info("raftnode: snapshot sent", "took", time.Since(start).Round(time.Millisecond))
	h.ReportSnapshot(m.To, raft.SnapshotFinish)
}

func (t *TCPTransport) sendSnapshot(m raftpb.Message, addr string, data io.Reader, size int64) error {
	if addr == "" {
		return fmt.Errorf("no address for member %x", m.To)
	}
	bare := *m.Snapshot
	bare.Data = nil
	m.Snapshot = &bare
	mb, err := m.Marshal()
	if err != nil {
		return err
	}
	if len(mb) > maxSnapMsgSize {
		return fmt.Errorf("snapshot message of %d bytes", len(mb))
	}
	resumable, magic := true, snapMagic2
	if t.cfg.oldSnapStreams {
		resumable, magic = false, snapMagic
	}
	c, err := t.dialAs(t.ctx, addr, m.To, magic)
	if resumable && badHello(err) {
		// A member from before resumable streams.
		resumable = false
		c, err = t.dialAs(t.ctx, addr, m.To, snapMagic)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(t.ctx, func() { c.Close() }) // unblocks the stream on Stop
	defer stop()
	bw := bufio.NewWriterSize(c, 64<<10)
	deadline := func() { c.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout)) }
	deadline()
	if err := writeFrameTo(bw, mb); err != nil {
		return err
	}
	var skip int64 // bytes the receiver holds
	if resumable {
		var sz [8]byte
		binary.BigEndian.PutUint64(sz[:], uint64(size))
		if err := writeFrameTo(bw, sz[:]); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		// The receiver reads what it holds to checksum it first.
		c.SetReadDeadline(time.Now().Add(snapAckTimeout))
		held, err := readFrame(c, nil, 8)
		if err != nil {
			return fmt.Errorf("waiting for the receiver's offset: %w", err)
		}
		if len(held) != 8 || binary.BigEndian.Uint64(held) > uint64(size) {
			return fmt.Errorf("the receiver holds %x bytes of %d", held, size)
		}
		skip = int64(binary.BigEndian.Uint64(held))
		if skip > 0 {
			t.log.Info("raftnode: resuming a snapshot stream", "peer", m.To, "index", m.Snapshot.Metadata.Index,
				"held", skip, "bytes", size)
		}
	}
	var sum uint32
	buf := make([]byte, snapChunk)
	var pos int64 // bytes of data read
	for {
		n, rerr := io.ReadFull(data, buf)
		if n > 0 {
			sum = crc32.Update(sum, snapCRCTable, buf[:n])
			if send := buf[max(0, min(int64(n), skip-pos)):n]; len(send) > 0 {
				deadline()
				if err := writeFrameTo(bw, send); err != nil {
					return err
				}
			}
			pos += int64(n)
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("reading the snapshot: %w", rerr)
		}
	}
	if pos != size {
		return fmt.Errorf("the snapshot file holds %d bytes of data, not %d", pos, size)
	}
	var crc [4]byte
	binary.BigEndian.PutUint32(crc[:], sum)
	deadline()
	if err := writeFrameTo(bw, nil); err != nil {
		return err
	}
	if err := writeFrameTo(bw, crc[:]); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(snapAckTimeout))
	ack, err := readFrame(c, nil, maxControlFrame)
	if err != nil {
		return fmt.Errorf("waiting for the receiver: %w", err)
	}
	if len(ack) == 0 || ack[0] != ackOK {
		return fmt.Errorf("the receiver refused the snapshot: %q", ack[min(1, len(ack)):])
	}
	return nil
}

// writeFrameTo writes one frame (length, then bytes) into bw.
func writeFrameTo(bw *bufio.Writer, b []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := bw.Write(hdr[:]); err != nil {
		return err
	}
	_, err := bw.Write(b)
	return err
}

// receiveSnapshot reads one snapshot stream (after the handshake) and
// answers it; resumable is the stream of magic snapMagic2.
func (t *TCPTransport) receiveSnapshot(c net.Conn, from uint64, resumable bool, log *slog.Logger) {
	t.supersedeSnapStream(from, c)
	defer t.endSnapStream(from, c)
	br := bufio.NewReaderSize(c, 64<<10)
	c.SetReadDeadline(time.Now().Add(t.cfg.WriteTimeout))
	frame, err := readFrame(br, nil, maxSnapMsgSize)
	if err != nil {
		log.Info("raftnode: snapshot stream closed", "err", err)
		return
	}
	var m raftpb.Message
	if err := m.Unmarshal(frame); err != nil || m.Type != raftpb.MsgSnap || m.Snapshot == nil || m.From != from || m.To != t.id.Load() {
		log.Warn("raftnode: not a snapshot for this member on a snapshot stream; closing", "err", err)
		return
	}
	cr := &chunkReader{r: br, c: c, timeout: t.cfg.WriteTimeout, size: -1}
	// One receive at a time: the storage keeps one partial file.
	t.snapRecvMu.Lock()
	defer t.snapRecvMu.Unlock()
	resumer, _ := t.h.(SnapshotResumer)
	if resumable {
		frame, err := readFrame(br, nil, 8)
		if err != nil || len(frame) != 8 || binary.BigEndian.Uint64(frame) > 1<<62 {
			log.Warn("raftnode: bad snapshot stream: no data length; closing", "err", err)
			return
		}
		cr.size = int64(binary.BigEndian.Uint64(frame))
		if resumer != nil {
			off, sum, err := resumer.HeldSnapshot(m)
			if err != nil {
				log.Warn("raftnode: reading a partial snapshot", "err", err)
				off, sum = 0, 0
			}
			if off > cr.size {
				off, sum = 0, 0
			}
			cr.off, cr.n, cr.sum = off, off, sum
		}
		var held [8]byte
		binary.BigEndian.PutUint64(held[:], uint64(cr.off))
		c.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
		if err := writeFrame(c, held[:]); err != nil {
			log.Info("raftnode: snapshot stream closed", "err", err)
			return
		}
	}
	if cr.off > 0 {
		err = resumer.ResumeSnapshot(t.ctx, m, cr.off, cr)
	} else {
		err = t.h.ProcessSnapshot(t.ctx, m, cr)
	}
	if err == nil && !cr.done {
		err = errors.New("the snapshot was not read to its end")
	}
	status := []byte{ackOK}
	if err != nil {
		status = append([]byte{ackBadHello}, err.Error()...)
		if len(status) > maxControlFrame {
			status = status[:maxControlFrame]
		}
	}
	c.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
	writeFrame(c, status)
}

// supersedeSnapStream records c as from's current snapshot stream and
// closes the one before it: the sender has one snapshot in flight per
// member, so an older stream is one whose connection broke.
func (t *TCPTransport) supersedeSnapStream(from uint64, c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.snapStreams[from]; old != nil {
		old.Close()
	}
	if t.snapStreams == nil {
		t.snapStreams = make(map[uint64]net.Conn)
	}
	t.snapStreams[from] = c
}

// endSnapStream forgets c as from's current stream.
func (t *TCPTransport) endSnapStream(from uint64, c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.snapStreams[from] == c {
		delete(t.snapStreams, from)
	}
}

// chunkReader reads the data frames of a snapshot stream, checking the
// length and CRC at their end.
type chunkReader struct {
	r       *bufio.Reader
	c       net.Conn
	timeout time.Duration
	size    int64  // the data's length (-1: not told, an old stream)
	off     int64  // bytes held before this stream
	n       int64  // bytes of data so far, off included
	sum     uint32 // CRC-32C of the data so far, off included
	buf     []byte // the current chunk's unread part
	chunk   []byte // reused frame buffer
	done    bool   // the end and a matching CRC were read
	err     error  // sticky
}

func (cr *chunkReader) Read(p []byte) (int, error) {
	for len(cr.buf) == 0 {
		if cr.err != nil {
			return 0, cr.err
		}
		cr.c.SetReadDeadline(time.Now().Add(cr.timeout))
		frame, err := readFrame(cr.r, cr.chunk, snapChunk)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			cr.err = fmt.Errorf("snapshot stream: %w", err)
			return 0, cr.err
		}
		cr.chunk = frame[:cap(frame)]
		if len(frame) == 0 {
			sum, err := readFrame(cr.r, nil, 4)
			switch {
			case err != nil:
				cr.err = fmt.Errorf("snapshot stream: checksum: %w", err)
			case len(sum) != 4 || binary.BigEndian.Uint32(sum) != cr.sum:
				cr.err = fmt.Errorf("%w (%d bytes held before this stream)", storage.ErrStreamCorrupt, cr.off)
			case cr.size >= 0 && cr.n != cr.size:
				cr.err = fmt.Errorf("%w: %d bytes of data, the sender said %d", storage.ErrStreamCorrupt, cr.n, cr.size)
			default:
				cr.done, cr.err = true, io.EOF
			}
			return 0, cr.err
		}
		if cr.size >= 0 && cr.n+int64(len(frame)) > cr.size {
			cr.err = fmt.Errorf("%w: more data than the sender said (%d bytes)", storage.ErrStreamCorrupt, cr.size)
			return 0, cr.err
		}
		cr.sum = crc32.Update(cr.sum, snapCRCTable, frame)
		cr.n += int64(len(frame))
		cr.buf = frame
	}
	n := copy(p, cr.buf)
	cr.buf = cr.buf[n:]
	return n, nil
}
