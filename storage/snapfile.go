package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/raft/v3/raftpb"
)

// Snapshot file format; see doc.go.
const (
	snapMagic      = "zkgosnap"
	snapVersion    = 1
	snapHeaderLen  = 8 + 4 + 4 + 8 // magic, version, metadata length, data length
	snapTrailerLen = 4             // CRC-32C
	snapSuffix     = ".snap"
	tmpSuffix      = ".tmp"
	brokenSuffix   = ".broken"

	// maxSnapMetaBytes bounds the encoded raftpb.SnapshotMetadata (index,
	// term and the ConfState, a few bytes per member).
	maxSnapMetaBytes = 1 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errBadSnapshot marks a snapshot file that cannot be used; Open skips it.
var errBadSnapshot = errors.New("bad snapshot file")

// snapFileName returns the file name of the snapshot at (index, term).
// Index comes first so that names sort by index.
func snapFileName(index, term uint64) string {
	return fmt.Sprintf("%016x-%016x%s", index, term, snapSuffix)
}

// parseSnapFileName is the inverse of snapFileName.
func parseSnapFileName(name string) (index, term uint64, ok bool) {
	base, found := strings.CutSuffix(name, snapSuffix)
	if !found || len(base) != 33 || base[16] != '-' {
		return 0, 0, false
	}
	index, err1 := strconv.ParseUint(base[:16], 16, 64)
	term, err2 := strconv.ParseUint(base[17:], 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return index, term, true
}

// snapFile is a snapshot file found in the snapshot directory.
type snapFile struct {
	name        string
	index, term uint64
}

// listSnapFiles returns the well-named snapshot files in dir, oldest
// (lowest index) first.
func listSnapFiles(dir string) ([]snapFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []snapFile
	for _, e := range ents {
		if idx, term, ok := parseSnapFileName(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, snapFile{name: e.Name(), index: idx, term: term})
		}
	}
	slices.SortFunc(out, func(a, b snapFile) int {
		if a.index != b.index {
			if a.index < b.index {
				return -1
			}
			return 1
		}
		if a.term < b.term {
			return -1
		} else if a.term > b.term {
			return 1
		}
		return 0
	})
	return out, nil
}

// writeSnapFile writes snap to dir atomically: a temporary file is written
// and fsynced, renamed to its final name, and the directory is fsynced. A
// crash leaves either no file or the complete file (plus possibly a stale
// temporary file, which Open deletes). With noSync the fsyncs are skipped.
// synced (may be nil) is told each durability step as it completes; with
// noSync there are none.
func writeSnapFile(dir string, snap *raftpb.Snapshot, noSync bool, synced func(SyncPoint)) (err error) {
	if synced == nil || noSync {
		synced = func(SyncPoint) {}
	}
	meta, err := snap.Metadata.Marshal()
	if err != nil {
		return err
	}
	if len(meta) > maxSnapMetaBytes {
		return fmt.Errorf("snapshot metadata is %d bytes, more than %d", len(meta), maxSnapMetaBytes)
	}
	name := snapFileName(snap.Metadata.Index, snap.Metadata.Term)
	final := filepath.Join(dir, name)
	tmp := final + tmpSuffix
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			os.Remove(tmp)
		}
	}()

	var hdr [snapHeaderLen]byte
	copy(hdr[:8], snapMagic)
	binary.BigEndian.PutUint32(hdr[8:], snapVersion)
	binary.BigEndian.PutUint32(hdr[12:], uint32(len(meta)))
	binary.BigEndian.PutUint64(hdr[16:], uint64(len(snap.Data)))
	crc := crc32.New(crcTable)
	bw := bufio.NewWriterSize(io.MultiWriter(f, crc), 1<<16)
	bw.Write(hdr[:])
	bw.Write(meta)
	bw.Write(snap.Data)
	if err = bw.Flush(); err != nil {
		return err
	}
	var tr [snapTrailerLen]byte
	binary.BigEndian.PutUint32(tr[:], crc.Sum32())
	if _, err = f.Write(tr[:]); err != nil {
		return err
	}
	if !noSync {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		f = nil
		return err
	}
	f = nil
	// Durability boundary: the content is durable, under the temporary
	// name (which recovery deletes) until the rename is.
	synced(PointSnapTempSynced)
	if err = os.Rename(tmp, final); err != nil {
		return err
	}
	// Failpoint: renamed, but the rename is not durable before the
	// directory is fsynced; a crash may leave either name.
	synced(PointSnapRenamed)
	if !noSync {
		if err = syncDir(dir); err != nil {
			return err
		}
	}
	// Durability boundary: the file is durable under its final name.
	synced(PointSnapSynced)
	return nil
}

