package zkdata

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/proto"
)

// Snapshot magic numbers and versions (FileSnap, FileTxnLog).
const (
	snapMagic   = 0x5A4B534E // "ZKSN"
	logMagic    = 0x5A4B4C47 // "ZKLG"
	fileVersion = 2
)

// zxidDigest is the digest section of a 3.6+ snapshot: the tree digest at
// zxid.
type zxidDigest struct {
	zxid    int64
	version int32
	digest  int64
}

// ReadSnapshot reads one ZooKeeper snapshot stream (uncompressed; see
// ReadSnapshotFile for compressed files) into an Image whose last zxid is
// zxid (the zxid of a snapshot is in its file name, not in its bytes). The
// image is the snapshot as ZooKeeper loads it: quota usage recomputed,
// ephemerals of sessions missing from its session table removed. No log is
// replayed. Bad input gives a *FormatError wrapping ErrBadSnapshot; an
// error from r other than EOF is returned wrapped.
func ReadSnapshot(r io.Reader, zxid int64, opts ReadOptions) (*Image, error) {
	im, _, err := readSnapshot(r, "", zxid, opts.limits())
	if err != nil {
		return nil, err
	}
	im.finish()
	return im, nil
}

// ReadSnapshotStream reads a snapshot stream that comes without its file
// name — the body of ZooKeeper 3.9's AdminServer restore command, or what
// its snapshot command sends — so the last zxid comes from the bytes: the
// last processed zxid ZooKeeper 3.9 appends (with
// zookeeper.serializeLastProcessedZxid.enabled), else the zxid of the
// digest section (3.6+; a snapshot taken at a quiet moment, as the
// snapshot command's, has its digest at its last zxid), else the highest
// zxid in the nodes' stats. The stream must end after its last seal.
func ReadSnapshotStream(r io.Reader, opts ReadOptions) (*Image, error) {
	im, _, err := readSnapshot(r, "snapshot stream", -1, opts.limits())
	return im, err
}

// ReadSnapshotFile reads the snapshot file at path, named
// snapshot.<hex zxid> with an optional ".gz" or ".snappy" suffix for the
// compressed forms zookeeper.snapshot.compression.method writes, as
// ReadSnapshot.
func ReadSnapshotFile(path string, opts ReadOptions) (*Image, error) {
	zxid, mode, ok := parseName(filepath.Base(path), "snapshot")
	if !ok {
		return nil, fmt.Errorf("zkdata: %s: not a snapshot name (snapshot.<hex zxid>)", path)
	}
	im, _, err := readSnapshotFile(path, filepath.Base(path), zxid, mode, opts.limits())
	if err != nil {
		return nil, err
	}
	im.finish()
	return im, nil
}

// parseName parses "<prefix>.<hex zxid>[.<ext>...]" as ZooKeeper's
// Util.getZxidFromName does, and the compression mode from the last
// suffix (SnapStream.getStreamMode).
func parseName(name, prefix string) (zxid int64, mode string, ok bool) {
	parts := strings.Split(name, ".")
	if len(parts) < 2 || parts[0] != prefix {
		return 0, "", false
	}
	z, err := strconv.ParseInt(parts[1], 16, 64)
	if err != nil {
		return 0, "", false
	}
	switch strings.ToLower(parts[len(parts)-1]) {
	case "gz":
		mode = "gz"
	case "snappy":
		mode = "snappy"
	}
	if len(parts) == 2 {
		mode = ""
	}
	return z, mode, true
}

func readSnapshotFile(path, name string, zxid int64, mode string, l limits) (*Image, *zxidDigest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := l.track(f, name)
	switch mode {
	case "gz":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, &FormatError{File: name, Msg: "gzip: " + err.Error(), kind: ErrBadSnapshot}
		}
		r = zr
	case "snappy":
		r = newXerialReader(r)
	}
	return readSnapshot(r, name, zxid, l)
}

