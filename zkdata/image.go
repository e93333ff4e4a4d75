package zkdata

import (
	"slices"
	"strings"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// Image is the state an Apache ZooKeeper server holds after recovery: the
// znodes with their data, ACLs and persisted stats, the sessions, and the
// zxid of the last transaction applied. ReadDir, ReadSnapshot and FromTree
// make one; Tree and WriteSnapshot turn it into zkgo's tree or a ZooKeeper
// snapshot.
//
// An Image is not safe for concurrent use; its read methods may run
// concurrently with each other.
type Image struct {
	nodes    map[string]*znode // by path; the root is ""
	acls     aclCache
	sessions map[int64]int32 // id → timeout (ms)
	lastZxid int64

	// ZooKeeper's tree digest (DigestCalculator, version 2): the sum of
	// every node's digest, kept as nodes change.
	digest uint64

	quotas map[string]struct{}           // paths with a zookeeper_limits node
	ephem  map[int64]map[string]struct{} // session → paths of its ephemerals

	summary Summary
}

// znode is a node as ZooKeeper's DataNode holds it.
type znode struct {
	data []byte
	acl  int64
	// st is ZooKeeper's StatPersisted in proto.Stat (dataLength and
	// numChildren unused).
	st   proto.Stat
	kids map[string]struct{}

	dig   uint64 // digest of the node, when digOK
	digOK bool
}

// Node is one znode of an Image, as Image.Node and Walk return it.
type Node struct {
	// Path is the node's path; the root is "/".
	Path string
	// Data is the node's data; nil when it is null (not the same as
	// empty for clients). The caller must not modify it.
	Data []byte
	// ACL is the node's ACL list. The caller must not modify it.
	ACL []proto.ACL
	// Stat is the node's persisted stat as ZooKeeper keeps it (see
	// ClientStat for what clients see): cversion counts child creates and
	// ephemeralOwner carries the container and TTL markers. DataLength
	// and NumChildren are filled in.
	Stat proto.Stat
}

// ClientStat returns the Stat clients see for the node, as ZooKeeper's
// DataNode.copyStat makes it: cversion becomes 2*creates - children (each
// create and each delete counted), containers and TTL nodes show
// ephemeralOwner 0.
func (n *Node) ClientStat() proto.Stat {
	st := n.Stat
	st.Cversion = st.Cversion*2 - st.NumChildren
	if o := st.EphemeralOwner; o == tree.ContainerOwner || tree.IsTTLOwner(o) {
		st.EphemeralOwner = 0
	}
	return st
}

// Session is a session of an Image.
type Session struct {
	ID      int64
	Timeout int32 // negotiated timeout, ms
	// Passwd is the password ZooKeeper gives the session
	// (SessionPassword): ZooKeeper derives it, never stores it.
	Passwd []byte
}

// Summary describes an Image and where it came from.
type Summary struct {
	Znodes    int   // znodes, the root once
	DataBytes int64 // bytes of data, all nodes
	Sessions  int
	LastZxid  int64

	// Snapshot is the snapshot file read (relative to the data
	// directory's version-2), SnapshotZxid the zxid in its name.
	Snapshot     string
	SnapshotZxid int64
	// Skipped lists newer snapshots that were tried and failed, with why.
	Skipped []string
	// Logs are the transaction logs read, in order; Txns counts the
	// transactions applied from them (those after the snapshot).
	Logs []string
	Txns int
	// TornTails names the logs whose last record was cut short or that
	// ended in a record not ended by 'B' (dropped, as ZooKeeper drops
	// it), with the offset.
	TornTails []string
	// DigestChecks counts comparisons of the tree digest with the digest
	// ZooKeeper recorded (in the snapshot and in 3.6+ log entries);
	// DigestMismatches lists the first few that differed. ZooKeeper only
	// logs a mismatch, and so does ReadDir.
	DigestChecks     int
	DigestMismatches []string
	// Notes lists the first few other oddities ZooKeeper only logs (a
	// multi operation that does not decode, which ends the multi there).
	Notes []string
	// DeadSessionNodes counts ephemerals removed because their session was
	// not in the session table (ZooKeeper removes them at startup).
	DeadSessionNodes int
}

// maxMismatches bounds Summary.DigestMismatches.
const maxMismatches = 16

func newImage() *Image {
	return &Image{
		nodes:    make(map[string]*znode),
		acls:     newACLCache(),
		sessions: make(map[int64]int32),
		quotas:   make(map[string]struct{}),
		ephem:    make(map[int64]map[string]struct{}),
	}
}

// LastZxid returns the zxid of the last transaction in the image.
func (im *Image) LastZxid() int64 { return im.lastZxid }

// highestZxid is the highest zxid in the nodes' stats (created, changed,
// children changed), 0 for none.
func (im *Image) highestZxid() int64 {
	var z int64
	for _, n := range im.nodes {
		z = max(z, n.st.Czxid, n.st.Mzxid, n.st.Pzxid)
	}
	return z
}

// Summary returns the image's summary, counts up to date.
func (im *Image) Summary() Summary {
	s := im.summary
	s.Znodes = len(im.nodes)
	s.DataBytes = 0
	for _, n := range im.nodes {
		s.DataBytes += int64(len(n.data))
	}
	s.Sessions = len(im.sessions)
	s.LastZxid = im.lastZxid
	s.Skipped = slices.Clone(s.Skipped)
	s.Logs = slices.Clone(s.Logs)
	s.TornTails = slices.Clone(s.TornTails)
	s.DigestMismatches = slices.Clone(s.DigestMismatches)
	s.Notes = slices.Clone(s.Notes)
	return s
}

// Digest returns ZooKeeper's digest of the tree (DataTree.getTreeDigest,
// digest version 2).
func (im *Image) Digest() int64 { return int64(im.digest) }

// zkPath maps a client path to the key ZooKeeper's DataTree uses ("" for
// the root).
func zkPath(p string) string {
	if p == "/" {
		return ""
	}
	return p
}

// Node returns the node at path ("/" is the root), or false.
func (im *Image) Node(path string) (Node, bool) {
	n := im.nodes[zkPath(path)]
	if n == nil {
		return Node{}, false
	}
	return im.export(zkPath(path), n), true
}

func (im *Image) export(p string, n *znode) Node {
	st := n.st
	st.DataLength = int32(len(n.data))
	st.NumChildren = int32(len(n.kids))
	if p == "" {
		p = "/"
	}
	return Node{Path: p, Data: n.data, ACL: im.acls.list(n.acl), Stat: st}
}

// Children returns the names of the node's children, sorted, or nil.
func (im *Image) Children(path string) []string {
	n := im.nodes[zkPath(path)]
	if n == nil {
		return nil
	}
	return sortedKids(n)
}

func sortedKids(n *znode) []string {
	out := make([]string, 0, len(n.kids))
	for k := range n.kids {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Walk calls fn for every node, the root first, every parent before its
// children, siblings sorted by name. It stops at the first error fn
// returns and returns it.
func (im *Image) Walk(fn func(n Node) error) error {
	root := im.nodes[""]
	if root == nil {
		return nil
	}
	type item struct {
		path string
		n    *znode
	}
	stack := []item{{"", root}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if err := fn(im.export(it.path, it.n)); err != nil {
			return err
		}
		kids := sortedKids(it.n)
		for i := len(kids) - 1; i >= 0; i-- {
			p := it.path + "/" + kids[i]
			if c := im.nodes[p]; c != nil {
				stack = append(stack, item{p, c})
			}
		}
	}
	return nil
}

// Sessions returns the sessions in increasing id order.
func (im *Image) Sessions() []Session {
	out := make([]Session, 0, len(im.sessions))
	for id, to := range im.sessions {
		out = append(out, Session{ID: id, Timeout: to, Passwd: SessionPassword(id)})
	}
	slices.SortFunc(out, func(a, b Session) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// parentOf splits a ZooKeeper path at its last slash, as DataTree does:
// "/a" has parent "" (the root).
func parentOf(p string) (parent, name string, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", "", false
	}
	return p[:i], p[i+1:], true
}

// aclCache is ZooKeeper's ReferenceCountedACLCache without the counts: ACL
// lists by id, and ids by list. Id -1 is the open ACL.
type aclCache struct {
	byID  map[int64][]proto.ACL
	byKey map[string]int64
	next  int64 // the last id handed out
}

const openACLID = -1

var openACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}

func newACLCache() aclCache {
	return aclCache{byID: make(map[int64][]proto.ACL), byKey: make(map[string]int64)}
}

func aclKey(list []proto.ACL) string {
	var e jute.Encoder
	for i := range list {
		list[i].Encode(&e)
	}
	return string(e.Bytes())
}

// add records a list read from a snapshot under its id.
func (c *aclCache) add(id int64, list []proto.ACL) {
	c.byID[id] = list
	c.byKey[aclKey(list)] = id
	c.next = max(c.next, id)
}

// intern returns the id of list, giving it a new one if it has none
// (convertAcls). A nil list is the open ACL.
func (c *aclCache) intern(list []proto.ACL) int64 {
	if list == nil {
		return openACLID
	}
	k := aclKey(list)
	if id, ok := c.byKey[k]; ok {
		if _, live := c.byID[id]; live {
			return id
		}
	}
	c.next++
	c.byID[c.next] = list
	c.byKey[k] = c.next
	return c.next
}

func (c *aclCache) list(id int64) []proto.ACL {
	if id == openACLID {
		return openACL
	}
	return c.byID[id]
}

func (c *aclCache) has(id int64) bool {
	_, ok := c.byID[id]
	return id == openACLID || ok
}
