// Package tree is zkgo's znode tree: a deterministic state machine that
// applies transactions and answers reads.
//
// The tree does no I/O, reads no clock and starts no goroutines. Everything
// Apply decides (existence, versions, ACLs, sequential suffixes, session
// validity) depends only on the transaction and the tree as it is at that
// log position, so every replica that applies the same transactions in the
// same order holds the same tree and returns the same results.
//
// A Tree is not safe for concurrent use: one goroutine (the server's apply
// loop) owns it. Readers on other goroutines must be serialised with Apply by
// the owner (the server holds a RWMutex around both); reads may run
// concurrently with each other (Node.Children builds its cache safely).
package tree

import (
	"math"
	"sort"
	"strings"
	"unsafe"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
)

// System paths ZooKeeper creates and protects.
const (
	ZookeeperPath = "/zookeeper"
	QuotaPath     = "/zookeeper/quota"
	ConfigPath    = "/zookeeper/config"
)

// Ephemeral-owner encodings of ZooKeeper's EphemeralType: containers carry
// only the high bit, TTL nodes the high byte 0xff and the TTL in the low 40
// bits. Clients see these values in Stat.EphemeralOwner.
const (
	ContainerOwner int64 = -1 << 63 // 0x8000000000000000
	ttlOwnerMask   int64 = -1 << 56 // 0xff00000000000000
	MaxTTL         int64 = 1<<40 - 1
)

// IsTTLOwner reports whether an ephemeral owner encodes a TTL node.
func IsTTLOwner(owner int64) bool { return owner&ttlOwnerMask == ttlOwnerMask }

// TTLOf returns the TTL in milliseconds encoded in a TTL node's owner.
func TTLOf(owner int64) int64 { return owner & MaxTTL }

// Node is one znode. Fields are read through the Tree's read methods; the
// Tree is the only writer.
//
// The layout is chosen for memory (80 bytes, one size class): the node keeps
// only its name (not its path: the tree is reached from the root), stored
// with its data in one allocation, which it holds by a pointer and a 32-bit
// length (a slice would take 24 bytes instead of 12, and the node 96); the
// ACL is a shared, reference-counted list; pzxid, the child-create count
// and the children live in a separate children set that only nodes which
// ever had a child carry; dataLength and numChildren are not stored but
// derived.
type Node struct {
	// bufp and blen are the buffer (see bytes): the name (meta's low bits
	// give its length), then the data. It is never modified once set:
	// setData replaces it, so a slice of it handed to a reader stays
	// valid.
	bufp  *byte
	acl   *aclEntry
	kids  *children // nil: no children ever (pzxid = czxid, cversion 0)
	czxid int64
	mzxid int64
	ctime int64
	mtime int64
	owner int64 // ephemeralOwner, with the container and TTL markers
	blen  uint32
	// version and aversion as in Stat; meta is the name length plus the
	// nilData bit (the data is null, not empty: clients see the difference).
	version  int32
	aversion int32
	meta     uint32
}

const nilData uint32 = 1 << 31

// newNode returns a node called name holding a copy of data.
func newNode(name string, data []byte) *Node {
	n := &Node{}
	n.setBuf(name, data)
	return n
}

// bytes returns the node's buffer: its name, then its data. The caller
// must not modify it.
func (n *Node) bytes() []byte { return unsafe.Slice(n.bufp, n.blen) }

// setBytes makes buf the node's buffer (name and data, as bytes returns
// them); buf must not be modified afterwards.
func (n *Node) setBytes(buf []byte) {
	if uint64(len(buf)) > math.MaxUint32 {
		// Requests are framed with 32-bit lengths: cannot happen.
		panic("tree: a znode's name and data exceed 4 GiB")
	}
	n.bufp, n.blen = unsafe.SliceData(buf), uint32(len(buf))
}

