package tree

// seqDigits is the width of the counter ZooKeeper appends to a sequential
// node's name ("%010d").
const seqDigits = 10

// sequenceOf returns the counter at the end of a sequential node's name,
// or false when the name does not end with ten digits.
func sequenceOf[T string | []byte](name T) (int64, bool) {
	if len(name) < seqDigits {
		return 0, false
	}
	var v int64
	for i := len(name) - seqDigits; i < len(name); i++ {
		c := name[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// SequenceSuccessor returns the session owning the sibling that comes
// next, by sequence counter, after the node at p, which was just deleted:
// the node that a lock, election or queue waiter watching its predecessor
// (Curator's recipes, go-zookeeper's and zkgo's) would be told about, and
// whose client usually writes next (a lock's next holder, releasing).
// It returns 0 when p's name has no counter, when the parent has more
// than limit children (the scan is bounded), or when that sibling is not
// a session's ephemeral node. Like every read, it needs the tree lock.
func (t *Tree) SequenceSuccessor(p string, limit int) int64 {
	parentPath, name, ok := parentOf(p)
	if !ok {
		return 0
	}
	seq, ok := sequenceOf(name)
	if !ok {
		return 0
	}
	parent := t.Get(parentPath)
	if parent == nil || parent.kids == nil || parent.kids.count == 0 || parent.kids.count > limit {
		return 0
	}
	var next *Node
	var nextSeq int64
	parent.forEachChild(func(c *Node) {
		if s, ok := sequenceOf(c.name()); ok && s > seq && (next == nil || s < nextSeq) {
			next, nextSeq = c, s
		}
	})
	if next == nil || next.owner <= 0 || IsTTLOwner(next.owner) {
		return 0
	}
	return next.owner
}
