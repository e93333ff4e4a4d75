package zkdata

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// Replay: log transactions applied to an Image as ZooKeeper's recovery
// applies them (FileTxnSnapLog.processTransaction, DataTree.processTxn).
//
// A snapshot is fuzzy: ZooKeeper writes it while it goes on applying
// transactions, so it may already hold some of the transactions after the
// zxid in its name. Replay tolerates that as ZooKeeper does: a create of a
// node that exists, or a delete, setData or setACL of one that does not,
// fails and changes nothing, except that a create that fails that way still
// raises the parent's cversion (and pzxid) to the value the transaction
// carries when that is higher, and a delete still raises the parent's
// pzxid. Every failure of that kind is expected, not an error.

// applyTxn applies one transaction from a log.
func (im *Image) applyTxn(t *txn) error {
	switch b := t.body.(type) {
	case *createSessionTxn:
		im.sessions[t.hdr.clientID] = b.timeout
	case *closeSessionTxn:
		delete(im.sessions, t.hdr.clientID)
	}
	if err := im.process(&t.hdr, t.body); err != nil {
		return err
	}
	im.lastZxid = max(im.lastZxid, t.hdr.zxid)
	return nil
}

// process is DataTree.processTxn for one transaction or one operation of a
// multi. It returns an error only for input ZooKeeper cannot apply at all
// (ZooKeeper fails to start on it); expected failures return nil.
func (im *Image) process(h *txnHeader, body any) error {
	code := proto.ErrOk
	var path string
	switch b := body.(type) {
	case *createTxn:
		path = b.path
		owner, err := ownerOf(h, b)
		if err != nil {
			return err
		}
		code = im.createNode(b.path, b.data, b.acl, owner, b.parentCVersion, h.zxid, h.time)
	case *deleteTxn:
		code = im.deleteNode(b.path, h.zxid)
	case *setDataTxn:
		code = im.setData(b.path, b.data, b.version, h.zxid, h.time)
	case *setACLTxn:
		code = im.setACL(b.path, b.acl, b.version)
	case *closeSessionTxn:
		im.killSession(h.clientID, h.zxid, b.paths, true)
	case nil:
		if h.typ == proto.OpCloseSession {
			im.killSession(h.clientID, h.zxid, nil, false)
		}
	case *multiTxn:
		im.processMulti(h, b)
	}
	// A create that found its node already there still moves the parent's
	// cversion and pzxid forward (the node may have been deleted and
	// created again after the snapshot saw the parent).
	if h.typ == proto.OpCreate && code == proto.ErrNodeExists {
		if parent, _, ok := parentOf(path); ok {
			im.setCversionPzxid(parent, body.(*createTxn).parentCVersion, h.zxid)
		}
	}
	return nil
}

// ownerOf returns the ephemeralOwner a create gives its node.
func ownerOf(h *txnHeader, c *createTxn) (int64, error) {
	switch h.typ {
	case proto.OpCreateTTL:
		if c.ttl < 0 || c.ttl > tree.MaxTTL {
			return 0, fmt.Errorf("createTTL %s (zxid %#x): TTL %d out of range", c.path, h.zxid, c.ttl)
		}
		return -1<<56 | c.ttl, nil
	case proto.OpCreateContainer:
		return tree.ContainerOwner, nil
	}
	if c.ephemeral {
		return h.clientID, nil
	}
	return 0, nil
}

// processMulti applies the operations of a multi. If any is an error, all
// are (nothing changes). An operation that does not decode ends the multi
// there, the ones before it applied, as in ZooKeeper.
func (im *Image) processMulti(h *txnHeader, m *multiTxn) {
	for _, op := range m.ops {
		if op.typ == proto.OpError {
			return
		}
	}
	for _, op := range m.ops {
		body, err := decodeSub(op)
		if err != nil {
			im.note(fmt.Sprintf("zxid %#x: %v", h.zxid, err))
			return
		}
		sub := *h
		sub.typ = op.typ
		im.process(&sub, body) // a sub-operation never fails the load
	}
}

// note records an oddity ZooKeeper only logs.
func (im *Image) note(s string) {
	if len(im.summary.Notes) < maxMismatches {
		im.summary.Notes = append(im.summary.Notes, s)
	}
}

// createNode is DataTree.createNode.
func (im *Image) createNode(path string, data []byte, acl []proto.ACL, owner int64, parentCVersion int32, zxid, time int64) proto.ErrCode {
	parentPath, name, ok := parentOf(path)
	if !ok || name == "" {
		return proto.ErrNoNode
	}
	parent := im.nodes[parentPath]
	if parent == nil {
		return proto.ErrNoNode
	}
	aclID := im.acls.intern(acl)
	if _, exists := parent.kids[name]; exists {
		return proto.ErrNodeExists
	}
	im.change(parentPath, parent, func() {
		if parentCVersion == -1 {
			parentCVersion = parent.st.Cversion + 1
		}
		if parentCVersion > parent.st.Cversion {
			parent.st.Cversion = parentCVersion
			parent.st.Pzxid = zxid
		}
		if parent.kids == nil {
			parent.kids = make(map[string]struct{})
		}
		parent.kids[name] = struct{}{}
	})
	n := &znode{data: data, acl: aclID, st: proto.Stat{
		Czxid: zxid, Mzxid: zxid, Pzxid: zxid, Ctime: time, Mtime: time, EphemeralOwner: owner,
	}}
	if old := im.nodes[path]; old != nil {
		im.remove(path) // an orphan (see deleteNode); cannot happen in a sound log
	}
	im.put(path, n)
	if strings.HasPrefix(parentPath, tree.QuotaPath) {
		target := parentPath[len(tree.QuotaPath):]
		switch {
		case name == quotaLimitNode && target != "":
			im.quotas[target] = struct{}{}
		case name == quotaStatNode:
			im.updateQuotaForPath(target)
		}
	}
	if prefix := im.maxQuotaPrefix(path); prefix != "" {
		im.updateQuotaStat(prefix, int64(len(data)), 1)
	}
	return proto.ErrOk
}