// setBuf stores name and a copy of data in a new buffer.
func (n *Node) setBuf(name string, data []byte) {
	buf := make([]byte, len(name)+len(data))
	copy(buf, name)
	copy(buf[len(name):], data)
	n.setBytes(buf)
	n.meta = uint32(len(name))
	if data == nil {
		n.meta |= nilData
	}
}

// setData replaces the node's data with a copy of data, keeping its name.
func (n *Node) setData(data []byte) {
	l := n.nameLen()
	buf := make([]byte, l+len(data))
	copy(buf, n.bytes()[:l])
	copy(buf[l:], data)
	n.setBytes(buf)
	n.meta = uint32(l)
	if data == nil {
		n.meta |= nilData
	}
}

func (n *Node) nameLen() int { return int(n.meta &^ nilData) }

// name returns the node's name; the caller must not modify or keep it.
func (n *Node) name() []byte { return n.bytes()[:n.nameLen()] }

func (n *Node) nameIs(s string) bool {
	l := n.nameLen()
	return l == len(s) && string(n.bytes()[:l]) == s
}

func (n *Node) dataLen() int { return int(n.blen) - n.nameLen() }

// child returns the child called name, or nil.
func (n *Node) child(name string) *Node {
	if n.kids == nil || n.kids.count == 0 {
		return nil
	}
	return n.kids.get(name)
}

// ensureKids returns the node's children set, creating it.
func (n *Node) ensureKids() *children {
	if n.kids == nil {
		n.kids = &children{pzxid: n.czxid}
	}
	return n.kids
}

// forEachChild calls fn for every child, in no particular order.
func (n *Node) forEachChild(fn func(*Node)) {
	if n.kids != nil {
		n.kids.forEach(fn)
	}
}

// sortedChildren appends the children to buf in name order.
func (n *Node) sortedChildren(buf []*Node) []*Node {
	if n.kids == nil {
		return buf
	}
	return n.kids.sorted(buf)
}

// rawStat returns the tree's internal Stat of the node, as snapshots hold
// it: cversion counts child creates, ephemeralOwner carries the container
// and TTL markers.
func (n *Node) rawStat() proto.Stat {
	st := proto.Stat{
		Czxid: n.czxid, Mzxid: n.mzxid, Ctime: n.ctime, Mtime: n.mtime,
		Version: n.version, Aversion: n.aversion, EphemeralOwner: n.owner,
		DataLength: int32(n.dataLen()), Pzxid: n.czxid,
	}
	if k := n.kids; k != nil {
		st.Pzxid, st.Cversion, st.NumChildren = k.pzxid, k.cversion, int32(k.count)
	}
	return st
}

// RawStat returns the node's Stat as the tree keeps it and snapshots hold
// it, not as clients see it (see Stat): cversion counts child creates and
// ephemeralOwner carries the container and TTL markers. Exporters that
// write ZooKeeper's own snapshot format need these counters.
func (n *Node) RawStat() proto.Stat { return n.rawStat() }

// setRawStat sets the node's fields from an internal Stat (snapshots);
// dataLength and numChildren are not stored.
func (n *Node) setRawStat(st *proto.Stat) {
	n.czxid, n.mzxid, n.ctime, n.mtime = st.Czxid, st.Mzxid, st.Ctime, st.Mtime
	n.version, n.aversion, n.owner = st.Version, st.Aversion, st.EphemeralOwner
	if st.Pzxid != st.Czxid || st.Cversion != 0 {
		k := n.ensureKids()
		k.pzxid, k.cversion = st.Pzxid, st.Cversion
	}
}

