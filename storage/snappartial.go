package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Resumable receives. A snapshot stream that breaks (a connection reset,
// the leader restarting, this member killed) leaves what it delivered in
// a partial file, <snapshot name>.partial: the file's header and metadata,
// then the data received so far, no trailer. The next stream of the same
// snapshot asks HeldSnapshot how much is there and the sender skips it, so
// a 1 GiB transfer cut at 900 MiB sends 100 MiB more, not 1 GiB again.
//
// Nothing in a partial file is trusted: the sender's checksum covers the
// whole data, and the transport checks it against the CRC of the held
// prefix (HeldSnapshot returns it, computed by reading the file) continued
// over the new bytes. A mismatch (a torn or damaged partial file after a
// power loss, say) makes the transport fail the stream with
// ErrStreamCorrupt, which deletes the partial file: the next stream
// starts from zero. One partial file is kept at a time, for the newest
// snapshot a stream brought.

const partialSuffix = ".partial"

// ErrStreamCorrupt is the error a snapshot stream's reader returns (wraps)
// when the data's checksum does not match: ResumeSnapshot then deletes the
// partial file instead of keeping it for a resume.
var ErrStreamCorrupt = errors.New("snapshot stream: checksum mismatch")

// heldPartial is what HeldSnapshot found in the partial file.
type heldPartial struct {
	meta    raftpb.SnapshotMetadata
	n       int64  // bytes of data
	fileCRC uint32 // CRC-32C of the file so far (header, metadata, data)
}

// HeldSnapshot returns how many bytes of the data of the snapshot meta a
// broken stream left in its partial file, and their CRC-32C (Castagnoli);
// 0 when there is none. A partial file of another snapshot, or one whose
// header or metadata do not match meta, is deleted. The transport calls
// it before a resumable stream, then ResumeSnapshot with the n it got.
func (s *Storage) HeldSnapshot(meta raftpb.SnapshotMetadata) (n int64, dataCRC uint32, err error) {
	if s.mem {
		return 0, 0, nil
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return 0, 0, err
	}
	outdated := meta.Index <= s.snapIndex
	s.held = nil
	s.mu.Unlock()
	want := snapFileName(meta.Index, meta.Term) + partialSuffix
	if err := s.removePartials(func(name string) bool { return outdated || name != want }); err != nil {
		return 0, 0, err
	}
	if outdated {
		return 0, 0, nil
	}
	path := filepath.Join(s.snapDir, want)
	held, dataCRC, err := readPartial(path, meta, s.opts.MaxSnapshotBytes)
	if err != nil {
		// Unusable: start over. Only a failure to delete it is an error.
		if !os.IsNotExist(err) {
			s.log.Warn("storage: dropping a partial snapshot file", "file", want, "err", err)
		}
		if rerr := os.Remove(path); rerr != nil && !os.IsNotExist(rerr) {
			return 0, 0, rerr
		}
		return 0, 0, nil
	}
	s.mu.Lock()
	s.held = held
	s.mu.Unlock()
	return held.n, dataCRC, nil
}

// readPartial reads the partial file at path and checks that it is one of
// meta's snapshot, returning its state and the data's CRC-32C.
func readPartial(path string, meta raftpb.SnapshotMetadata, maxData int64) (*heldPartial, uint32, error) {
	mb, err := meta.Marshal()
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	n := fi.Size() - snapHeaderLen - int64(len(mb))
	if n < 0 || n > maxData {
		return nil, 0, fmt.Errorf("%w: partial file of %d bytes", errBadSnapshot, fi.Size())
	}
	br := bufio.NewReaderSize(f, 1<<16)
	fileCRC := crc32.New(crcTable)
	head := make([]byte, snapHeaderLen+len(mb))
	if _, err := io.ReadFull(io.TeeReader(br, fileCRC), head); err != nil {
		return nil, 0, err
	}
	if string(head[:8]) != snapMagic || binary.BigEndian.Uint32(head[8:]) != snapVersion ||
		binary.BigEndian.Uint32(head[12:]) != uint32(len(mb)) || !bytes.Equal(head[snapHeaderLen:], mb) {
		return nil, 0, fmt.Errorf("%w: partial file of another snapshot", errBadSnapshot)
	}
	dataCRC := crc32.New(crcTable)
	if _, err := io.CopyN(io.MultiWriter(fileCRC, dataCRC), br, n); err != nil {
		return nil, 0, err
	}
	return &heldPartial{meta: meta, n: n, fileCRC: fileCRC.Sum32()}, dataCRC.Sum32(), nil
}

// ResumeSnapshot is ReceiveSnapshot for a stream that carries the data of
// the snapshot meta from byte n on, n being what HeldSnapshot returned
// (0: from the start). If r fails, what it delivered stays in the partial
// file for the next stream, unless the failure is ErrStreamCorrupt or the
// snapshot is too large.
func (s *Storage) ResumeSnapshot(meta raftpb.SnapshotMetadata, n int64, r io.Reader) (int64, error) {
	if s.mem {
		if n != 0 {
			return 0, fmt.Errorf("storage: resuming a snapshot at byte %d in memory", n)
		}
		return s.receiveInMemory(meta, r)
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	if meta.Index <= s.snapIndex {
		s.mu.Unlock()
		return 0, raft.ErrSnapOutOfDate
	}
	held := s.held
	s.held = nil
	s.mu.Unlock()
	name := snapFileName(meta.Index, meta.Term)
	path := filepath.Join(s.snapDir, name+partialSuffix)
	var pf *partialFile
	// Refused before the partial file is touched: the stream fails with
	// nothing written (the leader sends the snapshot again later).
	err := s.fault(FaultSnapWrite)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		if err := s.removePartials(func(string) bool { return true }); err != nil {
			return 0, err
		}
		pf, err = createPartial(path, meta)
	} else {
		if held == nil || held.n != n || held.meta.Index != meta.Index || held.meta.Term != meta.Term {
			return 0, fmt.Errorf("storage: no partial snapshot %d/%d of %d bytes to resume", meta.Index, meta.Term, n)
		}
		pf, err = openPartial(path, held)
	}
	if err != nil {
		return 0, err
	}
	dw := &snapDataWriter{w: pf.bw, limit: s.opts.MaxSnapshotBytes, n: n}
	_, err = io.Copy(dw, r)
	if err != nil {
		keep := !errors.Is(err, ErrStreamCorrupt) && !errors.Is(err, ErrSnapshotTooLarge)
		pf.close(keep)
		return 0, err
	}
	sf, err := pf.finish(filepath.Join(s.snapDir, name), dw.n)
	if err != nil {
		return 0, err
	}
	if err := sf.sync(s.fileSteps()); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.received; old != nil && old.file != nil && old.file.tmp != sf.tmp {
		old.file.abort()
	}
	s.received = &receivedSnap{meta: meta, file: sf}
	return sf.size, nil
}

// partialFile is a partial file being written.
type partialFile struct {
	path string
	f    *os.File
	bw   *bufio.Writer // into f and crc
	crc  *crcFrom
}

// crcFrom is a CRC-32C that continues from sum.
type crcFrom struct{ sum uint32 }

func (c *crcFrom) Write(p []byte) (int, error) {
	c.sum = crc32.Update(c.sum, crcTable, p)
	return len(p), nil
}

func (c *crcFrom) Sum32() uint32 { return c.sum }

func createPartial(path string, meta raftpb.SnapshotMetadata) (*partialFile, error) {
	mb, err := meta.Marshal()
	if err != nil {
		return nil, err
	}
	if len(mb) > maxSnapMetaBytes {
		return nil, fmt.Errorf("snapshot metadata is %d bytes, more than %d", len(mb), maxSnapMetaBytes)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	pf := &partialFile{path: path, f: f, crc: &crcFrom{}}
	pf.bw = bufio.NewWriterSize(io.MultiWriter(f, pf.crc), 1<<16)
	var hdr [snapHeaderLen]byte
	copy(hdr[:8], snapMagic)
	binary.BigEndian.PutUint32(hdr[8:], snapVersion)
	binary.BigEndian.PutUint32(hdr[12:], uint32(len(mb)))
	pf.bw.Write(hdr[:])
	pf.bw.Write(mb)
	return pf, nil
}

// openPartial opens the partial file HeldSnapshot read, to append to it.
func openPartial(path string, held *heldPartial) (*partialFile, error) {
	mb, err := held.meta.Marshal()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	end := int64(snapHeaderLen+len(mb)) + held.n
	if fi, err := f.Stat(); err != nil || fi.Size() != end {
		f.Close()
		return nil, fmt.Errorf("storage: the partial snapshot file changed since it was read")
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	pf := &partialFile{path: path, f: f, crc: &crcFrom{sum: held.fileCRC}}
	pf.bw = bufio.NewWriterSize(io.MultiWriter(f, pf.crc), 1<<16)
	return pf, nil
}

// close ends a stream that failed: the file keeps what arrived (keep), or
// is deleted.
func (pf *partialFile) close(keep bool) {
	if keep {
		keep = pf.bw.Flush() == nil
	}
	pf.f.Close()
	if !keep {
		os.Remove(pf.path)
	}
}

// finish writes the trailer and renames the file to final's temporary
// name, ready for snapTemp's sync and install. The file stays open.
func (pf *partialFile) finish(final string, dataLen int64) (*snapTemp, error) {
	var tr [snapTrailerLen]byte
	binary.BigEndian.PutUint64(tr[:], uint64(dataLen))
	pf.bw.Write(tr[:8])
	if err := pf.bw.Flush(); err != nil {
		pf.close(false)
		return nil, err
	}
	binary.BigEndian.PutUint32(tr[8:], pf.crc.Sum32())
	if _, err := pf.f.Write(tr[8:]); err != nil {
		pf.close(false)
		return nil, err
	}
	tmp := final + tmpSuffix
	if err := os.Rename(pf.path, tmp); err != nil {
		pf.close(false)
		return nil, err
	}
	return &snapTemp{dir: filepath.Dir(final), tmp: tmp, final: final, f: pf.f, size: dataLen}, nil
}

// removePartials deletes the partial files whose names drop accepts.
func (s *Storage) removePartials(drop func(name string) bool) error {
	ents, err := os.ReadDir(s.snapDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), partialSuffix) && drop(e.Name()) {
			if err := os.Remove(filepath.Join(s.snapDir, e.Name())); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}

// removeOutdatedPartials deletes partial files of snapshots not newer
// than index (after a snapshot at index was installed or taken).
func (s *Storage) removeOutdatedPartials(index uint64) error {
	return s.removePartials(func(name string) bool {
		i, _, ok := parseSnapFileName(strings.TrimSuffix(name, partialSuffix))
		return !ok || i <= index
	})
}
