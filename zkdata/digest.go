package zkdata

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
)

// ZooKeeper 3.6+ keeps a digest of its tree (DataTree.getTreeDigest) and
// writes it into snapshots and log entries so that a restarted server can
// tell whether replay rebuilt the same tree. Digest version 2 is the sum,
// modulo 2^64, of one CRC-32 (IEEE) per node over
//
//	path bytes ("" for the root) | data bytes (none when null) |
//	czxid mzxid pzxid ctime mtime (8 bytes each, big-endian) |
//	version cversion aversion (4 bytes each) | ephemeralOwner (8 bytes)
//
// where the stat is the persisted one (cversion counting creates,
// ephemeralOwner with the container and TTL markers) and nodes whose path
// starts with "/zookeeper/" count 0 (their quota statistics change outside
// transactions). "/zookeeper" itself counts.

// digestVersion is the only digest version ZooKeeper 3.6 to 3.9 computes.
const digestVersion = 2

// systemSubtree is ZooDefs.ZOOKEEPER_NODE_SUBTREE.
const systemSubtree = "/zookeeper/"

// nodeDigest returns the digest of the node at path (a DataTree key: "" is
// the root).
func nodeDigest(path string, n *znode) uint64 {
	if n.digOK {
		return n.dig
	}
	n.dig, n.digOK = digestOf(path, n), true
	return n.dig
}

// digestOf computes the digest of a node, without the cache.
func digestOf(path string, n *znode) uint64 {
	var d uint64
	if !strings.HasPrefix(path, systemSubtree) {
		var b [60]byte
		st := &n.st
		binary.BigEndian.PutUint64(b[0:], uint64(st.Czxid))
		binary.BigEndian.PutUint64(b[8:], uint64(st.Mzxid))
		binary.BigEndian.PutUint64(b[16:], uint64(st.Pzxid))
		binary.BigEndian.PutUint64(b[24:], uint64(st.Ctime))
		binary.BigEndian.PutUint64(b[32:], uint64(st.Mtime))
		binary.BigEndian.PutUint32(b[40:], uint32(st.Version))
		binary.BigEndian.PutUint32(b[44:], uint32(st.Cversion))
		binary.BigEndian.PutUint32(b[48:], uint32(st.Aversion))
		binary.BigEndian.PutUint64(b[52:], uint64(st.EphemeralOwner))
		c := crc32.ChecksumIEEE([]byte(path))
		c = crc32.Update(c, crc32.IEEETable, n.data)
		c = crc32.Update(c, crc32.IEEETable, b[:])
		d = uint64(c)
	}
	return d
}

// put adds a node to the tree and its digest to the tree digest.
func (im *Image) put(path string, n *znode) {
	n.digOK = false
	im.nodes[path] = n
	im.digest += nodeDigest(path, n)
	if o := n.st.EphemeralOwner; isSessionOwner(o) {
		set := im.ephem[o]
		if set == nil {
			set = make(map[string]struct{})
			im.ephem[o] = set
		}
		set[path] = struct{}{}
	}
}

// remove takes a node out of the tree and the tree digest.
func (im *Image) remove(path string) *znode {
	n := im.nodes[path]
	if n != nil {
		im.digest -= nodeDigest(path, n)
		delete(im.nodes, path)
		if o := n.st.EphemeralOwner; isSessionOwner(o) {
			delete(im.ephem[o], path)
			if len(im.ephem[o]) == 0 {
				delete(im.ephem, o)
			}
		}
	}
	return n
}

// change runs fn, which modifies n, keeping the tree digest current.
func (im *Image) change(path string, n *znode, fn func()) {
	im.digest -= nodeDigest(path, n)
	fn()
	n.digOK = false
	im.digest += nodeDigest(path, n)
}

// computeDigest returns the tree digest from scratch.
func (im *Image) computeDigest() uint64 {
	var sum uint64
	for p, n := range im.nodes {
		n.digOK = false
		sum += nodeDigest(p, n)
	}
	return sum
}
