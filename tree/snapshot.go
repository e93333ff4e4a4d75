package tree

// Snapshots: the whole replicated state of a Tree as a byte stream, written
// by Tree.WriteSnapshot and read back by ReadSnapshot.
//
// # Format (version 2)
//
// All integers are big-endian and encoded with package jute (int = 4 bytes,
// long = 8 bytes, buffer/string = int length then bytes, a buffer of length
// -1 is nil, vector = int count then elements).
//
//	snapshot = header record* trailer
//
//	header (28 bytes)
//	  magic         8 bytes  "ZKGOSNAP"
//	  version       int      2 (1: sessions without a claim)
//	  lastZxid      long     zxid of the last applied transaction (>= 0)
//	  nodeCount     int      number of znodes (the root once)
//	  sessionCount  int      number of sessions
//
//	record = kind (1 byte) | length (int) | body (length bytes)
//	  'A' ACL list  body = vector of ACL (perms int, scheme string, id string)
//	                The k-th A record (from 0) defines ACL index k. An A record
//	                is written right before the first node that uses the list,
//	                and that node must refer to it.
//	  'N' node      body = path string | data buffer (-1: nil data) |
//	                       acl int (an ACL index) | stat
//	                stat is the tree's internal Stat in proto.Stat's jute
//	                layout (czxid, mzxid, ctime, mtime long; version,
//	                cversion, aversion int; ephemeralOwner long; dataLength,
//	                numChildren int; pzxid long). It holds the internal
//	                counters, not what clients see: cversion counts child
//	                creates (it names sequential children) and ephemeralOwner
//	                carries the container and TTL markers.
//	  'S' session   body = id long | timeout int | passwd buffer |
//	                       claim long (Session.Claim; not in version 1)
//
//	trailer = CRC-32C (Castagnoli) of every byte before it, header
//	          included, as a big-endian uint32.
//
// The nodeCount N records come first, with A records among them, in Walk
// order: the root first, every parent before its children, siblings sorted
// by name. The sessionCount S records follow in increasing id order, then
// the trailer, then the input must end. The same tree always gives the same
// bytes.
//
// Children sets, the ephemerals-by-session index, the container and TTL
// candidate sets, the quota index and the ACL cache's reference counts are
// not written: ReadSnapshot rebuilds them from the nodes as Apply builds
// them. Options (Tree.SetOptions), the QuotaWarning callback and Apply's
// scratch state are not state and are not written.
//
// # Reading untrusted input
//
// ReadSnapshot checks: the magic and version; lastZxid >= 0; the counts
// against ReadOptions.MaxNodes and MaxSessions; every record length against
// ReadOptions.MaxBuffer (jute.maxbuffer) before the body is read, and every
// length inside a record against the record (jute's Decoder), so nothing is
// allocated on a length's word alone; record kinds and order; paths
// (ValidatePath, the root first, no duplicates, the parent already read, the
// parent not ephemeral); ACL indexes; dataLength against the data;
// numChildren against the children read; session ids strictly increasing;
// that every ephemeral's session is in the table and the system nodes
// exist; the CRC; and that nothing follows the trailer. Any mismatch, and
// input that ends early, is an error wrapping ErrBadSnapshot and the partly
// built tree is dropped. A bad record is reported when it is met, so the
// CRC, checked at the end, catches the corruption that still parses.
// Everything checked is an invariant Apply maintains, so a snapshot of any
// tree Apply built reads back.
//
// A new version of the format must keep reading the older versions:
// version 1 snapshots read with every session's Claim 0.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
)

// SnapshotVersion is the format version WriteSnapshot writes.
const SnapshotVersion = 2

// snapshotMagic starts every snapshot.
const snapshotMagic = "ZKGOSNAP"

// Defaults for ReadOptions.
const (
	// DefaultMaxSnapshotNodes bounds the node count of a snapshot when
	// ReadOptions.MaxNodes is 0.
	DefaultMaxSnapshotNodes = 1 << 26
	// DefaultMaxSnapshotSessions bounds the session count of a snapshot
	// when ReadOptions.MaxSessions is 0.
	DefaultMaxSnapshotSessions = 1 << 24
)

// ErrBadSnapshot is wrapped by every error ReadSnapshot returns for input
// that is not a well-formed snapshot (corrupt, truncated, unknown version,
// over a limit).
var ErrBadSnapshot = errors.New("tree: bad snapshot")

// Record kinds.
const (
	recACL     byte = 'A'
	recNode    byte = 'N'
	recSession byte = 'S'
)

