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
// the owner (the server holds a RWMutex around both).
package tree

import (
	"sort"
	"strings"

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
type Node struct {
	stat     proto.Stat
	data     []byte
	acl      *aclEntry
	children map[string]struct{}
}

// Tree is the znode tree plus the replicated session table.
type Tree struct {
	nodes      map[string]*Node
	acls       aclCache
	ephemerals map[int64]map[string]struct{}
	containers map[string]struct{}
	ttls       map[string]struct{}
	sessions   map[int64]*Session

	quotas   map[string]struct{} // paths that have a zookeeper_limits node
	opts     Options
	lastZxid int64

	// QuotaWarning, when set, is called during Apply when a write goes past
	// a soft quota limit. It must not call back into the tree.
	QuotaWarning func(prefix, what string, value, limit int64)

	// Per-Apply scratch: events produced by the current transaction and,
	// inside a multi, the undo journal.
	events  []Event
	journal []func()
	inMulti bool
}

// Session is a session as replicated state: its id, negotiated timeout and
// password. Liveness (when it last heard from the client) is not replicated.
type Session struct {
	ID      int64
	Timeout int32
	Passwd  []byte
}

// New returns a tree holding "/", "/zookeeper", "/zookeeper/quota" and
// "/zookeeper/config" as ZooKeeper creates them.
func New() *Tree {
	t := &Tree{
		nodes:      make(map[string]*Node),
		acls:       newACLCache(),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		sessions:   make(map[int64]*Session),
	}
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	root := &Node{data: []byte{}, acl: t.acls.intern(open)}
	t.nodes["/"] = root
	t.nodes[""] = root
	t.addSystemNode(ZookeeperPath, open)
	t.addSystemNode(QuotaPath, open)
	readOnly := []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	t.addSystemNode(ConfigPath, readOnly)
	t.nodes[ConfigPath].stat.Aversion = -1 // as ZooKeeper creates it
	return t
}

func (t *Tree) addSystemNode(p string, acls []proto.ACL) {
	parent, name, _ := parentOf(p)
	pn := t.nodes[parent]
	if pn.children == nil {
		pn.children = make(map[string]struct{})
	}
	pn.children[name] = struct{}{}
	pn.stat.NumChildren++
	t.nodes[p] = &Node{data: []byte{}, acl: t.acls.intern(acls)}
}

// LastZxid returns the zxid of the last applied transaction.
func (t *Tree) LastZxid() int64 { return t.lastZxid }

// NodeCount returns the number of znodes as ZooKeeper reports it: the root
// is counted twice (ZooKeeper keeps it under "" and "/"), so a fresh tree
// has 5.
func (t *Tree) NodeCount() int { return len(t.nodes) }

// Get returns a node by path, or nil. Like ZooKeeper, "" finds the root.
func (t *Tree) Get(p string) *Node {
	return t.nodes[p]
}

// Stat returns the node's Stat as clients see it. Like ZooKeeper's
// DataNode.copyStat: the tree counts child creates in cversion (that count
// names sequential children), clients see creates plus deletes
// (2*creates - current children); containers and TTL nodes show
// ephemeralOwner 0.
func (n *Node) Stat() proto.Stat {
	st := n.stat
	st.NumChildren = int32(len(n.children))
	st.Cversion = n.stat.Cversion*2 - st.NumChildren
	st.DataLength = int32(len(n.data))
	if o := st.EphemeralOwner; o == ContainerOwner || IsTTLOwner(o) {
		st.EphemeralOwner = 0
	}
	return st
}

// Data returns the node's data. The caller must not modify it; the slice
// stays valid after later changes (the tree replaces, never mutates, data).
func (n *Node) Data() []byte { return n.data }

// ACL returns the node's ACL list; the caller must not modify it.
func (n *Node) ACL() []proto.ACL { return n.acl.list }

// Children returns the node's child names in sorted order.
func (n *Node) Children() []string {
	out := make([]string, 0, len(n.children))
	for c := range n.children {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// NumChildren returns the number of children.
func (n *Node) NumChildren() int { return len(n.children) }

// CountDescendants returns the number of nodes below p (getAllChildrenNumber).
func (t *Tree) CountDescendants(p string) int {
	n := t.Get(p)
	if n == nil {
		return 0
	}
	total := 0
	var walk func(prefix string, n *Node)
	walk = func(prefix string, n *Node) {
		for c := range n.children {
			total++
			cp := joinPath(prefix, c)
			if cn := t.nodes[cp]; cn != nil {
				walk(cp, cn)
			}
		}
	}
	walk(p, n)
	return total
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
// ZooKeeper's zk_approximate_data_size.
func (t *Tree) ApproximateDataSize() int64 {
	var n int64
	for p, node := range t.nodes {
		if p == "" {
			continue
		}
		n += int64(len(p) + len(node.data))
	}
	return n
}

// ReapCandidates returns the containers and TTL nodes that the periodic
// sweep should try to delete at time now (ms): empty containers that have
// had a child (cversion > 0), and empty TTL nodes not modified for longer
// than their TTL. The result is sorted so that every replica proposes the
// same order.
func (t *Tree) ReapCandidates(now int64) []string {
	var out []string
	for p := range t.containers {
		n := t.nodes[p]
		if n != nil && len(n.children) == 0 && n.stat.Cversion > 0 {
			out = append(out, p)
		}
	}
	for p := range t.ttls {
		n := t.nodes[p]
		if n != nil && len(n.children) == 0 && ttlExpired(n, now) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func ttlExpired(n *Node, now int64) bool {
	ttl := TTLOf(n.stat.EphemeralOwner)
	return ttl != 0 && now-n.stat.Mtime > ttl
}

// Walk calls fn for every node in path order (parents before children,
// siblings sorted). It is used for digests and dumps.
func (t *Tree) Walk(fn func(path string, n *Node)) {
	var walk func(p string, n *Node)
	walk = func(p string, n *Node) {
		fn(p, n)
		for _, c := range n.Children() {
			cp := joinPath(p, c)
			if cn := t.nodes[cp]; cn != nil {
				walk(cp, cn)
			}
		}
	}
	walk("/", t.nodes["/"])
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

// SetConfigData sets the data of /zookeeper/config to the ensemble's
// membership text, outside the log, as ZooKeeper's
// ZKDatabase.initConfigInZKDatabase does on every member: the node's data
// and dataLength change, nothing else. Every member derives the same text
// from the same configuration.
func (t *Tree) SetConfigData(data []byte) {
	n := t.nodes[ConfigPath]
	if n == nil {
		return
	}
	n.data = append([]byte(nil), data...)
	n.stat.DataLength = int32(len(data))
}
