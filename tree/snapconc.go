package tree

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/zkgo/zkgo/proto"
)

// Snapshots written while Apply goes on.
//
// BeginSnapshot fixes the state to write: the last zxid, the node count,
// the session table (copied; it is small) and the root. From then on, until
// the snapshot is written, Apply keeps the pre-image of every node that
// existed at the start before it first changes it (its buffer, ACL, stat
// and the list of its children): see Tree.preserve. The writer walks the
// tree from the root and, for each node, uses its pre-image if there is one
// and its live fields otherwise — a node Apply has not touched since the
// start is still as it was then — so it writes exactly the state at the
// start while applying goes on. It reads the tree under the caller's read
// lock, one node at a time, so Apply (under the write lock) waits for at
// most one node's capture, never for the walk; encoding, sorting and
// writing happen outside the lock. A node's name and data bytes are never
// modified once set (setData replaces the buffer), so the slices captured
// under the lock stay valid after it is released.
//
// Nodes created after the start are never reached (the children lists the
// writer follows are the ones at the start) and need no pre-image; removed
// nodes stay reachable from their parent's pre-image and are not modified
// once unlinked.

// snapState is the bookkeeping of the snapshot being written.
type snapState struct {
	lastZxid int64 // nodes with a higher czxid were created after the start
	// pre holds the pre-images; Apply adds to it under the caller's write
	// lock, the writer reads it under the read lock.
	pre  map[*Node]*nodeImage
	done atomic.Bool // the writer finished: Apply drops the state
}

// nodeImage is what a snapshot writes of a node.
type nodeImage struct {
	buf  []byte // name, then data (never modified)
	meta uint32
	acl  *aclEntry
	st   proto.Stat // rawStat
	kids []kidRef   // the children, in no order
}

// kidRef is a child, its name (a slice of its never-modified buffer) and
// a sort key (see sortKids).
type kidRef struct {
	key  uint64
	name []byte
	n    *Node
}

