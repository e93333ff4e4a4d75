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
	return fmt.Sprintf("%s data=%q %s acl=%s", p, n.data, statString(n.stat), aclString(n.acl.list))
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

// cloneTree returns a deep copy of t sharing nothing mutable with it.
func cloneTree(t *Tree) *Tree {
	c := &Tree{
		nodes:        make(map[string]*Node, len(t.nodes)),
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
	copied := make(map[*Node]*Node)
	for p, n := range t.nodes {
		if cn, ok := copied[n]; ok { // the root is stored under "" and "/"
			c.nodes[p] = cn
			continue
		}
		cn := &Node{stat: n.stat, data: cloneBytes(n.data)}
		if e := entries[n.acl]; e != nil {
			cn.acl = e
		} else { // an entry no longer in the cache (refcount bug): keep a private copy
			cn.acl = &aclEntry{key: n.acl.key, list: append([]proto.ACL(nil), n.acl.list...), refs: n.acl.refs}
			entries[n.acl] = cn.acl
		}
		if n.children != nil {
			cn.children = make(map[string]struct{}, len(n.children))
			for k := range n.children {
				cn.children[k] = struct{}{}
			}
		}
		copied[n] = cn
		c.nodes[p] = cn
	}
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

// checkInvariants verifies the structural invariants of t and returns a
// description of every violation.
func checkInvariants(t *Tree) []string {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if t.nodes["/"] == nil || t.nodes[""] != t.nodes["/"] {
		add("root not stored under both \"\" and \"/\"")
	}
	refs := make(map[*aclEntry]int)
	seen := 0
	for p, n := range t.nodes {
		if p == "" {
			continue
		}
		seen++
		refs[n.acl]++
		if int(n.stat.NumChildren) != len(n.children) {
			add("%s: NumChildren=%d but %d children", p, n.stat.NumChildren, len(n.children))
		}
		if int(n.stat.DataLength) != len(n.data) {
			add("%s: DataLength=%d but %d data bytes", p, n.stat.DataLength, len(n.data))
		}
		for c := range n.children {
			if t.nodes[joinPath(p, c)] == nil {
				add("%s: child %q has no node", p, c)
			}
		}
		if p == "/" {
			continue
		}
		if ValidatePath(p) != nil {
			add("%s: stored under an invalid path", p)
		}
		parent, name, _ := parentOf(p)
		pn := t.nodes[nonEmpty(parent)]
		if pn == nil {
			add("%s: parent %q missing", p, parent)
			continue
		}
		if _, ok := pn.children[name]; !ok {
			add("%s: not listed among its parent's children", p)
		}
		if o := pn.stat.EphemeralOwner; o != 0 && o != ContainerOwner && !IsTTLOwner(o) {
			add("%s: child of an ephemeral node", p)
		}
		o := n.stat.EphemeralOwner
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
	for o, set := range t.ephemerals {
		if len(set) == 0 {
			add("empty ephemeral set kept for %s", ownerString(o))
		}
		for p := range set {
			if n := t.nodes[p]; n == nil || n.stat.EphemeralOwner != o {
				add("ephemeral index %s lists %s which it does not own", ownerString(o), p)
			}
		}
	}
	for p := range t.containers {
		if n := t.nodes[p]; n == nil || n.stat.EphemeralOwner != ContainerOwner {
			add("container index lists %s", p)
		}
	}
	for p := range t.ttls {
		if n := t.nodes[p]; n == nil || !IsTTLOwner(n.stat.EphemeralOwner) {
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
		if t.nodes[QuotaPath+q+"/"+quotaLimitNode] == nil {
			add("quota index lists %s without a limit node", q)
		}
	}
	return bad
}