// Tree is the znode tree plus the replicated session table.
type Tree struct {
	root       *Node
	count      int   // znodes, the root once
	dataSize   int64 // sum of every znode's path and data lengths (ApproximateDataSize)
	acls       aclCache
	ephemerals map[int64]map[string]struct{}
	containers map[string]struct{}
	ttls       map[string]struct{}
	sessions   map[int64]*Session

	quotas map[string]struct{} // paths that have a zookeeper_limits node

	// digest is the tree digest (digest.go); digestLog a ring of the
	// logged ones (digestHead: the oldest once full), digestMark the
	// zxid/DigestLogInterval of the last logged.
	digest     uint64
	noDigest   bool // SetDigestEnabled(false)
	digestLog  []ZxidDigest
	digestHead int
	digestMark int64
	opts       Options
	lastZxid   int64

	// QuotaWarning, when set, is called during Apply when a write goes past
	// a soft quota limit. It must not call back into the tree.
	QuotaWarning func(prefix, what string, value, limit int64)

	// Per-Apply scratch: events produced by the current transaction and,
	// inside a multi, the undo journal.
	events  []Event
	journal []func()
	inMulti bool

	// snap is the snapshot being written while Apply goes on, if any (see
	// snapconc.go).
	snap *snapState
}

// Session is a session as replicated state: its id, negotiated timeout and
// password. Liveness (when it last heard from the client) is not replicated.
type Session struct {
	ID      int64
	Timeout int32
	Passwd  []byte
	// Claim is the log position of the newest claim on the session: the
	// zxid of its createSession, or the log index of the last session
	// move (ClaimSession). A transaction proposed for an older claim is
	// refused with SessionMoved (see Txn.Claim). 0: no claim recorded
	// (a snapshot of format version 1).
	Claim int64
}

// New returns a tree holding "/", "/zookeeper", "/zookeeper/quota" and
// "/zookeeper/config" as ZooKeeper creates them.
func New() *Tree {
	t := &Tree{
		acls:       newACLCache(),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		sessions:   make(map[int64]*Session),
	}
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	t.root = newNode("", []byte{})
	t.root.acl = t.acls.intern(open)
	t.count = 1
	t.dataSize = 1 // "/"
	t.addSystemNode(ZookeeperPath, open)
	t.addSystemNode(QuotaPath, open)
	readOnly := []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	t.addSystemNode(ConfigPath, readOnly)
	t.Get(ConfigPath).aversion = -1 // as ZooKeeper creates it
	t.resetDigest()
	return t
}

func (t *Tree) addSystemNode(p string, acls []proto.ACL) {
	parent, name, _ := parentOf(p)
	pn := t.Get(parent)
	n := newNode(name, []byte{})
	n.acl = t.acls.intern(acls)
	pn.ensureKids().add(n) // cversion and pzxid stay 0, as in ZooKeeper
	t.count++
	t.dataSize += int64(len(p))
}

// LastZxid returns the zxid of the last applied transaction.
func (t *Tree) LastZxid() int64 { return t.lastZxid }

// NodeCount returns the number of znodes as ZooKeeper reports it: the root
// is counted twice (ZooKeeper keeps it under "" and "/"), so a fresh tree
// has 5.
func (t *Tree) NodeCount() int { return t.count + 1 }

// Get returns a node by path, or nil. Like ZooKeeper, "" finds the root.
// Only a path as ValidatePath accepts it finds a node other than the root.
func (t *Tree) Get(p string) *Node {
	_, n := t.lookup(p)
	return n
}

// lookup returns the node at p and its parent (nil for the root), or a nil
// node.
func (t *Tree) lookup(p string) (parent, n *Node) {
	if len(p) <= 1 {
		if p == "" || p == "/" {
			return nil, t.root
		}
		return nil, nil
	}
	if p[0] != '/' {
		return nil, nil
	}
	n = t.root
	rest := p[1:]
	for {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return n, n.child(rest)
		}
		if n = n.child(rest[:i]); n == nil {
			return nil, nil
		}
		rest = rest[i+1:]
	}
}

// Stat returns the node's Stat as clients see it. Like ZooKeeper's
// DataNode.copyStat: the tree counts child creates in cversion (that count
// names sequential children), clients see creates plus deletes
// (2*creates - current children); containers and TTL nodes show
// ephemeralOwner 0.
func (n *Node) Stat() proto.Stat {
	st := n.rawStat()
	st.Cversion = st.Cversion*2 - st.NumChildren
	if o := st.EphemeralOwner; o == ContainerOwner || IsTTLOwner(o) {
		st.EphemeralOwner = 0
	}
	return st
}

