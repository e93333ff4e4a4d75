package tree

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/proto"
)

// Shared white-box helpers for the tree tests: a canonical text dump of the
// whole replicated state (used for determinism and rollback checks), a deep
// copy of a tree, and formatting helpers.

// permString renders perms as ZooKeeper's CLI does (cdrwa order).
func permString(p proto.Perm) string {
	var b strings.Builder
	for _, x := range []struct {
		bit proto.Perm
		c   byte
	}{{proto.PermCreate, 'c'}, {proto.PermDelete, 'd'}, {proto.PermRead, 'r'}, {proto.PermWrite, 'w'}, {proto.PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b.WriteByte(x.c)
		}
	}
	if rest := p &^ proto.PermAll; rest != 0 {
		fmt.Fprintf(&b, "+%d", int32(rest))
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

func aclString(acls []proto.ACL) string {
	parts := make([]string, len(acls))
	for i, a := range acls {
		parts[i] = a.ID.Scheme + ":" + a.ID.ID + ":" + permString(a.Perms)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func ownerString(o int64) string {
	if o < 0 {
		return "0x" + strconv.FormatUint(uint64(o), 16)
	}
	return "0x" + strconv.FormatInt(o, 16)
}

// statString renders every field of a Stat.
func statString(s proto.Stat) string {
	return fmt.Sprintf("czxid=%d mzxid=%d pzxid=%d ctime=%d mtime=%d version=%d cversion=%d aversion=%d owner=%s dataLength=%d numChildren=%d",
		s.Czxid, s.Mzxid, s.Pzxid, s.Ctime, s.Mtime, s.Version, s.Cversion, s.Aversion, ownerString(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

// nodeLine renders one node for walk-style dumps.
func nodeLine(p string, n *Node) string {
	return fmt.Sprintf("%s data=%q %s acl=%s", p, n.Data(), statString(n.rawStat()), aclString(n.acl.list))
}

// dumpState renders the whole replicated state of t canonically: every node
// (Walk order) with data, stat and ACL, and the indexes, the session table,
// the quota index and the ACL cache. Two trees with equal dumps are
// indistinguishable through the tree's API. lastZxid is included only when
// withZxid is set.
func dumpState(t *Tree, withZxid bool) string {
	var b strings.Builder
	if withZxid {
		fmt.Fprintf(&b, "lastZxid=%d\n", t.lastZxid)
	}
	t.Walk(func(p string, n *Node) {
		b.WriteString(nodeLine(p, n))
		b.WriteByte('\n')
	})
	owners := make([]int64, 0, len(t.ephemerals))
	for o := range t.ephemerals {
		owners = append(owners, o)
	}
	sort.Slice(owners, func(i, j int) bool { return owners[i] < owners[j] })
	for _, o := range owners {
		fmt.Fprintf(&b, "ephemerals %s %v\n", ownerString(o), sortedKeys(t.ephemerals[o]))
	}
	fmt.Fprintf(&b, "containers %v\n", sortedKeys(t.containers))
	fmt.Fprintf(&b, "ttls %v\n", sortedKeys(t.ttls))
	fmt.Fprintf(&b, "quotas %v\n", sortedKeys(t.quotas))
	for _, s := range t.Sessions() {
		fmt.Fprintf(&b, "session %s timeout=%d passwd=%x\n", ownerString(s.ID), s.Timeout, s.Passwd)
	}
	keys := make([]string, 0, len(t.acls.byKey))
	for k := range t.acls.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e := t.acls.byKey[k]
		fmt.Fprintf(&b, "aclcache %s refs=%d\n", aclString(e.list), e.refs)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nodeMap returns every node by path, the root under "/".
func nodeMap(t *Tree) map[string]*Node {
	m := make(map[string]*Node)
	t.walkPaths(func(p []byte, n *Node) { m[string(p)] = n })
	return m
}

// childSet returns the names of n's children.
func childSet(n *Node) map[string]struct{} {
	set := make(map[string]struct{})
	n.forEachChild(func(c *Node) { set[string(c.name())] = struct{}{} })
	return set
}

// cloneTree returns a deep copy of t sharing nothing mutable with it.
func cloneTree(t *Tree) *Tree {
	c := &Tree{
		count:        t.count,
		acls:         newACLCache(),
		ephemerals:   make(map[int64]map[string]struct{}, len(t.ephemerals)),
		containers:   make(map[string]struct{}, len(t.containers)),
		ttls:         make(map[string]struct{}, len(t.ttls)),
		sessions:     make(map[int64]*Session, len(t.sessions)),
		opts:         t.opts,
		lastZxid:     t.lastZxid,
		QuotaWarning: t.QuotaWarning,
	}
	entries := make(map[*aclEntry]*aclEntry)
	for k, e := range t.acls.byKey {
		ne := &aclEntry{key: e.key, list: append([]proto.ACL(nil), e.list...), refs: e.refs}
		c.acls.byKey[k] = ne
		entries[e] = ne
	}
	var clone func(n *Node) *Node
	clone = func(n *Node) *Node {
		cn := &Node{}
		cn.setBuf(string(n.name()), n.Data())
		st := n.rawStat()
		cn.setRawStat(&st)
		if e := entries[n.acl]; e != nil {
			cn.acl = e
		} else { // an entry no longer in the cache (refcount bug): keep a private copy
			cn.acl = &aclEntry{key: n.acl.key, list: append([]proto.ACL(nil), n.acl.list...), refs: n.acl.refs}
			entries[n.acl] = cn.acl
		}
		if n.kids != nil {
			k := cn.ensureKids()
			k.pzxid, k.cversion = n.kids.pzxid, n.kids.cversion
			n.kids.forEach(func(child *Node) { k.add(clone(child)) })
		}
		return cn
	}
	c.root = clone(t.root)
	for o, set := range t.ephemerals {
		cs := make(map[string]struct{}, len(set))
		for p := range set {
			cs[p] = struct{}{}
		}
		c.ephemerals[o] = cs
	}
	for p := range t.containers {
		c.containers[p] = struct{}{}
	}
	for p := range t.ttls {
		c.ttls[p] = struct{}{}
	}
	if t.quotas != nil {
		c.quotas = make(map[string]struct{}, len(t.quotas))
		for p := range t.quotas {
			c.quotas[p] = struct{}{}
		}
	}
	for id, s := range t.sessions {
		c.sessions[id] = &Session{ID: s.ID, Timeout: s.Timeout, Passwd: cloneBytes(s.Passwd)}
	}
	return c
}

// checkChildren verifies the structure of a children set: the count, the
// packed or hashed layout, that every child is found by name, and that the
// listing cache (if built) lists exactly the children, sorted.
func checkChildren(p string, n *Node, add func(string, ...any)) {
	k := n.kids
	if k == nil {
		return
	}
	seen := 0
	names := make(map[string]bool)
	for _, c := range k.slots {
		if c == nil {
			if !k.hashed {
				add("%s: nil among packed children", p)
			}
			continue
		}
		seen++
		name := string(c.name())
		if names[name] {
			add("%s: child %q twice", p, name)
		}
		names[name] = true
		if k.get(name) != c {
			add("%s: child %q not found by name", p, name)
		}
	}
	if seen != k.count {
		add("%s: count %d but %d children", p, k.count, seen)
	}
	if k.hashed {
		if len(k.slots)&(len(k.slots)-1) != 0 || k.count*4 > len(k.slots)*3 {
			add("%s: table of %d slots for %d children", p, len(k.slots), k.count)
		}
	} else if len(k.slots) > smallKids {
		add("%s: %d packed children", p, len(k.slots))
	}
	if l := k.list.Load(); l != nil {
		want := make([]string, 0, len(names))
		for name := range names {
			want = append(want, name)
		}
		sort.Strings(want)
		if strings.Join(*l, "/") != strings.Join(want, "/") || len(*l) != len(want) {
			add("%s: listing cache %q, children %q", p, *l, want)
		}
	}
}

// checkInvariants verifies the structural invariants of t and returns a
// description of every violation.
func checkInvariants(t *Tree) []string {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if t.root == nil || t.root.nameLen() != 0 {
		add("no root, or a root with a name")
		return bad
	}
	if d := t.ComputeDigest(); !t.noDigest && d != t.digest {
		add("digest %#x kept by Apply, %#x computed by a walk", t.digest, d)
	}
	nodes := nodeMap(t)
	refs := make(map[*aclEntry]int)
	seen := 0
	for p, n := range nodes {
		seen++
		refs[n.acl]++
		checkChildren(p, n, add)
		if n.kids == nil && n.NumChildren() != 0 {
			add("%s: children without a children set", p)
		}
		if n.meta&nilData != 0 && n.dataLen() != 0 {
			add("%s: null data of %d bytes", p, n.dataLen())
		}
		if p == "/" {
			continue
		}
		if ValidatePath(p) != nil {
			add("%s: stored under an invalid path", p)
		}
		parent, name, _ := parentOf(p)
		if string(n.name()) != name {
			add("%s: named %q", p, n.name())
		}
		pn := nodes[nonEmpty(parent)]
		if pn == nil {
			add("%s: parent %q missing", p, parent)
			continue
		}
		if t.Get(p) != n {
			add("%s: Get finds another node", p)
		}
		if o := pn.owner; o != 0 && o != ContainerOwner && !IsTTLOwner(o) {
			add("%s: child of an ephemeral node", p)
		}
		o := n.owner
		_, inC := t.containers[p]
		_, inT := t.ttls[p]
		_, inE := t.ephemerals[o][p]
		switch {
		case o == 0:
			if inC || inT {
				add("%s: persistent node in container/ttl index", p)
			}
		case o == ContainerOwner:
			if !inC {
				add("%s: container not indexed", p)
			}
		case IsTTLOwner(o):
			if !inT {
				add("%s: TTL node not indexed", p)
			}
		default:
			if !inE {
				add("%s: ephemeral not indexed under owner %s", p, ownerString(o))
			}
			if t.sessions[o] == nil {
				add("%s: ephemeral owned by unknown session %s", p, ownerString(o))
			}
		}
	}
	if seen+1 != t.NodeCount() { // ZooKeeper counts the root twice
		add("NodeCount()=%d but %d nodes", t.NodeCount(), seen)
	}
	var size int64
	for p, n := range nodes {
		size += int64(len(p) + len(n.Data()))
	}
	if got := t.ApproximateDataSize(); got != size {
		add("ApproximateDataSize()=%d, paths and data add up to %d", got, size)
	}
	if got := t.CountDescendants("/"); got != seen-1 {
		add("CountDescendants(/)=%d but %d nodes below the root", got, seen-1)
	}
	for o, set := range t.ephemerals {
		if len(set) == 0 {
			add("empty ephemeral set kept for %s", ownerString(o))
		}
		for p := range set {
			if n := t.Get(p); n == nil || n.owner != o {
				add("ephemeral index %s lists %s which it does not own", ownerString(o), p)
			}
		}
	}
	for p := range t.containers {
		if n := t.Get(p); n == nil || n.owner != ContainerOwner {
			add("container index lists %s", p)
		}
	}
	for p := range t.ttls {
		if n := t.Get(p); n == nil || !IsTTLOwner(n.owner) {
			add("ttl index lists %s", p)
		}
	}
	for e, n := range refs {
		if e.refs != n {
			add("acl entry %s has refs=%d but %d users", aclString(e.list), e.refs, n)
		}
		if t.acls.byKey[e.key] != e {
			add("acl entry %s in use but not in the cache", aclString(e.list))
		}
	}
	for _, e := range t.acls.byKey {
		if refs[e] == 0 {
			add("acl cache keeps unused entry %s (refs=%d)", aclString(e.list), e.refs)
		}
	}
	for q := range t.quotas {
		if t.Get(QuotaPath+q+"/"+quotaLimitNode) == nil {
			add("quota index lists %s without a limit node", q)
		}
	}
	return bad
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	out := make([]byte, len(b))
	copy(out, b)
	return out
}