// readSnapFile reads and verifies the snapshot file at path. Every length
// is checked against the file size and the bounds before any allocation.
// Errors wrap errBadSnapshot when the file's content is unusable.
func readSnapFile(path string, maxData int64) (*raftpb.Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	snap, err := decodeSnapshot(bufio.NewReaderSize(f, 1<<16), fi.Size(), maxData)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	index, term, ok := parseSnapFileName(filepath.Base(path))
	if !ok || index != snap.Metadata.Index || term != snap.Metadata.Term {
		return nil, fmt.Errorf("%s: %w: name does not match index %d term %d",
			filepath.Base(path), errBadSnapshot, snap.Metadata.Index, snap.Metadata.Term)
	}
	return snap, nil
}

// decodeSnapshot decodes a snapshot file of exactly size bytes from r.
func decodeSnapshot(r io.Reader, size, maxData int64) (*raftpb.Snapshot, error) {
	if size < snapHeaderLen+snapTrailerLen {
		return nil, fmt.Errorf("%w: %d bytes is shorter than the header", errBadSnapshot, size)
	}
	crc := crc32.New(crcTable)
	tr := io.TeeReader(r, crc)
	var hdr [snapHeaderLen]byte
	if _, err := io.ReadFull(tr, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: header: %v", errBadSnapshot, err)
	}
	if string(hdr[:8]) != snapMagic {
		return nil, fmt.Errorf("%w: bad magic", errBadSnapshot)
	}
	if v := binary.BigEndian.Uint32(hdr[8:]); v != snapVersion {
		return nil, fmt.Errorf("%w: unknown version %d", errBadSnapshot, v)
	}
	metaLen := int64(binary.BigEndian.Uint32(hdr[12:]))
	dataLen := binary.BigEndian.Uint64(hdr[16:])
	if metaLen > maxSnapMetaBytes {
		return nil, fmt.Errorf("%w: metadata length %d exceeds %d", errBadSnapshot, metaLen, maxSnapMetaBytes)
	}
	if dataLen > uint64(maxData) {
		return nil, fmt.Errorf("%w: %w: data length %d exceeds %d", errBadSnapshot, ErrSnapshotTooLarge, dataLen, maxData)
	}
	if want := snapHeaderLen + metaLen + int64(dataLen) + snapTrailerLen; want != size {
		return nil, fmt.Errorf("%w: lengths add up to %d bytes, file has %d", errBadSnapshot, want, size)
	}
	buf := make([]byte, metaLen+int64(dataLen))
	if _, err := io.ReadFull(tr, buf); err != nil {
		return nil, fmt.Errorf("%w: body: %v", errBadSnapshot, err)
	}
	sum := crc.Sum32()
	var trl [snapTrailerLen]byte
	if _, err := io.ReadFull(r, trl[:]); err != nil {
		return nil, fmt.Errorf("%w: trailer: %v", errBadSnapshot, err)
	}
	if got := binary.BigEndian.Uint32(trl[:]); got != sum {
		return nil, fmt.Errorf("%w: crc mismatch: stored %08x, computed %08x", errBadSnapshot, got, sum)
	}
	snap := &raftpb.Snapshot{}
	if err := snap.Metadata.Unmarshal(buf[:metaLen]); err != nil {
		return nil, fmt.Errorf("%w: metadata: %v", errBadSnapshot, err)
	}
	if snap.Metadata.Index == 0 {
		return nil, fmt.Errorf("%w: index 0", errBadSnapshot)
	}
	if dataLen > 0 {
		snap.Data = buf[metaLen:]
	}
	return snap, nil
}

// syncDir fsyncs a directory so that renames and deletions in it are
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