// Data returns the node's data (nil if it is null). The caller must not
// modify it; the slice stays valid after later changes (the tree replaces,
// never mutates, data).
func (n *Node) Data() []byte {
	if n.meta&nilData != 0 {
		return nil
	}
	buf := n.bytes()
	return buf[n.nameLen():len(buf):len(buf)]
}

// ACL returns the node's ACL list; the caller must not modify it.
func (n *Node) ACL() []proto.ACL { return n.acl.list }

// Children returns the node's child names in sorted (byte-wise) order, an
// empty non-nil slice when it has none.
//
// The slice is shared: the tree caches it per node and returns the same
// one to every caller until the children change, so the caller must not
// modify it (nor append to it in place: its capacity is its length). It
// stays valid and unchanged after later changes (the tree then builds a new
// one). Children may be called by concurrent readers (under the owner's
// read lock); the cache is built on the first call after a change that it
// could not follow, and kept in step with creates and deletes after that.
func (n *Node) Children() []string {
	if n.kids == nil || n.kids.count == 0 {
		return noChildren
	}
	return n.kids.listing()
}

// NumChildren returns the number of children.
func (n *Node) NumChildren() int {
	if n.kids == nil {
		return 0
	}
	return n.kids.count
}

// CountDescendants returns the number of nodes below p (getAllChildrenNumber).
func (t *Tree) CountDescendants(p string) int {
	n := t.Get(p)
	if n == nil {
		return 0
	}
	return countBelow(n)
}

func countBelow(n *Node) int {
	total := 0
	forSubtree(n, func(*Node) { total++ })
	return total - 1
}

// forSubtree calls fn for n and every node below it, in no particular
// order. It keeps an explicit stack: paths may be deep.
func forSubtree(n *Node, fn func(*Node)) {
	stack := []*Node{n}
	for len(stack) > 0 {
		m := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		fn(m)
		m.forEachChild(func(c *Node) { stack = append(stack, c) })
	}
}

