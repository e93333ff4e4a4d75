package tree

import (
	"bytes"
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"
)

// children is a node's set of children plus the two Stat fields that change
// only with them (pzxid and the child-create count). A node gets one when
// its first child is created (and loses it only if a failed multi undoes
// that create), or when a snapshot gives it a pzxid or cversion of its own:
// a node without one has pzxid = czxid, cversion 0 and no children. Only Apply (and ReadSnapshot, before the tree
// is shared) modify it; readers may run concurrently with each other.
//
// The set is keyed by the children's names, which live in the children
// themselves (Node.bytes), so an entry costs one pointer:
//
//   - up to smallKids children: slots holds them packed, in no order, and a
//     lookup compares names one by one;
//   - above: slots is an open-addressing table (linear probing, power-of-two
//     length, nil = free) hashed with a per-process random seed, kept between
//     1/8 and 3/4 full; tags holds, per slot, 7 bits of the entry's hash
//     with the high bit set (0 = free), so that a probe reads a child only
//     when its tag matches.
//
// Iteration order is therefore arbitrary and differs between processes:
// everything observable (listings, Walk, snapshots) sorts by name.
type children struct {
	pzxid    int64
	cversion int32 // child creates; names sequential children
	hashed   bool
	count    int
	slots    []*Node
	tags     []uint8

	// list caches the sorted names for Node.Children; nil until a reader
	// asks (concurrent readers may race to build it: hence the atomics).
	// handed is set when a reader returns the current backing array: from
	// then on nobody may modify it, and the next change copies it. While
	// it is not handed out, Apply edits it in place; edits counts those
	// edits, and after maxListEdits changes without a listing the cache is
	// dropped (rebuilding it then costs less than keeping it in step).
	list   atomic.Pointer[[]string]
	handed atomic.Bool
	edits  int
}

const (
	smallKids    = 8
	maxListEdits = 64
)

// noChildren is what Children returns for a node without children: empty,
// not nil (a nil list would be encoded as a null vector).
var noChildren = []string{}

var nameSeed = maphash.MakeSeed()

// hashName and hashBytes agree on equal contents (maphash guarantees it).
func hashName(s string) uint64  { return maphash.String(nameSeed, s) }
func hashBytes(b []byte) uint64 { return maphash.Bytes(nameSeed, b) }

// tableSize is the table length for count entries: a power of two, at
// least 16, at most half full.
func tableSize(count int) int {
	size := 16
	for size < 2*count {
		size *= 2
	}
	return size
}

// tagOf is the tag of a hash: its top 7 bits, with the high bit set.
func tagOf(h uint64) uint8 { return uint8(h>>57) | 0x80 }

func (c *children) get(name string) *Node {
	if !c.hashed {
		for _, n := range c.slots {
			if n.nameIs(name) {
				return n
			}
		}
		return nil
	}
	h := hashName(name)
	tag := tagOf(h)
	mask := uint64(len(c.slots) - 1)
	tags := c.tags[:len(c.slots)]
	for i := h & mask; ; i = (i + 1) & mask {
		switch tags[i] {
		case 0:
			return nil
		case tag:
			if n := c.slots[i]; n.nameIs(name) {
				return n
			}
		}
	}
}

// add inserts n, whose name must not be in the set.
func (c *children) add(n *Node) {
	c.count++
	switch {
	case !c.hashed && len(c.slots) < smallKids:
		c.slots = append(c.slots, n)
	case !c.hashed || c.count*4 > len(c.slots)*3:
		c.resize(tableSize(c.count))
		c.place(n)
	default:
		c.place(n)
	}
	if c.list.Load() != nil {
		c.listEdit(string(n.name()), true)
	}
}

// place puts n in the first free slot of its probe sequence.
func (c *children) place(n *Node) {
	h := hashBytes(n.name())
	mask := uint64(len(c.slots) - 1)
	i := h & mask
	for c.tags[i] != 0 {
		i = (i + 1) & mask
	}
	c.slots[i], c.tags[i] = n, tagOf(h)
}

// resize rebuilds the set as a table of the given length, or as a packed
// slice when size is 0.
func (c *children) resize(size int) {
	old := c.slots
	if size == 0 {
		c.slots = make([]*Node, 0, smallKids)
		c.tags = nil
		c.hashed = false
		for _, n := range old {
			if n != nil {
				c.slots = append(c.slots, n)
			}
		}
		return
	}
	c.slots = make([]*Node, size)
	c.tags = make([]uint8, size)
	c.hashed = true
	for _, n := range old {
		if n != nil {
			c.place(n)
		}
	}
}