// deleteNode is DataTree.deleteNode. A node with children (which no sound
// log deletes) goes with its subtree.
func (im *Image) deleteNode(path string, zxid int64) proto.ErrCode {
	parentPath, name, ok := parentOf(path)
	if !ok || name == "" {
		return proto.ErrNoNode
	}
	parent := im.nodes[parentPath]
	if parent == nil {
		return proto.ErrNoNode
	}
	im.change(parentPath, parent, func() {
		delete(parent.kids, name)
		if zxid > parent.st.Pzxid {
			parent.st.Pzxid = zxid
		}
	})
	n := im.nodes[path]
	if n == nil {
		return proto.ErrNoNode
	}
	im.dropSubtree(path, n)
	if parentPath == tree.QuotaPath || strings.HasPrefix(parentPath, tree.QuotaPath+"/") {
		if name == quotaLimitNode {
			im.deleteQuota(parentPath[len(tree.QuotaPath):])
		}
	}
	if prefix := im.maxQuotaPrefix(path); prefix != "" {
		im.updateQuotaStat(prefix, -int64(len(n.data)), -1)
	}
	return proto.ErrOk
}

func (im *Image) dropSubtree(path string, n *znode) {
	for k := range n.kids {
		if c := im.nodes[path+"/"+k]; c != nil {
			im.dropSubtree(path+"/"+k, c)
		}
	}
	im.remove(path)
}

// setData is DataTree.setData (also reconfig's change of /zookeeper/config).
func (im *Image) setData(path string, data []byte, version int32, zxid, time int64) proto.ErrCode {
	p := zkPath(path)
	n := im.nodes[p]
	if n == nil {
		return proto.ErrNoNode
	}
	old := len(n.data)
	im.change(p, n, func() {
		n.data = data
		n.st.Mtime, n.st.Mzxid, n.st.Version = time, zxid, version
	})
	if prefix := im.maxQuotaPrefix(path); prefix != "" {
		im.updateQuotaStat(prefix, int64(len(data)-old), 0)
	}
	return proto.ErrOk
}

// setACL is DataTree.setACL.
func (im *Image) setACL(path string, acl []proto.ACL, version int32) proto.ErrCode {
	p := zkPath(path)
	n := im.nodes[p]
	if n == nil {
		return proto.ErrNoNode
	}
	im.change(p, n, func() {
		n.st.Aversion = version
		n.acl = im.acls.intern(acl)
	})
	return proto.ErrOk
}

// setCversionPzxid is DataTree.setCversionPzxid.
func (im *Image) setCversionPzxid(path string, cversion int32, zxid int64) {
	path = strings.TrimSuffix(path, "/")
	n := im.nodes[path]
	if n == nil {
		return
	}
	if cversion == -1 {
		cversion = n.st.Cversion + 1
	}
	if cversion > n.st.Cversion {
		im.change(path, n, func() { n.st.Cversion, n.st.Pzxid = cversion, zxid })
	}
}

// killSession deletes a closed session's ephemerals: the paths the close
// names (3.6+), then any other node the session still owns.
func (im *Image) killSession(id, zxid int64, paths []string, withPaths bool) {
	owned := im.ephemeralsOf(id)
	if withPaths {
		for _, p := range paths {
			im.deleteNode(p, zxid)
			delete(owned, p)
		}
	}
	for p := range owned {
		im.deleteNode(p, zxid)
	}
}

// ephemeralsOf returns a copy of the paths of the nodes session id owns.
func (im *Image) ephemeralsOf(id int64) map[string]struct{} {
	out := make(map[string]struct{}, len(im.ephem[id]))
	for p := range im.ephem[id] {
		out[p] = struct{}{}
	}
	return out
}

// isSessionOwner reports whether an ephemeralOwner names a session (not 0,
// not a container or TTL marker).
func isSessionOwner(o int64) bool {
	return o != 0 && o != tree.ContainerOwner && !tree.IsTTLOwner(o)
}

// killDeadSessions removes the ephemerals whose session is not in the
// session table, as ZooKeeperServer.loadData does before serving.
func (im *Image) killDeadSessions() {
	var dead []int64
	for o := range im.ephem {
		if _, ok := im.sessions[o]; !ok {
			dead = append(dead, o)
		}
	}
	slices.Sort(dead)
	for _, id := range dead {
		owned := im.ephemeralsOf(id)
		im.summary.DeadSessionNodes += len(owned)
		for p := range owned {
			im.deleteNode(p, im.lastZxid)
		}
	}
}