// Ephemerals returns the paths of the ephemeral nodes owned by session,
// sorted.
func (t *Tree) Ephemerals(session int64) []string {
	set := t.ephemerals[session]
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// EphemeralCount returns the total number of ephemeral nodes.
func (t *Tree) EphemeralCount() int {
	n := 0
	for _, s := range t.ephemerals {
		n += len(s)
	}
	return n
}

// Session returns the replicated session with the given id, or nil.
func (t *Tree) Session(id int64) *Session { return t.sessions[id] }

// ClaimSession records that a client resumed session id, the claim being
// at log index claim (a session move, applied in log order between
// transactions): transactions of the session proposed for an older claim
// are refused from now on (Txn.Claim). Claims only grow; an unknown
// session is ignored.
func (t *Tree) ClaimSession(id, claim int64) {
	if s := t.sessions[id]; s != nil && claim > s.Claim {
		s.Claim = claim
	}
}

// SessionCount returns the number of replicated sessions.
func (t *Tree) SessionCount() int { return len(t.sessions) }

// Sessions returns all sessions, sorted by id.
func (t *Tree) Sessions() []*Session {
	out := make([]*Session, 0, len(t.sessions))
	for _, s := range t.sessions {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ApproximateDataSize returns the sum of path lengths and data lengths, as
// ZooKeeper's zk_approximate_data_size: a running total (Apply and
// ReadSnapshot keep it), so reading it costs nothing.
func (t *Tree) ApproximateDataSize() int64 { return t.dataSize }

// ReapCandidates returns the containers and TTL nodes that the periodic
// sweep should try to delete at time now (ms): empty containers that have
// had a child (cversion > 0), and empty TTL nodes not modified for longer
// than their TTL. The result is sorted so that every replica proposes the
// same order.
func (t *Tree) ReapCandidates(now int64) []string {
	var out []string
	for p := range t.containers {
		n := t.Get(p)
		if n != nil && n.NumChildren() == 0 && n.kids != nil && n.kids.cversion > 0 {
			out = append(out, p)
		}
	}
	for p := range t.ttls {
		n := t.Get(p)
		if n != nil && n.NumChildren() == 0 && ttlExpired(n, now) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func ttlExpired(n *Node, now int64) bool {
	ttl := TTLOf(n.owner)
	return ttl != 0 && now-n.mtime > ttl
}

// Walk calls fn for every node in path order (parents before children,
// siblings sorted). It is used for digests and dumps.
func (t *Tree) Walk(fn func(path string, n *Node)) {
	var walk func(p string, n *Node)
	walk = func(p string, n *Node) {
		fn(p, n)
		for _, c := range n.sortedChildren(nil) {
			walk(joinPath(p, string(c.name())), c)
		}
	}
	walk("/", t.root)
}

// walkPaths calls fn for every node, parents before children, in no
// particular sibling order, with its path in a reused buffer (valid during
// the call only). It keeps an explicit stack: paths may be deep.
func (t *Tree) walkPaths(fn func(path []byte, n *Node)) {
	type pending struct {
		prefix int // length of the parent's path in buf ("/" counts as 0)
		n      *Node
	}
	stack := []pending{{0, t.root}}
	var buf []byte
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		buf = append(append(buf[:top.prefix], '/'), top.n.name()...)
		fn(buf, top.n)
		prefix := len(buf)
		if top.n == t.root {
			prefix = 0
		}
		top.n.forEachChild(func(c *Node) { stack = append(stack, pending{prefix, c}) })
	}
}

func joinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// CheckACL reports whether ids hold perm on the node.
func CheckACL(n *Node, perm proto.Perm, ids []proto.Id) bool {
	return acl.Check(n.acl.list, perm, ids)
}

// isSpecialPath reports whether p is one of the system nodes that cannot be
// deleted.
func isSpecialPath(p string) bool {
	return p == "/" || p == ZookeeperPath || p == QuotaPath || p == ConfigPath
}

// underQuota reports whether p is inside /zookeeper/quota.
func underQuota(p string) bool {
	return strings.HasPrefix(p, QuotaPath+"/")
}

// ReconfigData records a new membership in /zookeeper/config as the
// reconfig operation's change: the data, a new data version, mzxid and
// mtime, and the data-changed event its watchers get.
func (t *Tree) ReconfigData(data []byte, zxid, mtime int64) []Event {
	n := t.Get(ConfigPath)
	if n == nil {
		return nil
	}
	t.preserve(n)
	t.dataSize += int64(len(data) - n.dataLen())
	n.setData(append([]byte(nil), data...))
	n.version++
	n.mzxid = zxid
	n.mtime = mtime
	return []Event{{Type: proto.EventNodeDataChanged, Path: ConfigPath, ACL: n.acl.list, Zxid: zxid}}
}

// SetConfigData sets the data of /zookeeper/config to the ensemble's
// membership text, outside the log, as ZooKeeper's
// ZKDatabase.initConfigInZKDatabase does on every member: the node's data
// and dataLength change, nothing else. Every member derives the same text
// from the same configuration.
func (t *Tree) SetConfigData(data []byte) {
	n := t.Get(ConfigPath)
	if n == nil {
		return
	}
	t.preserve(n)
	t.dataSize += int64(len(data) - n.dataLen())
	n.setData(append([]byte(nil), data...)) // empty data becomes null, as it always has
}

// SetConfigDataAt is SetConfigData for a membership that has a version:
// the node's mzxid becomes that version (a zxid), as ZooKeeper's
// initConfigInZKDatabase writes the configuration at its version, so
// that clients may pass either as a reconfig's fromConfig.
func (t *Tree) SetConfigDataAt(data []byte, zxid int64) {
	t.SetConfigData(data)
	if n := t.Get(ConfigPath); n != nil {
		n.mzxid = zxid
	}
}