// remove deletes the child called name and returns it (nil if absent).
func (c *children) remove(name string) *Node {
	if !c.hashed {
		for i, n := range c.slots {
			if n.nameIs(name) {
				last := len(c.slots) - 1
				c.slots[i], c.slots[last] = c.slots[last], nil
				c.slots = c.slots[:last]
				c.count--
				c.listEdit(name, false)
				return n
			}
		}
		return nil
	}
	h := hashName(name)
	tag := tagOf(h)
	mask := uint64(len(c.slots) - 1)
	i := h & mask
	for {
		if c.tags[i] == 0 {
			return nil
		}
		if c.tags[i] == tag && c.slots[i].nameIs(name) {
			break
		}
		i = (i + 1) & mask
	}
	removed := c.slots[i]
	// Backward-shift deletion: move up every later entry of the cluster
	// whose home slot is not in the cyclic range (i, j], so that no probe
	// sequence crosses a hole.
	for j := (i + 1) & mask; c.tags[j] != 0; j = (j + 1) & mask {
		home := hashBytes(c.slots[j].name()) & mask
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			c.slots[i], c.tags[i] = c.slots[j], c.tags[j]
			i = j
		}
	}
	c.slots[i], c.tags[i] = nil, 0
	c.count--
	switch {
	case c.count <= smallKids/2:
		c.resize(0)
	case c.count*8 < len(c.slots):
		c.resize(tableSize(c.count))
	}
	c.listEdit(name, false)
	return removed
}

// forEach calls fn for every child, in no particular order.
func (c *children) forEach(fn func(*Node)) {
	for _, n := range c.slots {
		if n != nil {
			fn(n)
		}
	}
}

// sorted appends the children to buf in name order and returns it.
func (c *children) sorted(buf []*Node) []*Node {
	start := len(buf)
	for _, n := range c.slots {
		if n != nil {
			buf = append(buf, n)
		}
	}
	slices.SortFunc(buf[start:], func(a, b *Node) int { return bytes.Compare(a.name(), b.name()) })
	return buf
}

// listing returns the sorted names, building the cache if needed. It may
// run concurrently with other readers.
func (c *children) listing() []string {
	p := c.list.Load()
	if p == nil {
		l := c.buildList()
		if !c.list.CompareAndSwap(nil, &l) {
			p = c.list.Load()
		} else {
			p = &l
		}
	}
	if !c.handed.Load() {
		c.handed.Store(true)
	}
	l := *p
	return l[:len(l):len(l)]
}

// buildList copies the names, in one block, and sorts them.
func (c *children) buildList() []string {
	total := 0
	c.forEach(func(n *Node) { total += n.nameLen() })
	var b strings.Builder
	b.Grow(total)
	c.forEach(func(n *Node) { b.Write(n.name()) })
	block := b.String()
	l := make([]string, 0, c.count)
	off := 0
	c.forEach(func(n *Node) {
		end := off + n.nameLen()
		l = append(l, block[off:end])
		off = end
	})
	slices.Sort(l)
	return l[:len(l):len(l)]
}

// listEdit keeps the listing cache, if any, in step with the addition or
// removal of name (Apply only). An added name is stored: the caller passes
// a string it owns.
func (c *children) listEdit(name string, add bool) {
	p := c.list.Load()
	if p == nil {
		return
	}
	l := *p
	i, found := slices.BinarySearch(l, name)
	if found == add { // the cache disagrees with the set: cannot happen
		c.list.Store(nil)
		return
	}
	if c.handed.Load() {
		// Readers may hold l: build a new array.
		size := len(l) - 1
		if add {
			size = len(l) + 1
		}
		nl := make([]string, 0, size)
		nl = append(nl, l[:i]...)
		if add {
			nl = append(nl, name)
			nl = append(nl, l[i:]...)
		} else {
			nl = append(nl, l[i+1:]...)
		}
		c.handed.Store(false)
		c.edits = 0
		c.list.Store(&nl)
		return
	}
	c.edits++
	if c.edits > maxListEdits {
		c.list.Store(nil)
		return
	}
	if add {
		l = slices.Insert(l, i, name)
	} else {
		l = slices.Delete(l, i, i+1)
	}
	*p = l
}