const (
	snapHeaderSize = len(snapshotMagic) + 4 + 8 + 4 + 4
	recHeaderSize  = 1 + 4
	// nodeFixedSize is a node record body without its path and data bytes:
	// two length prefixes, the ACL index and the stat.
	nodeFixedSize = 4 + 4 + 4 + proto.StatSize
	// snapBufSize is the bufio buffer size on both sides.
	snapBufSize = 64 << 10
	// presizeMax caps the session map size ReadSnapshot derives from the
	// header's count, so that a forged count costs little memory before
	// records back it, unless the reader tells how many bytes remain (see
	// ReadSnapshot). Children sets are not presized: they grow as children
	// are read.
	presizeMax = 1 << 12
	// minSessionBytes is the smallest session record, header included.
	minSessionBytes = recHeaderSize + 8 + 4 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot writes the whole replicated state of t to w in the format
// described at the top of snapshot.go: every node (path, data, ACL, the raw
// internal Stat, including the child-create count in cversion and the
// container/TTL markers in ephemeralOwner), every session (id, timeout,
// password) and the last applied zxid. The output is deterministic: the same
// tree always gives the same bytes.
//
// Writes go through a bufio.Writer (flushed before returning), so w need not
// be buffered; nothing is accumulated beyond one record. WriteSnapshot only
// reads t: it may run beside other readers but, like every read, not
// concurrently with Apply. It returns the first error from w, or an error if
// t's children sets do not reach every node (a broken tree; the output is
// then unusable).
func (t *Tree) WriteSnapshot(w io.Writer) error {
	sn, err := t.fixSnapshot()
	if err != nil {
		return err
	}
	return sn.Write(w, nil)
}

// snapWriter encodes records one at a time into a reused buffer and writes
// them through a bufio.Writer, keeping the running CRC.
type snapWriter struct {
	bw  *bufio.Writer
	crc uint32
	enc jute.Encoder
	err error
}

func (sw *snapWriter) write(b []byte) {
	if sw.err != nil {
		return
	}
	sw.crc = crc32.Update(sw.crc, castagnoli, b)
	_, sw.err = sw.bw.Write(b)
}

func (sw *snapWriter) header(lastZxid int64, nodes, sessions int32) {
	sw.enc = *jute.NewEncoder(append(sw.enc.Bytes()[:0], snapshotMagic...))
	sw.enc.WriteInt(SnapshotVersion)
	sw.enc.WriteLong(lastZxid)
	sw.enc.WriteInt(nodes)
	sw.enc.WriteInt(sessions)
	sw.write(sw.enc.Bytes())
}

// begin starts a record of the given kind in the reused buffer and returns
// the encoder for its body; end finishes and writes it.
func (sw *snapWriter) begin(kind byte) *jute.Encoder {
	sw.enc = *jute.NewEncoder(append(sw.enc.Bytes()[:0], kind))
	sw.enc.WriteInt(0) // length, patched by end
	return &sw.enc
}

func (sw *snapWriter) end() {
	n := sw.enc.Len() - recHeaderSize
	if n > math.MaxInt32 {
		if sw.err == nil {
			sw.err = errors.New("tree: snapshot: record too large")
		}
		return
	}
	sw.enc.PutIntAt(1, int32(n))
	sw.write(sw.enc.Bytes())
}

func (sw *snapWriter) acl(list []proto.ACL) {
	e := sw.begin(recACL)
	e.WriteVectorLen(len(list))
	for i := range list {
		list[i].Encode(e)
	}
	sw.end()
}

func (sw *snapWriter) node(path []byte, data []byte, aclIdx int32, st *proto.Stat) {
	e := sw.begin(recNode)
	e.WriteBuffer(path) // the same bytes as WriteString: path is never nil
	e.WriteBuffer(data)
	e.WriteInt(aclIdx)
	st.Encode(e)
	sw.end()
}

func (sw *snapWriter) session(s *Session) {
	e := sw.begin(recSession)
	e.WriteLong(s.ID)
	e.WriteInt(s.Timeout)
	e.WriteBuffer(s.Passwd)
	e.WriteLong(s.Claim)
	sw.end()
}

// finish writes the CRC trailer and flushes.
func (sw *snapWriter) finish() error {
	if sw.err != nil {
		return sw.err
	}
	var tr [4]byte
	binary.BigEndian.PutUint32(tr[:], sw.crc)
	if _, err := sw.bw.Write(tr[:]); err != nil {
		return err
	}
	return sw.bw.Flush()
}

// ReadOptions bound what ReadSnapshot accepts. The zero value uses the
// defaults.
type ReadOptions struct {
	// MaxBuffer bounds a node's path and its data, an ACL record and a
	// session record, in bytes. It should be the server's jute.maxbuffer
	// (the tree cannot hold larger values, since requests carry them);
	// 0 means jute.DefaultMaxBuffer.
	MaxBuffer int
	// MaxNodes bounds the node count; 0 means DefaultMaxSnapshotNodes.
	MaxNodes int
	// MaxSessions bounds the session count; 0 means
	// DefaultMaxSnapshotSessions.
	MaxSessions int
}

// ReadSnapshot reads a snapshot written by WriteSnapshot into a new Tree
// whose state, lastZxid included, is exactly that of the tree written:
// applying the same further transactions to both gives the same results and
// the same trees.
//
// Options are configuration, not state: the returned tree has the zero
// Options and no QuotaWarning; the caller sets them (SetOptions) as for a
// new tree, with the same values every replica uses.
//
// ReadSnapshot buffers r itself (pass a *bufio.Reader to share one) and
// consumes r to its end: the snapshot must be all of r. Input that is not a
// valid snapshot (see the top of snapshot.go for every check) gives an error
// wrapping ErrBadSnapshot; input that ends early is such an error too. An
// error from r other than io.EOF is returned wrapped, without
// ErrBadSnapshot. Lengths and counts are checked before anything is
// allocated, so memory stays proportional to the input actually read.
func ReadSnapshot(r io.Reader, opts ReadOptions) (*Tree, error) {
	sr := &snapReader{br: bufio.NewReaderSize(r, snapBufSize)}
	sr.maxBuf = opts.MaxBuffer
	if sr.maxBuf <= 0 {
		sr.maxBuf = jute.DefaultMaxBuffer
	}
	// Keep 2*maxBuf + nodeFixedSize within an int32 record length.
	sr.maxBuf = min(sr.maxBuf, (math.MaxInt32-nodeFixedSize)/2)
	maxNodes, maxSessions := opts.MaxNodes, opts.MaxSessions
	if maxNodes <= 0 {
		maxNodes = DefaultMaxSnapshotNodes
	}
	if maxSessions <= 0 {
		maxSessions = DefaultMaxSnapshotSessions
	}

	hdr, err := sr.read(snapHeaderSize)
	if err != nil {
		return nil, err
	}
	if string(hdr[:len(snapshotMagic)]) != snapshotMagic {
		return nil, sr.bad(0, "not a snapshot (magic %q)", hdr[:len(snapshotMagic)])
	}
	d := &sr.dec
	d.Reset(hdr[len(snapshotMagic):], false)
	version := d.ReadInt()
	lastZxid := d.ReadLong()
	nodeCount := d.ReadInt()
	sessionCount := d.ReadInt()
	if version != SnapshotVersion && version != 1 {
		return nil, sr.bad(8, "unsupported version %d (this build reads 1 to %d)", version, SnapshotVersion)
	}
	if lastZxid < 0 {
		return nil, sr.bad(12, "negative lastZxid %d", lastZxid)
	}
	if nodeCount < 1 || int64(nodeCount) > int64(maxNodes) {
		return nil, sr.bad(20, "node count %d outside [1, %d]", nodeCount, maxNodes)
	}
	if sessionCount < 0 || int64(sessionCount) > int64(maxSessions) {
		return nil, sr.bad(24, "session count %d outside [0, %d]", sessionCount, maxSessions)
	}

	// Presize the session map from the count, bounded by what the remaining
	// input can hold when r tells its length (bytes.Reader, bytes.Buffer,
	// strings.Reader: a snapshot held in memory) and by presizeMax if not.
	sessionCap := presizeMax
	if l, ok := r.(interface{ Len() int }); ok {
		left := l.Len() + sr.br.Buffered()
		sessionCap = left/minSessionBytes + 1
	}
	t := &Tree{
		acls:       newACLCache(),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		sessions:   make(map[int64]*Session, min(int(sessionCount), sessionCap)),
		lastZxid:   lastZxid,
	}
	var (
		aclLists   [][]proto.ACL
		aclEntries []*aclEntry
		pendingACL = false // an A record waits for the node that uses it
	)
	for read := 0; read < int(nodeCount); {
		at := sr.off
		kind, body, err := sr.record()
		if err != nil {
			return nil, err
		}
		switch kind {
		case recACL:
			if pendingACL {
				return nil, sr.bad(at, "ACL record %d not used by the next node", len(aclLists)-1)
			}
			d.Reset(body, false)
			n := d.ReadVectorLen(4 + 4 + 4)
			list := make([]proto.ACL, max(n, 0))
			for i := range list {
				list[i].Decode(d)
			}
			if err := d.Finish(); err != nil {
				return nil, sr.bad(at, "ACL record %d: %v", len(aclLists), err)
			}
			if n < 0 {
				return nil, sr.bad(at, "ACL record %d: null list", len(aclLists))
			}
			aclLists = append(aclLists, list)
			aclEntries = append(aclEntries, nil)
			pendingACL = true
		case recNode:
			if err := sr.node(t, read, at, body, aclLists, aclEntries, pendingACL); err != nil {
				return nil, err
			}
			pendingACL = false
			read++
		default:
			return nil, sr.bad(at, "record kind %q where node %d of %d was expected", kind, read, nodeCount)
		}
	}
	if pendingACL {
		return nil, sr.bad(sr.off, "ACL record %d not used by any node", len(aclLists)-1)
	}

	var prevID int64
	for i := 0; i < int(sessionCount); i++ {
		at := sr.off
		kind, body, err := sr.record()
		if err != nil {
			return nil, err
		}
		if kind != recSession {
			return nil, sr.bad(at, "record kind %q where session %d of %d was expected", kind, i, sessionCount)
		}
		d.Reset(body, false)
		s := &Session{ID: d.ReadLong(), Timeout: d.ReadInt(), Passwd: d.ReadBuffer()}
		if version >= 2 {
			s.Claim = d.ReadLong()
		}
		if err := d.Finish(); err != nil {
			return nil, sr.bad(at, "session record %d: %v", i, err)
		}
		if i > 0 && s.ID <= prevID {
			return nil, sr.bad(at, "session %#x after %#x (ids must increase)", s.ID, prevID)
		}
		prevID = s.ID
		t.sessions[s.ID] = s
	}

	// Checks on the whole tree. Children sets and maps iterate in random
	// order: on failure, name the first offender by path so the error is
	// deterministic.
	var bad []string
	t.walkPaths(func(p []byte, n *Node) {
		if declared := sr.numChildren[n]; int(declared) != n.NumChildren() {
			bad = append(bad, fmt.Sprintf("%s: numChildren %d but %d children", p, declared, n.NumChildren()))
		}
	})
	for owner, set := range t.ephemerals {
		if t.sessions[owner] == nil {
			for p := range set {
				bad = append(bad, fmt.Sprintf("%s: ephemeral owned by session %#x, which is not in the snapshot", p, owner))
			}
		}
	}
	if len(bad) > 0 {
		return nil, sr.bad(sr.off, "%s", slices.Min(bad))
	}
	for _, p := range []string{ZookeeperPath, QuotaPath, ConfigPath} {
		if t.Get(p) == nil {
			return nil, sr.bad(sr.off, "system node %s missing", p)
		}
	}

	sum := sr.crc
	at := sr.off
	tr, err := sr.read(4)
	if err != nil {
		return nil, err
	}
	if got := binary.BigEndian.Uint32(tr); got != sum {
		return nil, sr.bad(at, "CRC-32C %08x, computed %08x", got, sum)
	}
	switch _, err := sr.br.ReadByte(); err {
	case io.EOF:
	case nil:
		return nil, sr.bad(sr.off, "data after the trailer")
	default:
		return nil, fmt.Errorf("tree: reading snapshot: %w", err)
	}
	t.resetDigest()
	return t, nil
}

// node decodes one node record and links it into t. It is the read-th node
// (the root when read is 0).
func (sr *snapReader) node(t *Tree, read int, at int64, body []byte, aclLists [][]proto.ACL, aclEntries []*aclEntry, pendingACL bool) error {
	d := &sr.dec
	// The path and data alias body (sr.buf, reused): the node copies them
	// into its own buffer, and what else is kept is cloned.
	d.Reset(body, true)
	path := d.ReadString()
	data := d.ReadBuffer()
	aclIdx := d.ReadInt()
	var st proto.Stat
	st.Decode(d)
	if err := d.Finish(); err != nil {
		return sr.bad(at, "node record %d: %v", read, err)
	}
	if len(path) > sr.maxBuf || len(data) > sr.maxBuf {
		return sr.bad(at, "node %d: path of %d or data of %d bytes over the limit %d", read, len(path), len(data), sr.maxBuf)
	}
	if int(st.DataLength) != len(data) {
		return sr.bad(at, "%s: dataLength %d but %d data bytes", path, st.DataLength, len(data))
	}
	if aclIdx < 0 || int(aclIdx) >= len(aclLists) {
		return sr.bad(at, "%s: ACL index %d of %d", path, aclIdx, len(aclLists))
	}
	if pendingACL && int(aclIdx) != len(aclLists)-1 {
		return sr.bad(at, "%s: ACL index %d, but ACL record %d precedes it", path, aclIdx, len(aclLists)-1)
	}
	owner := st.EphemeralOwner
	var n *Node
	if read == 0 {
		if path != "/" || owner != 0 {
			return sr.bad(at, "first node %q (owner %#x), want the root", path, owner)
		}
		n = newNode("", data)
		t.root = n
	} else {
		if path == "/" || ValidatePath(path) != nil {
			return sr.bad(at, "node %d: bad path %q", read, path)
		}
		parentPath, name, _ := parentOf(path)
		// Siblings are usually consecutive: remember the last parent.
		parent := sr.lastParent
		if parentPath != sr.lastParentPath || parent == nil {
			parent = t.Get(parentPath)
			if parent == nil {
				return sr.bad(at, "%s: parent not read before it", path)
			}
			sr.lastParentPath, sr.lastParent = strings.Clone(parentPath), parent
		}
		if o := parent.owner; o != 0 && o != ContainerOwner && !IsTTLOwner(o) {
			return sr.bad(at, "%s: child of an ephemeral node", path)
		}
		if parent.child(name) != nil {
			return sr.bad(at, "%s: duplicate node", path)
		}
		n = newNode(name, data)
		parent.ensureKids().add(n)
	}
	n.setRawStat(&st)
	t.dataSize += int64(len(path) + len(data))
	if st.NumChildren != 0 {
		if sr.numChildren == nil {
			sr.numChildren = make(map[*Node]int32)
		}
		sr.numChildren[n] = st.NumChildren
	}
	t.count++
	if e := aclEntries[aclIdx]; e != nil {
		t.acls.addRef(e)
		n.acl = e
	} else {
		n.acl = t.acls.intern(aclLists[aclIdx])
		aclEntries[aclIdx] = n.acl
	}
	if read == 0 {
		return nil
	}
	// The indexes Apply keeps, built as create builds them.
	if owner != 0 {
		t.index(strings.Clone(path), owner, true)
	}
	if underQuota(path) {
		parentPath, name, _ := parentOf(path)
		if target := strings.TrimPrefix(parentPath, QuotaPath); name == quotaLimitNode && target != "" && target != parentPath {
			if t.quotas == nil {
				t.quotas = make(map[string]struct{})
			}
			t.quotas[strings.Clone(target)] = struct{}{}
		}
	}
	return nil
}

// snapReader reads records from a bufio.Reader, keeping the running CRC of
// everything consumed and the offset for error messages.
type snapReader struct {
	br     *bufio.Reader
	crc    uint32
	off    int64
	buf    []byte
	dec    jute.Decoder
	maxBuf int

	lastParentPath string
	lastParent     *Node
	numChildren    map[*Node]int32 // declared numChildren, when not 0
}

func (sr *snapReader) bad(at int64, format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrBadSnapshot, at, fmt.Sprintf(format, args...))
}