// readSnapshot decodes a snapshot stream (FileSnap.deserialize): header,
// sessions, ACL cache, nodes, seal, optional digest and second seal.
func readSnapshot(r io.Reader, name string, zxid int64, l limits) (im *Image, dig *zxidDigest, err error) {
	cr := newCheckedReader(r)
	bad := func(at int64, format string, args ...any) error {
		return &FormatError{File: name, Offset: at, Msg: fmt.Sprintf(format, args...), kind: ErrBadSnapshot}
	}
	// fail turns the reader's sticky error into the error to return.
	fail := func(at int64, what string) error {
		var le *limitError
		switch {
		case errors.As(cr.err, &le):
			return &FormatError{File: name, Offset: at, Msg: what + ": " + le.Error(), kind: ErrBadSnapshot, limit: true}
		case cr.short:
			return bad(cr.off, "%s: input ends early", what)
		}
		var xe error = cr.err
		if errors.Is(xe, errXerial) || errors.Is(xe, gzip.ErrChecksum) || errors.Is(xe, gzip.ErrHeader) {
			return bad(cr.off, "%s: %v", what, xe)
		}
		return fmt.Errorf("zkdata: reading %s: %w", name, xe)
	}
	count := func(at int64, n int32, limit int, what string) error {
		if n < 0 || int64(n) > int64(limit) {
			return &FormatError{File: name, Offset: at, Msg: fmt.Sprintf("%s count %d outside [0, %d]", what, n, limit), kind: ErrBadSnapshot, limit: true}
		}
		return nil
	}

	magic, version, _ := cr.int32(), cr.int32(), cr.int64()
	if cr.err != nil {
		return nil, nil, fail(0, "header")
	}
	if magic != snapMagic {
		return nil, nil, bad(0, "magic %#08x, want %#08x (\"ZKSN\")", uint32(magic), snapMagic)
	}
	if version != fileVersion {
		return nil, nil, bad(4, "version %d, want %d", version, fileVersion)
	}
	im = newImage()
	im.lastZxid = zxid

	at := cr.off
	n := cr.int32()
	if cr.err != nil {
		return nil, nil, fail(at, "session count")
	}
	if err := count(at, n, l.sessions, "session"); err != nil {
		return nil, nil, err
	}
	for range n {
		at := cr.off
		id, to := cr.int64(), cr.int32()
		if cr.err != nil {
			return nil, nil, fail(at, "session")
		}
		im.sessions[id] = to
	}

	at = cr.off
	n = cr.int32()
	if cr.err != nil {
		return nil, nil, fail(at, "ACL cache size")
	}
	if err := count(at, n, l.acls, "ACL list"); err != nil {
		return nil, nil, err
	}
	for range n {
		at := cr.off
		id := cr.int64()
		m := cr.int32()
		if cr.err != nil {
			return nil, nil, fail(at, "ACL list")
		}
		if m == -1 {
			return nil, nil, bad(at, "ACL list %d is null", id)
		}
		if err := count(at+8, m, l.acls, "ACL entry"); err != nil {
			return nil, nil, err
		}
		list := make([]proto.ACL, 0, min(int(m), 64))
		for range m {
			a := proto.ACL{Perms: proto.Perm(cr.int32())}
			a.ID.Scheme = cr.str(l.buf, "scheme length")
			a.ID.ID = cr.str(l.buf, "id length")
			if cr.err != nil {
				return nil, nil, fail(at, "ACL")
			}
			list = append(list, a)
		}
		im.acls.add(id, list)
	}

	nodes := 0
	for {
		at := cr.off
		path := cr.str(l.buf, "path length")
		if cr.err != nil {
			return nil, nil, fail(at, "node path")
		}
		if path == "/" {
			break
		}
		if nodes >= l.nodes {
			return nil, nil, &FormatError{File: name, Offset: at, Msg: fmt.Sprintf("more than %d nodes", l.nodes), kind: ErrBadSnapshot, limit: true}
		}
		zn := &znode{}
		zn.data = cr.buffer(l.buf, "data length")
		zn.acl = cr.int64()
		st := &zn.st
		st.Czxid, st.Mzxid, st.Ctime, st.Mtime = cr.int64(), cr.int64(), cr.int64(), cr.int64()
		st.Version, st.Cversion, st.Aversion = cr.int32(), cr.int32(), cr.int32()
		st.EphemeralOwner, st.Pzxid = cr.int64(), cr.int64()
		if cr.err != nil {
			return nil, nil, fail(at, "node "+strconv.Quote(path))
		}
		if !im.acls.has(zn.acl) {
			return nil, nil, bad(at, "%q: ACL %d not in the ACL cache", path, zn.acl)
		}
		if nodes == 0 {
			if path != "" {
				return nil, nil, bad(at, "first node %q, want the root (\"\")", path)
			}
			im.put("", zn)
			nodes++
			continue
		}
		parentPath, childName, ok := parentOf(path)
		if !ok || !strings.HasPrefix(path, "/") || childName == "" {
			return nil, nil, bad(at, "bad path %q", path)
		}
		parent := im.nodes[parentPath]
		if parent == nil {
			return nil, nil, bad(at, "%q: parent not read before it", path)
		}
		if im.nodes[path] != nil {
			return nil, nil, bad(at, "%q: duplicate node", path)
		}
		if parent.kids == nil {
			parent.kids = make(map[string]struct{})
		}
		parent.kids[childName] = struct{}{}
		im.put(path, zn)
		nodes++
	}
	if nodes == 0 {
		return nil, nil, bad(cr.off, "no root node")
	}

	if err := checkSeal(cr, name, "seal"); err != nil {
		return nil, nil, err
	}
	// The digest section (3.6+). Older snapshots end at the seal; a
	// digest cut short is ignored, as ZooKeeper ignores it.
	if !cr.atEOF() {
		d := &zxidDigest{zxid: cr.int64(), version: cr.int32()}
		if d.version < 2 {
			if s := cr.str(l.buf, "digest length"); cr.err == nil {
				v, perr := strconv.ParseUint(s, 16, 64)
				if perr != nil {
					return nil, nil, bad(cr.off, "digest %q is not hex", s)
				}
				d.digest = int64(v)
			}
		} else {
			d.digest = cr.int64()
		}
		if cr.err == nil {
			if err := checkSeal(cr, name, "digest seal"); err != nil {
				return nil, nil, err
			}
			dig = d
		} else if !cr.short {
			return nil, nil, fail(cr.off, "digest")
		}
	}
	if zxid < 0 {
		// A stream without a name (ReadSnapshotStream).
		zxid = im.highestZxid()
		if dig != nil {
			zxid = dig.zxid
		}
		if !cr.atEOF() {
			// ZooKeeper 3.9's last processed zxid, sealed.
			last := cr.int64()
			if cr.err != nil {
				return nil, nil, fail(cr.off, "last processed zxid")
			}
			if err := checkSeal(cr, name, "last processed zxid seal"); err != nil {
				return nil, nil, err
			}
			zxid = last
			if !cr.atEOF() {
				return nil, nil, bad(cr.off, "bytes after the last seal")
			}
		}
		if zxid < 0 {
			return nil, nil, bad(cr.off, "last zxid %#x is negative", zxid)
		}
		im.lastZxid = zxid
	}
	im.setupQuota()
	im.summary.SnapshotZxid = zxid
	im.summary.Snapshot = name
	if dig != nil && dig.zxid == zxid {
		im.checkDigest(dig.version, dig.digest, zxid, "snapshot")
	}
	return im, dig, nil
}