// sortKids sorts kids by name, using tmp (grown as needed, returned) as
// scratch. A snapshot sorts every node's children, so this is on the
// snapshot's hot path: a parent may hold a million children.
//
// Siblings often share a prefix (lock-0000000…, n0…) and then differ within
// a few bytes, so each name's key is the 8 bytes after the prefix all
// siblings share, as a big-endian integer, zero-padded. Names hold no NUL
// byte, so ordering by key orders names as bytes.Compare does, except among
// equal keys (names that go on beyond them). The keys are radix-sorted
// (least significant byte first, skipping bytes all keys share), then runs
// of equal keys are sorted by comparing the names.
func sortKids(kids, tmp []kidRef) []kidRef {
	if len(kids) < 2 {
		return tmp
	}
	if len(kids) <= 24 {
		slices.SortFunc(kids, func(a, b kidRef) int { return bytes.Compare(a.name, b.name) })
		return tmp
	}
	common := kids[0].name
	for i := 1; i < len(kids) && len(common) > 0; i++ {
		name := kids[i].name
		j := 0
		for j < len(common) && j < len(name) && common[j] == name[j] {
			j++
		}
		common = common[:j]
	}
	cp := len(common)
	var or, and uint64 = 0, ^uint64(0)
	for i := range kids {
		var b [8]byte
		if len(kids[i].name) > cp {
			copy(b[:], kids[i].name[cp:])
		}
		k := binary.BigEndian.Uint64(b[:])
		kids[i].key = k
		or |= k
		and &= k
	}
	tmp = slices.Grow(tmp[:0], len(kids))[:len(kids)]
	src, dst := kids, tmp
	for shift := uint(0); shift < 64; shift += 8 {
		if (or>>shift)&0xff == (and>>shift)&0xff {
			continue // every key has the same byte here
		}
		var count [256]int
		for i := range src {
			count[(src[i].key>>shift)&0xff]++
		}
		pos := 0
		for i := range count {
			c := count[i]
			count[i] = pos
			pos += c
		}
		for i := range src {
			b := (src[i].key >> shift) & 0xff
			dst[count[b]] = src[i]
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &kids[0] {
		copy(kids, src)
	}
	for i := 0; i < len(kids); {
		j := i + 1
		for j < len(kids) && kids[j].key == kids[i].key {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(kids[i:j], func(a, b kidRef) int { return bytes.Compare(a.name, b.name) })
		}
		i = j
	}
	clear(tmp) // drop the node pointers
	return tmp
}

func (img *nodeImage) data() []byte {
	if img.meta&nilData != 0 {
		return nil
	}
	return img.buf[img.meta&^nilData:]
}

// capture sets img to n's live state, reusing img.kids.
func (img *nodeImage) capture(n *Node) {
	img.buf, img.meta, img.acl, img.st = n.bytes(), n.meta, n.acl, n.rawStat()
	img.kids = img.kids[:0]
	if n.kids != nil && n.kids.count > 0 {
		n.kids.forEach(func(c *Node) { img.kids = append(img.kids, kidRef{name: c.name(), n: c}) })
	}
}

// preserve keeps n's state for the snapshot being written, if any, before
// Apply (or SetConfigData) first changes n or its children set.
func (t *Tree) preserve(n *Node) {
	s := t.snap
	if s == nil {
		return
	}
	if s.done.Load() {
		t.snap = nil
		return
	}
	if n.czxid > s.lastZxid {
		return // created after the start: not in the snapshot
	}
	if _, ok := s.pre[n]; ok {
		return
	}
	img := &nodeImage{}
	img.capture(n)
	img.kids = slices.Clip(img.kids)
	s.pre[n] = img
}

// ErrSnapshotInProgress is returned by BeginSnapshot while the previous
// snapshot of the tree is still being written.
var ErrSnapshotInProgress = errors.New("tree: a snapshot is already being written")

// Snapshot is the state of a Tree as of a BeginSnapshot call, to be written
// (once) by Write while Apply goes on.
type Snapshot struct {
	s        *snapState // nil: nothing changes the tree while Write runs
	root     *Node
	lastZxid int64
	count    int
	sessions []Session
}

// BeginSnapshot fixes the state a snapshot will hold: the tree as it is
// now. Call it where Apply could be called (no Apply or read running
// concurrently); then call Write exactly once, from any goroutine, while
// Apply goes on. Until Write returns, Apply keeps what it changes for the
// snapshot (a few hundred bytes per changed node). A Tree writes one
// snapshot at a time: BeginSnapshot returns ErrSnapshotInProgress until the
// previous snapshot's Write has returned.
func (t *Tree) BeginSnapshot() (*Snapshot, error) {
	if t.snap != nil {
		if !t.snap.done.Load() {
			return nil, ErrSnapshotInProgress
		}
		t.snap = nil
	}
	sn, err := t.fixSnapshot()
	if err != nil {
		return nil, err
	}
	sn.s = &snapState{lastZxid: t.lastZxid, pre: make(map[*Node]*nodeImage)}
	t.snap = sn.s
	return sn, nil
}

func (t *Tree) fixSnapshot() (*Snapshot, error) {
	if t.root == nil {
		return nil, errors.New("tree: snapshot: no root")
	}
	if t.count > math.MaxInt32 || len(t.sessions) > math.MaxInt32 {
		return nil, errors.New("tree: snapshot: too many nodes or sessions")
	}
	sn := &Snapshot{root: t.root, lastZxid: t.lastZxid, count: t.count}
	for _, s := range t.Sessions() {
		sn.sessions = append(sn.sessions, Session{ID: s.ID, Timeout: s.Timeout, Passwd: s.Passwd, Claim: s.Claim})
	}
	return sn, nil
}

// Write writes the snapshot to w in the format described at the top of
// snapshot.go, the same bytes WriteSnapshot would have written at the
// BeginSnapshot call. rl is the read side of the lock under which the
// tree's writes (Apply, SetConfigData) run; Write holds it while it reads
// one node at a time. With w nil, Write writes nothing and only ends the
// snapshot (Apply stops keeping pre-images).
func (sn *Snapshot) Write(w io.Writer, rl sync.Locker) error {
	if sn.s != nil {
		defer sn.s.done.Store(true)
	}
	if w == nil {
		return nil
	}
	sw := &snapWriter{bw: bufio.NewWriterSize(w, snapBufSize)}
	sw.header(sn.lastZxid, int32(sn.count), int32(len(sn.sessions)))

	// Depth-first, parents before children, siblings sorted: Walk's order,
	// with an explicit stack (paths may be deep), an early stop on error,
	// and the current path built in one reused buffer.
	type pending struct {
		prefix int // length of the parent's path in pathBuf ("/" counts as 0)
		n      *Node
	}
	aclIndex := make(map[*aclEntry]int32)
	written := 0
	stack := []pending{{0, sn.root}}
	var pathBuf []byte
	var live nodeImage
	var sortTmp []kidRef
	for len(stack) > 0 && sw.err == nil {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := top.n
		img := sn.image(n, rl, &live)
		pathBuf = append(append(pathBuf[:top.prefix], '/'), img.buf[:img.meta&^nilData]...)
		idx, ok := aclIndex[img.acl]
		if !ok {
			idx = int32(len(aclIndex))
			aclIndex[img.acl] = idx
			sw.acl(img.acl.list)
		}
		sw.node(pathBuf, img.data(), idx, &img.st)
		written++
		if written > sn.count {
			break
		}
		kids := img.kids
		if img != &live {
			// A pre-image is shared with Apply's map: sort a copy.
			kids = append(live.kids[:0], kids...)
			live.kids = kids
		}
		sortTmp = sortKids(kids, sortTmp)
		prefix := len(pathBuf)
		if n == sn.root {
			prefix = 0
		}
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, pending{prefix, kids[i].n})
		}
	}
	if sw.err == nil && written != sn.count {
		return fmt.Errorf("tree: snapshot: %d nodes reachable from the root, %d in the tree", written, sn.count)
	}
	for i := range sn.sessions {
		sw.session(&sn.sessions[i])
	}
	return sw.finish()
}

// image returns n's state at the start: its pre-image, or its live state
// captured into live.
func (sn *Snapshot) image(n *Node, rl sync.Locker, live *nodeImage) *nodeImage {
	if sn.s == nil {
		live.capture(n)
		return live
	}
	rl.Lock()
	defer rl.Unlock()
	if img := sn.s.pre[n]; img != nil {
		return img
	}
	live.capture(n)
	return live
}
