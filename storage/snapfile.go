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

// Snapshot file format; see doc.go. Version 1 has the data length in the
// header; version 2 (written now) has it in the trailer, so that the data
// can be streamed into the file as the state machine produces it.
const (
	snapMagic        = "zkgosnap"
	snapVersion1     = 1
	snapVersion      = 2
	snapHeaderLen1   = 8 + 4 + 4 + 8 // v1: magic, version, metadata length, data length
	snapTrailerLen1  = 4             // v1: CRC-32C
	snapHeaderLen    = 8 + 4 + 4     // v2: magic, version, metadata length
	snapTrailerLen   = 8 + 4         // v2: data length, CRC-32C
	snapMinFileBytes = 8 + 4 + 4 + 4 // the shortest header and trailer
	snapSuffix       = ".snap"
	tmpSuffix        = ".tmp"
	brokenSuffix     = ".broken"

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
// temporary file, which Open deletes). st says whether to fsync, whom to
// tell each durability step once it completed and whom to ask before.
func writeSnapFile(dir string, snap *raftpb.Snapshot, st fileSteps) error {
	if err := st.ask(FaultSnapWrite); err != nil {
		return err
	}
	sf, err := createSnapFile(dir, snap.Metadata, -1, func(w io.Writer) error {
		_, err := w.Write(snap.Data)
		return err
	})
	if err != nil {
		return err
	}
	return sf.install(st)
}

// snapTemp is a snapshot file written under its temporary name, not yet
// fsynced: install makes it durable under its final name.
type snapTemp struct {
	dir, tmp, final string
	f               *os.File
	size            int64 // bytes of state-machine data
}

// snapDataWriter feeds the data into the file and the CRC, counting it
// against a bound.
type snapDataWriter struct {
	w     io.Writer
	n     int64
	limit int64 // < 0: none
}

func (d *snapDataWriter) Write(p []byte) (int, error) {
	if d.limit >= 0 && d.n+int64(len(p)) > d.limit {
		return 0, fmt.Errorf("%w: more than %d bytes of data", ErrSnapshotTooLarge, d.limit)
	}
	n, err := d.w.Write(p)
	d.n += int64(n)
	return n, err
}

// createSnapFile writes the snapshot file for meta under its temporary
// name, with the data that write produces (at most limit bytes; < 0: no
// bound), and returns it unsynced. On error nothing is left behind.
func createSnapFile(dir string, meta raftpb.SnapshotMetadata, limit int64, write func(io.Writer) error) (_ *snapTemp, err error) {
	mb, err := meta.Marshal()
	if err != nil {
		return nil, err
	}
	if len(mb) > maxSnapMetaBytes {
		return nil, fmt.Errorf("snapshot metadata is %d bytes, more than %d", len(mb), maxSnapMetaBytes)
	}
	final := filepath.Join(dir, snapFileName(meta.Index, meta.Term))
	tmp := final + tmpSuffix
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	crc := crc32.New(crcTable)
	bw := bufio.NewWriterSize(io.MultiWriter(f, crc), 1<<16)
	var hdr [snapHeaderLen]byte
	copy(hdr[:8], snapMagic)
	binary.BigEndian.PutUint32(hdr[8:], snapVersion)
	binary.BigEndian.PutUint32(hdr[12:], uint32(len(mb)))
	bw.Write(hdr[:])
	bw.Write(mb)
	dw := &snapDataWriter{w: bw, limit: limit}
	if err = write(dw); err != nil {
		return nil, err
	}
	var tr [snapTrailerLen]byte
	binary.BigEndian.PutUint64(tr[:], uint64(dw.n))
	bw.Write(tr[:8])
	if err = bw.Flush(); err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint32(tr[8:], crc.Sum32())
	if _, err = f.Write(tr[8:]); err != nil {
		return nil, err
	}
	return &snapTemp{dir: dir, tmp: tmp, final: final, f: f, size: dw.n}, nil
}

// sync fsyncs and closes the temporary file (the slow part of install,
// which needs no lock). On error the file is deleted: a refused or failed
// fsync leaves nothing that recovery could take for durable.
func (sf *snapTemp) sync(st fileSteps) error {
	if sf.f == nil {
		return nil
	}
	var err error
	if !st.noSync {
		if err = st.ask(FaultSnapSync); err == nil {
			err = sf.f.Sync()
		}
	}
	if cerr := sf.f.Close(); err == nil {
		err = cerr
	}
	sf.f = nil
	if err != nil {
		os.Remove(sf.tmp)
	}
	return err
}

// abort closes and deletes the temporary file.
func (sf *snapTemp) abort() {
	if sf.f != nil {
		sf.f.Close()
		sf.f = nil
	}
	os.Remove(sf.tmp)
}

// install makes the file durable under its final name: fsync (unless done
// by sync), rename, fsync of the directory. A step the fault hook refuses
// is not taken; a refused rename deletes the temporary file, as a failed
// one does.
func (sf *snapTemp) install(st fileSteps) error {
	if err := sf.sync(st); err != nil {
		return err
	}
	// Durability boundary: the content is durable, under the temporary
	// name (which recovery deletes) until the rename is.
	st.tell(PointSnapTempSynced)
	err := st.ask(FaultSnapRename)
	if err == nil {
		err = os.Rename(sf.tmp, sf.final)
	}
	if err != nil {
		os.Remove(sf.tmp)
		return err
	}
	// Failpoint: renamed, but the rename is not durable before the
	// directory is fsynced; a crash may leave either name.
	st.tell(PointSnapRenamed)
	if !st.noSync {
		err := st.ask(FaultSnapSync)
		if err == nil {
			err = syncDir(sf.dir)
		}
		if err != nil {
			return err
		}
	}
	// Durability boundary: the file is durable under its final name.
	st.tell(PointSnapSynced)
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

// snapHeader is what a snapshot file's header says.
type snapHeader struct {
	meta    raftpb.SnapshotMetadata
	version uint32
	dataLen int64
}

// readSnapHeader reads and checks the header and the metadata of a
// snapshot file of exactly size bytes (format version 1 or 2); r is left
// at the first byte of the data.
func readSnapHeader(r io.Reader, size, maxData int64) (snapHeader, error) {
	var h snapHeader
	if size < snapMinFileBytes {
		return h, fmt.Errorf("%w: %d bytes is shorter than the header", errBadSnapshot, size)
	}
	var hdr [snapHeaderLen1]byte
	if _, err := io.ReadFull(r, hdr[:snapHeaderLen]); err != nil {
		return h, fmt.Errorf("%w: header: %v", errBadSnapshot, err)
	}
	if string(hdr[:8]) != snapMagic {
		return h, fmt.Errorf("%w: bad magic", errBadSnapshot)
	}
	h.version = binary.BigEndian.Uint32(hdr[8:])
	metaLen := int64(binary.BigEndian.Uint32(hdr[12:]))
	if metaLen > maxSnapMetaBytes {
		return h, fmt.Errorf("%w: metadata length %d exceeds %d", errBadSnapshot, metaLen, maxSnapMetaBytes)
	}
	switch h.version {
	case snapVersion1:
		if size < snapHeaderLen1+snapTrailerLen1 {
			return h, fmt.Errorf("%w: %d bytes is shorter than the header", errBadSnapshot, size)
		}
		if _, err := io.ReadFull(r, hdr[snapHeaderLen:]); err != nil {
			return h, fmt.Errorf("%w: header: %v", errBadSnapshot, err)
		}
		d := binary.BigEndian.Uint64(hdr[16:])
		if d > uint64(maxData) {
			return h, fmt.Errorf("%w: %w: data length %d exceeds %d", errBadSnapshot, ErrSnapshotTooLarge, d, maxData)
		}
		h.dataLen = int64(d)
		if want := snapHeaderLen1 + metaLen + h.dataLen + snapTrailerLen1; want != size {
			return h, fmt.Errorf("%w: lengths add up to %d bytes, file has %d", errBadSnapshot, want, size)
		}
	case snapVersion:
		// The data length is in the trailer; the file size gives it, and
		// the trailer must agree.
		h.dataLen = size - snapHeaderLen - metaLen - snapTrailerLen
		if h.dataLen < 0 {
			return h, fmt.Errorf("%w: metadata length %d does not fit in %d bytes", errBadSnapshot, metaLen, size)
		}
		if h.dataLen > maxData {
			return h, fmt.Errorf("%w: %w: data length %d exceeds %d", errBadSnapshot, ErrSnapshotTooLarge, h.dataLen, maxData)
		}
	default:
		return h, fmt.Errorf("%w: unknown version %d", errBadSnapshot, h.version)
	}
	mb := make([]byte, metaLen)
	if _, err := io.ReadFull(r, mb); err != nil {
		return h, fmt.Errorf("%w: metadata: %v", errBadSnapshot, err)
	}
	if err := h.meta.Unmarshal(mb); err != nil {
		return h, fmt.Errorf("%w: metadata: %v", errBadSnapshot, err)
	}
	if h.meta.Index == 0 {
		return h, fmt.Errorf("%w: index 0", errBadSnapshot)
	}
	return h, nil
}

// decodeSnapshot decodes a snapshot file of exactly size bytes from r
// (format version 1 or 2), data included.
func decodeSnapshot(r io.Reader, size, maxData int64) (*raftpb.Snapshot, error) {
	crc := crc32.New(crcTable)
	tr := io.TeeReader(r, crc)
	h, err := readSnapHeader(tr, size, maxData)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, h.dataLen)
	if _, err := io.ReadFull(tr, buf); err != nil {
		return nil, fmt.Errorf("%w: body: %v", errBadSnapshot, err)
	}
	if h.version == snapVersion {
		var dl [8]byte
		if _, err := io.ReadFull(tr, dl[:]); err != nil {
			return nil, fmt.Errorf("%w: trailer: %v", errBadSnapshot, err)
		}
		if got := binary.BigEndian.Uint64(dl[:]); got != uint64(h.dataLen) {
			return nil, fmt.Errorf("%w: trailer says %d bytes of data, the file holds %d", errBadSnapshot, got, h.dataLen)
		}
	}
	sum := crc.Sum32()
	var trl [4]byte
	if _, err := io.ReadFull(r, trl[:]); err != nil {
		return nil, fmt.Errorf("%w: trailer: %v", errBadSnapshot, err)
	}
	if got := binary.BigEndian.Uint32(trl[:]); got != sum {
		return nil, fmt.Errorf("%w: crc mismatch: stored %08x, computed %08x", errBadSnapshot, got, sum)
	}
	snap := &raftpb.Snapshot{Metadata: h.meta}
	if h.dataLen > 0 {
		snap.Data = buf
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
