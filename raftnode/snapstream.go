package raftnode

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Snapshot streams. A snapshot travels on a connection of its own, not on
// the peer's raft connection, so heartbeats and appends to that member go
// on meanwhile and no message size bounds it. The dialer's hello is the
// raft hello with magic "zkgosnap" (the same checks: cluster, sender,
// receiver); then the dialer writes:
//
//	frame: the MsgSnap, marshalled, without its data (at most 1 MiB)
//	frames: the data, in chunks of at most snapChunk bytes
//	frame: empty (the end of the data)
//	frame: CRC-32C (Castagnoli) of the data, 4 bytes big-endian
//
// and the receiver answers one frame: a status byte (0: taken) and a
// reason. The receiver stores the data as it arrives (Handler.
// ProcessSnapshot) and refuses it if the checksum does not match. Every
// read and write has a deadline (WriteTimeout per chunk); memory on both
// sides is one chunk.

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
	err := t.sendSnapshot(m, addr, data)
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

func (t *TCPTransport) sendSnapshot(m raftpb.Message, addr string, data io.Reader) error {
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
	c, err := t.dialAs(t.ctx, addr, m.To, snapMagic)
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
	crc := crc32.New(snapCRCTable)
	buf := make([]byte, snapChunk)
	for {
		n, rerr := io.ReadFull(data, buf)
		if n > 0 {
			crc.Write(buf[:n])
			deadline()
			if err := writeFrameTo(bw, buf[:n]); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("reading the snapshot: %w", rerr)
		}
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc.Sum32())
	deadline()
	if err := writeFrameTo(bw, nil); err != nil {
		return err
	}
	if err := writeFrameTo(bw, sum[:]); err != nil {
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
// answers it.
func (t *TCPTransport) receiveSnapshot(c net.Conn, from uint64, log *slog.Logger) {
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
	cr := &chunkReader{r: br, c: c, timeout: t.cfg.WriteTimeout, crc: crc32.New(snapCRCTable)}
	err = t.h.ProcessSnapshot(t.ctx, m, cr)
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

// chunkReader reads the data frames of a snapshot stream, checking the
// CRC at their end.
type chunkReader struct {
	r       *bufio.Reader
	c       net.Conn
	timeout time.Duration
	crc     hash.Hash32
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
			case len(sum) != 4 || binary.BigEndian.Uint32(sum) != cr.crc.Sum32():
				cr.err = errors.New("snapshot stream: checksum mismatch")
			default:
				cr.done, cr.err = true, io.EOF
			}
			return 0, cr.err
		}
		cr.crc.Write(frame)
		cr.buf = frame
	}
	n := copy(p, cr.buf)
	cr.buf = cr.buf[n:]
	return n, nil
}