// checkSeal reads a seal (the Adler-32 so far as a long, then "/") and
// checks it.
func checkSeal(cr *checkedReader, name, what string) error {
	at := cr.off
	want := int64(cr.sum.Sum32())
	got := cr.int64()
	s := cr.str(16, "seal path length")
	if cr.err != nil {
		if cr.short {
			return &FormatError{File: name, Offset: at, Msg: what + ": input ends early", kind: ErrBadSnapshot}
		}
		return &FormatError{File: name, Offset: at, Msg: what + ": bad seal", kind: ErrBadSnapshot}
	}
	if got != want {
		return &FormatError{File: name, Offset: at, Msg: fmt.Sprintf("%s: Adler-32 %#x, computed %#x", what, got, want), kind: ErrBadSnapshot}
	}
	if s != "/" {
		return &FormatError{File: name, Offset: at + 8, Msg: fmt.Sprintf("%s: ends with %q, want \"/\"", what, s), kind: ErrBadSnapshot}
	}
	return nil
}

// checkDigest compares the tree digest with one ZooKeeper recorded.
func (im *Image) checkDigest(version int32, want int64, zxid int64, where string) {
	if version != digestVersion {
		return
	}
	im.summary.DigestChecks++
	if got := int64(im.digest); got != want {
		if len(im.summary.DigestMismatches) < maxMismatches {
			im.summary.DigestMismatches = append(im.summary.DigestMismatches,
				fmt.Sprintf("zxid %#x (%s): computed %#x, recorded %#x", zxid, where, uint64(got), uint64(want)))
		}
	}
}

// finish does what ZooKeeper does after recovery, before serving: it
// removes the ephemerals of sessions not in the session table.
func (im *Image) finish() {
	im.killDeadSessions()
}
