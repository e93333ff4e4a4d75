package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"go.etcd.io/raft/v3/raftpb"
)

// Snapshots of any size. A snapshot's data is never needed whole in
// memory to send or to receive one: OpenSnapshotData streams it out of its
// file, checking the file's CRC as it goes, and ReceiveSnapshot streams
// one in from the network into a temporary file, which SaveSnapshot then
// installs when raft hands over the snapshot with ReceivedMarker as its
// data.

// ReceivedMarker is the data of a snapshot whose real data ReceiveSnapshot
// has stored: SaveSnapshot installs that file instead of writing the
// marker, and OpenSnapshotData reads it back.
var ReceivedMarker = []byte("zkgo: snapshot data received into a file")

// IsReceived reports whether data is ReceivedMarker.
func IsReceived(data []byte) bool { return bytes.Equal(data, ReceivedMarker) }

// OpenSnapshotData opens the data of the snapshot (index, term) for
// reading, with its size. The reader checks the file's lengths before it
// returns and its CRC at the end: a damaged file makes the last Read fail
// rather than return io.EOF. Close it when done.
func (s *Storage) OpenSnapshotData(index, term uint64) (io.ReadCloser, int64, error) {
	if s.mem {
		data, err := s.memSnapshotData(index, term)
		if err != nil {
			return nil, 0, err
		}
		return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
	}
	path := filepath.Join(s.snapDir, snapFileName(index, term))
	r, err := openSnapData(path, s.opts.MaxSnapshotBytes)
	if err != nil {
		return nil, 0, err
	}
	if r.meta.Index != index || r.meta.Term != term {
		r.Close()
		return nil, 0, fmt.Errorf("%w: snapshot file for %d/%d holds %d/%d", ErrCorrupt, index, term, r.meta.Index, r.meta.Term)
	}
	return r, r.dataLen, nil
}

// snapDataReader reads the data section of a snapshot file.
type snapDataReader struct {
	f       *os.File
	br      *bufio.Reader
	crc     hash.Hash32
	meta    raftpb.SnapshotMetadata
	version uint32
	dataLen int64
	left    int64
	err     error // sticky: the end was checked (io.EOF) or failed
}

func openSnapData(path string, maxData int64) (*snapDataReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r := &snapDataReader{f: f, br: bufio.NewReaderSize(f, 1<<16), crc: crc32.New(crcTable)}
	h, err := readSnapHeader(io.TeeReader(r.br, r.crc), fi.Size(), maxData)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	r.meta, r.version, r.dataLen, r.left = h.meta, h.version, h.dataLen, h.dataLen
	return r, nil
}

func (r *snapDataReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.left == 0 {
		r.err = r.finish()
		if r.err == nil {
			r.err = io.EOF
		}
		return 0, r.err
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.br.Read(p)
	r.crc.Write(p[:n])
	r.left -= int64(n)
	if err != nil && r.left > 0 {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		r.err = fmt.Errorf("%w: data: %v", errBadSnapshot, err)
		return n, r.err
	}
	return n, nil
}

// finish reads the trailer and checks it and the CRC.
func (r *snapDataReader) finish() error {
	if r.version == snapVersion {
		var dl [8]byte
		if _, err := io.ReadFull(r.br, dl[:]); err != nil {
			return fmt.Errorf("%w: trailer: %v", errBadSnapshot, err)
		}
		r.crc.Write(dl[:])
		if got := binary.BigEndian.Uint64(dl[:]); got != uint64(r.dataLen) {
			return fmt.Errorf("%w: trailer says %d bytes of data, the file holds %d", errBadSnapshot, got, r.dataLen)
		}
	}
	var trl [4]byte
	if _, err := io.ReadFull(r.br, trl[:]); err != nil {
		return fmt.Errorf("%w: trailer: %v", errBadSnapshot, err)
	}
	if got, sum := binary.BigEndian.Uint32(trl[:]), r.crc.Sum32(); got != sum {
		return fmt.Errorf("%w: crc mismatch: stored %08x, computed %08x", errBadSnapshot, got, sum)
	}
	return nil
}

func (r *snapDataReader) Close() error { return r.f.Close() }

// ReceiveSnapshot stores the data of a snapshot sent by the leader, read
// from r until io.EOF (at most MaxSnapshotBytes), into a temporary file,
// fsynced. Nothing is installed yet: step the snapshot into raft with
// ReceivedMarker as its data, and SaveSnapshot of raft's Ready installs
// this file. A later ReceiveSnapshot replaces one raft did not take. If r
// fails, what it delivered stays in a partial file that a later stream of
// the same snapshot can continue (snappartial.go), unless the failure
// wraps ErrStreamCorrupt.
func (s *Storage) ReceiveSnapshot(meta raftpb.SnapshotMetadata, r io.Reader) (int64, error) {
	return s.ResumeSnapshot(meta, 0, r)
}

// receiveInMemory is ReceiveSnapshot for a memory Storage.
func (s *Storage) receiveInMemory(meta raftpb.SnapshotMetadata, r io.Reader) (int64, error) {
	var buf bytes.Buffer
	dw := &snapDataWriter{w: &buf, limit: s.opts.MaxSnapshotBytes}
	if _, err := io.Copy(dw, r); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = &receivedSnap{meta: meta, data: buf.Bytes()}
	return dw.n, nil
}

// receivedSnap is a snapshot ReceiveSnapshot stored, waiting for raft.
type receivedSnap struct {
	meta raftpb.SnapshotMetadata
	file *snapTemp // fsynced temporary file
	data []byte    // memory Storage
}

// takeReceived returns the received snapshot for meta and forgets it.
// s.mu is held.
func (s *Storage) takeReceived(meta raftpb.SnapshotMetadata) (*receivedSnap, error) {
	rs := s.received
	if rs == nil || rs.meta.Index != meta.Index || rs.meta.Term != meta.Term {
		return nil, fmt.Errorf("%w: snapshot %d/%d was not received into a file", ErrCorrupt, meta.Index, meta.Term)
	}
	s.received = nil
	return rs, nil
}

// checkSnapFile reads the snapshot file at path through to its end,
// checking its lengths and CRC without keeping the data, and returns the
// snapshot's metadata (Data nil).
func checkSnapFile(path string, maxData int64) (*raftpb.Snapshot, error) {
	r, err := openSnapData(path, maxData)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	index, term, ok := parseSnapFileName(filepath.Base(path))
	if !ok || index != r.meta.Index || term != r.meta.Term {
		return nil, fmt.Errorf("%s: %w: name does not match index %d term %d",
			filepath.Base(path), errBadSnapshot, r.meta.Index, r.meta.Term)
	}
	return &raftpb.Snapshot{Metadata: r.meta}, nil
}