// read returns the next n bytes (valid until the next read), adding them to
// the CRC. The buffer grows only as bytes actually arrive, so a forged
// length costs at most about twice the input that backs it.
func (sr *snapReader) read(n int) ([]byte, error) {
	buf := sr.buf[:0]
	for len(buf) < n {
		chunk := n - len(buf)
		if len(buf)+chunk > cap(buf) {
			chunk = min(chunk, max(len(buf), snapBufSize))
		}
		buf = slices.Grow(buf, chunk)
		m, err := io.ReadFull(sr.br, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		if err != nil {
			sr.buf = buf
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil, sr.bad(sr.off+int64(len(buf)), "truncated (%d of %d bytes)", len(buf), n)
			}
			return nil, fmt.Errorf("tree: reading snapshot: %w", err)
		}
	}
	sr.buf = buf
	sr.crc = crc32.Update(sr.crc, castagnoli, buf)
	sr.off += int64(n)
	return buf, nil
}

// record reads one record and returns its kind and body, after checking its
// length against the limit for its kind.
func (sr *snapReader) record() (byte, []byte, error) {
	at := sr.off
	h, err := sr.read(recHeaderSize)
	if err != nil {
		return 0, nil, err
	}
	kind := h[0]
	n := int64(int32(binary.BigEndian.Uint32(h[1:])))
	limit := int64(sr.maxBuf)
	switch kind {
	case recNode:
		limit = 2*int64(sr.maxBuf) + nodeFixedSize
	case recACL, recSession:
	default:
		return 0, nil, sr.bad(at, "unknown record kind %q", kind)
	}
	if n < 0 || n > limit {
		return 0, nil, sr.bad(at, "record %q of %d bytes (limit %d)", kind, n, limit)
	}
	body, err := sr.read(int(n))
	return kind, body, err
}
