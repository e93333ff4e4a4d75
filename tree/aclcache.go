package tree

import (
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/proto"
)

// aclEntry is one interned ACL list shared by every node that carries it,
// with a reference count so unused lists are dropped (ZooKeeper's
// ReferenceCountedACLCache does the same to keep memory per znode small).
type aclEntry struct {
	key  string
	list []proto.ACL
	refs int
}

type aclCache struct {
	byKey map[string]*aclEntry
}

func newACLCache() aclCache { return aclCache{byKey: make(map[string]*aclEntry)} }

func aclKey(acls []proto.ACL) string {
	var b strings.Builder
	for _, a := range acls {
		b.WriteString(strconv.Itoa(int(a.Perms)))
		b.WriteByte(0)
		b.WriteString(a.ID.Scheme)
		b.WriteByte(0)
		b.WriteString(a.ID.ID)
		b.WriteByte(0)
	}
	return b.String()
}

// intern returns the shared entry for acls, adding a reference.
func (c *aclCache) intern(acls []proto.ACL) *aclEntry {
	k := aclKey(acls)
	if e := c.byKey[k]; e != nil {
		e.refs++
		return e
	}
	cp := make([]proto.ACL, len(acls))
	for i, a := range acls {
		cp[i] = proto.ACL{Perms: a.Perms, ID: proto.Id{Scheme: strings.Clone(a.ID.Scheme), ID: strings.Clone(a.ID.ID)}}
	}
	e := &aclEntry{key: k, list: cp, refs: 1}
	c.byKey[k] = e
	return e
}

// release drops a reference.
func (c *aclCache) release(e *aclEntry) {
	e.refs--
	if e.refs <= 0 {
		delete(c.byKey, e.key)
	}
}

// addRef adds a reference to an entry already in the cache.
func (c *aclCache) addRef(e *aclEntry) {
	e.refs++
	if c.byKey[e.key] == nil {
		c.byKey[e.key] = e
	}
}
