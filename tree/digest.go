package tree

import (
	"encoding/binary"
	"github.com/zkgo/zkgo/proto"
	"hash/crc32"
	"strings"
)

// The tree digest, as ZooKeeper 3.6+ keeps it (DataTree's digest, digest
// version 2): the sum, modulo 2^64, of one CRC-32 (IEEE) per node over
//
//	path ("" for the root) | data | czxid mzxid pzxid ctime mtime (8 bytes
//	each, big-endian) | version cversion aversion (4 bytes each) |
//	ephemeralOwner (8 bytes)
//
// of the persisted stat (the raw one: cversion counting creates,
// ephemeralOwner with the container and TTL markers), nodes under
// "/zookeeper/" counting 0 ("/zookeeper" itself counts). Apply keeps it
// current (each change subtracts the digests of the nodes it touches and
// adds them back changed), so members that applied the same log hold the
// same digest — and the same as Apache ZooKeeper for the same tree (the
// zkdata package's tests compare). Every DigestLogInterval zxids the
// digest is logged, the last DigestLogLimit entries kept (the hash
// command).

// DigestVersion is the digest's version, ZooKeeper's DigestCalculator's.
const DigestVersion = 2

const (
	// DigestLogInterval: a digest is logged for the first transaction at
	// or after each multiple of this zxid (ZooKeeper logs every 128th).
	DigestLogInterval = 128
	// DigestLogLimit is how many logged digests are kept.
	DigestLogLimit = 1024
)

// ZxidDigest is the tree digest after the transaction of a zxid.
type ZxidDigest struct {
	Zxid   int64
	Digest uint64
}

// NodeDigest is one node's part of the digest: path is ZooKeeper's ("" or
// "/" for the root), st its persisted stat (dataLength and numChildren
// are not used). The zkdata package computes ZooKeeper's digests with it.
func NodeDigest(path string, data []byte, st *proto.Stat) uint64 {
	if strings.HasPrefix(path, "/zookeeper/") {
		return 0
	}
	if path == "/" {
		path = ""
	}
	var b [60]byte
	binary.BigEndian.PutUint64(b[0:], uint64(st.Czxid))
	binary.BigEndian.PutUint64(b[8:], uint64(st.Mzxid))
	binary.BigEndian.PutUint64(b[16:], uint64(st.Pzxid))
	binary.BigEndian.PutUint64(b[24:], uint64(st.Ctime))
	binary.BigEndian.PutUint64(b[32:], uint64(st.Mtime))
	binary.BigEndian.PutUint32(b[40:], uint32(st.Version))
	binary.BigEndian.PutUint32(b[44:], uint32(st.Cversion))
	binary.BigEndian.PutUint32(b[48:], uint32(st.Aversion))
	binary.BigEndian.PutUint64(b[52:], uint64(st.EphemeralOwner))
	// The path and the stat go through crcString and crcBytes, not
	// crc32.Update: a []byte handed to crc32.Update escapes (it is called
	// through a function value), which cost two allocations per changed
	// node on the write path. The data is a heap slice already.
	c := crcString(0, path)
	c = crc32.Update(c, crc32.IEEETable, data)
	c = crcBytes(c, &b)
	return uint64(c)
}

// crcString is crc32.Update(crc, crc32.IEEETable, []byte(s)), byte by
// byte (paths are short).
func crcString(crc uint32, s string) uint32 {
	crc = ^crc
	for i := 0; i < len(s); i++ {
		crc = crc32.IEEETable[byte(crc)^s[i]] ^ (crc >> 8)
	}
	return ^crc
}

// crcBytes is crcString for the stat's 60 bytes.
func crcBytes(crc uint32, b *[60]byte) uint32 {
	crc = ^crc
	for _, v := range b {
		crc = crc32.IEEETable[byte(crc)^v] ^ (crc >> 8)
	}
	return ^crc
}

// nodeDigest is NodeDigest of a node of the tree.
func nodeDigest(path string, n *Node) uint64 {
	st := n.rawStat()
	return NodeDigest(path, n.Data(), &st)
}

// Digest returns the tree's digest (see above); 0 when it is not kept
// (SetDigestEnabled).
func (t *Tree) Digest() uint64 { return t.digest }

// SetDigestEnabled turns keeping the digest on (the default) or off
// (ZooKeeper's digest.enabled=false): off, Apply saves the CRCs (a few
// hundred nanoseconds a write), Digest returns 0 and nothing is logged.
// The digest is not replicated state: members may differ in this.
func (t *Tree) SetDigestEnabled(on bool) {
	t.noDigest = !on
	if on {
		t.resetDigest()
	} else {
		t.digest, t.digestLog, t.digestHead = 0, nil, 0
	}
}

// unDigest and addDigest take a node's part out of the digest before it
// changes and put it back after.
func (t *Tree) unDigest(path string, n *Node) {
	if !t.noDigest {
		t.digest -= nodeDigest(path, n)
	}
}

func (t *Tree) addDigest(path string, n *Node) {
	if !t.noDigest {
		t.digest += nodeDigest(path, n)
	}
}

// DigestLog returns the logged digests, oldest first (a copy).
func (t *Tree) DigestLog() []ZxidDigest {
	out := make([]ZxidDigest, 0, len(t.digestLog))
	out = append(out, t.digestLog[t.digestHead:]...)
	return append(out, t.digestLog[:t.digestHead]...)
}

// ComputeDigest computes the digest by walking the whole tree (what Apply
// keeps current; for tests and checks).
func (t *Tree) ComputeDigest() uint64 {
	var d uint64
	t.Walk(func(p string, n *Node) { d += nodeDigest(p, n) })
	return d
}

// resetDigest sets the digest from a walk and empties the log (a new or
// loaded tree).
func (t *Tree) resetDigest() {
	if t.noDigest {
		return
	}
	t.digest = t.ComputeDigest()
	t.digestLog, t.digestHead, t.digestMark = nil, 0, t.lastZxid/DigestLogInterval
}

// logDigest logs the digest after zxid if zxid reached a new multiple of
// DigestLogInterval.
func (t *Tree) logDigest(zxid int64) {
	mark := zxid / DigestLogInterval
	if mark <= t.digestMark || t.noDigest {
		return
	}
	t.digestMark = mark
	e := ZxidDigest{Zxid: zxid, Digest: t.digest}
	if len(t.digestLog) < DigestLogLimit {
		t.digestLog = append(t.digestLog, e)
		return
	}
	t.digestLog[t.digestHead] = e
	t.digestHead = (t.digestHead + 1) % DigestLogLimit
}
