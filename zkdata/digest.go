package zkdata

import "github.com/zkgo/zkgo/tree"

// ZooKeeper 3.6+ keeps a digest of its tree (DataTree.getTreeDigest) and
// writes it into snapshots and log entries so that a restarted server can
// tell whether replay rebuilt the same tree: digest version 2, the sum
// modulo 2^64 of one CRC-32 per node (tree.NodeDigest, which zkgo's tree
// keeps current too; nodes under "/zookeeper/" count 0, their quota
// statistics changing outside transactions).

// digestVersion is the only digest version ZooKeeper 3.6 to 3.9 computes.
const digestVersion = tree.DigestVersion

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
	return tree.NodeDigest(path, n.data, &n.st)
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
