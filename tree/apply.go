package tree

import (
	"fmt"
	"math"
	"strings"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
)

// Event is a change that may trigger watches. ACL is the ACL that a watcher
// must hold READ on to be told: the node's own ACL for NodeCreated,
// NodeDeleted and NodeDataChanged, the parent's for NodeChildrenChanged
// (ZooKeeper's fix for CVE-2024-23944).
type Event struct {
	Type proto.EventType
	Path string
	ACL  []proto.ACL
	// Zxid is the zxid of the transaction that caused the event, which
	// ZooKeeper 3.9 puts in the notification's reply header
	// (ZOOKEEPER-4655).
	Zxid int64
}

// OpResult is the outcome of one operation. For a multi, Result.Multi holds
// one OpResult per sub-operation.
type OpResult struct {
	Op   proto.OpCode  // the (sub-)operation; proto.OpError when it failed
	Err  proto.ErrCode // ErrOk on success
	Path string        // created path (create ops)
	Stat proto.Stat    // create2/createContainer/createTTL, setData, setACL
}

// Result is what Apply returns for one transaction.
type Result struct {
	OpResult
	Multi []OpResult
	// Events lists the watch triggers of the transaction in order. The
	// slice is owned by the Tree and valid until the next Apply.
	Events []Event
}

// Options are fixed per tree and must be identical on every replica.
type Options struct {
	// ExtendedTypes enables TTL nodes (zookeeper.extendedTypesEnabled).
	ExtendedTypes bool
	// EnforceQuota makes hard quota limits fail writes with QuotaExceeded.
	EnforceQuota bool
	// DigestDisabled removes the digest scheme
	// (DigestAuthenticationProvider.enabled=false): digest ACLs are invalid.
	DigestDisabled bool
	// X509 adds the x509 scheme (a server with TLS): x509 ACLs are valid.
	X509 bool
	// SASL adds the sasl scheme (a server with SASL users or the SASL
	// provider configured): sasl ACLs are valid.
	SASL bool
}

// fixupACL validates and expands an ACL list for create/setACL.
func (t *Tree) fixupACL(acls []proto.ACL, auth []proto.Id) ([]proto.ACL, error) {
	if t.opts.DigestDisabled {
		for _, a := range acls {
			if a.ID.Scheme == acl.SchemeDigest {
				return nil, acl.ErrInvalidACL
			}
		}
	}
	return acl.FixupWith(acls, auth, acl.Providers{SASL: t.opts.SASL, X509: t.opts.X509})
}

// SetOptions sets the tree's options.
func (t *Tree) SetOptions(o Options) { t.opts = o }

// Apply applies txn at log position zxid and returns its result. zxid must
// be greater than every zxid applied before. Apply never fails as a whole:
// an invalid request yields a Result with an error code, and still consumes
// the zxid (as a failed multi does in ZooKeeper).
func (t *Tree) Apply(zxid int64, txn *Txn) Result {
	if zxid <= t.lastZxid {
		panic(fmt.Sprintf("tree: zxid %d applied after %d", zxid, t.lastZxid))
	}
	t.lastZxid = zxid
	t.events = t.events[:0]
	var res Result
	if txn.Claim != 0 && txn.Session != 0 {
		if s := t.sessions[txn.Session]; s != nil && txn.Claim < s.Claim {
			res.OpResult = OpResult{Op: txn.Op, Err: proto.ErrSessionMoved}
			res.Events = t.events
			t.logDigest(zxid)
			return res
		}
	}
	if txn.Op == proto.OpMulti {
		m, ok := txn.Req.(*proto.MultiRequest)
		if !ok {
			res.Err = proto.ErrMarshallingError
		} else {
			res.Multi = t.applyMulti(zxid, txn, m)
			res.Op = proto.OpMulti
		}
	} else {
		res.OpResult = t.applyOne(zxid, txn, txn.Op, txn.Req)
	}
	res.Events = t.events
	t.logDigest(zxid)
	return res
}

func (t *Tree) applyMulti(zxid int64, txn *Txn, m *proto.MultiRequest) []OpResult {
	results := make([]OpResult, len(m.Ops))
	t.inMulti = true
	t.journal = t.journal[:0]
	digest := t.digest // the undo below restores every node it covers
	eventMark := len(t.events)
	failed := -1
	for i, op := range m.Ops {
		var r OpResult
		switch op.Type {
		case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL:
			typ, req := multiCreateOp(op)
			if typ == proto.OpError {
				r = OpResult{Op: op.Type, Err: proto.ErrMarshallingError}
			} else {
				r = t.applyOne(zxid, txn, typ, req)
			}
		case proto.OpDelete, proto.OpSetData, proto.OpCheck:
			r = t.applyOne(zxid, txn, op.Type, op.Req)
		default:
			// Only these may appear in a multi (MultiOperationRecord).
			r = OpResult{Op: op.Type, Err: proto.ErrMarshallingError}
		}
		results[i] = r
		if r.Err != proto.ErrOk {
			failed = i
			break
		}
	}
	t.inMulti = false
	if failed < 0 {
		t.journal = t.journal[:0]
		return results
	}
	for i := len(t.journal) - 1; i >= 0; i-- {
		t.journal[i]()
	}
	t.digest = digest
	t.journal = t.journal[:0]
	t.events = t.events[:eventMark]
	for i := range results {
		switch {
		case i < failed:
			results[i] = OpResult{Op: proto.OpError, Err: proto.ErrOk}
		case i == failed:
			results[i] = OpResult{Op: proto.OpError, Err: results[i].Err}
		default:
			results[i] = OpResult{Op: proto.OpError, Err: proto.ErrRuntimeInconsistency}
		}
	}
	return results
}

// multiCreateOp returns the operation a create sub-op of a multi really
// is. As in ZooKeeper (MultiOperationRecord builds an Op from the request's
// flags), the flags decide: container flags make a createContainer, TTL
// flags a createTTL (only with a TTL request), anything else a plain create,
// whatever type the sub-op header said. OpError means the request cannot be
// turned into an operation (TTL flags without a TTL).
func multiCreateOp(op proto.MultiOp) (proto.OpCode, proto.Record) {
	var flags proto.CreateMode
	var plain *proto.CreateRequest
	switch r := op.Req.(type) {
	case *proto.CreateRequest:
		flags, plain = r.Flags, r
	case *proto.CreateTTLRequest:
		if r.Flags.IsTTL() {
			return proto.OpCreateTTL, r
		}
		flags = r.Flags
		plain = &proto.CreateRequest{Path: r.Path, Data: r.Data, ACL: r.ACL, Flags: r.Flags}
	default:
		return proto.OpError, nil
	}
	switch {
	case flags.IsTTL():
		return proto.OpError, nil
	case flags.IsContainer():
		return proto.OpCreateContainer, plain
	}
	return proto.OpCreate, plain
}

// record adds an undo step when inside a multi.
func (t *Tree) record(undo func()) {
	if t.inMulti {
		t.journal = append(t.journal, undo)
	}
}

func (t *Tree) sessionValid(txn *Txn) bool {
	if txn.Session == 0 {
		return true
	}
	return t.sessions[txn.Session] != nil
}

// applyHandler applies one (sub-)operation of a logged opcode.
type applyHandler struct {
	// checkSession: fail with SessionExpired unless the requesting
	// session exists (create checks it itself, after the mode and TTL,
	// as ZooKeeper's pRequest2TxnCreate does).
	checkSession bool
	apply        func(t *Tree, zxid int64, txn *Txn, op proto.OpCode, req proto.Record) OpResult
}

// handle adapts a function of the op's own request record type; any other
// record is a MarshallingError.
func handle[R proto.Record](check bool, f func(t *Tree, zxid int64, txn *Txn, op proto.OpCode, r R) OpResult) applyHandler {
	return applyHandler{checkSession: check, apply: func(t *Tree, zxid int64, txn *Txn, op proto.OpCode, req proto.Record) OpResult {
		r, ok := req.(R)
		if !ok {
			return OpResult{Op: op, Err: proto.ErrMarshallingError}
		}
		return f(t, zxid, txn, op, r)
	}}
}

// applyHandlers holds the handler of every logged opcode of proto's table
// (proto.OpInfo.Logged) but multi, which Apply handles; a test checks
// that none is missing.
var applyHandlers = map[proto.OpCode]applyHandler{
	proto.OpCreateSession: handle(false, func(t *Tree, zxid int64, txn *Txn, op proto.OpCode, r *CreateSessionReq) OpResult {
		pw := make([]byte, len(r.Passwd))
		copy(pw, r.Passwd)
		t.sessions[txn.Session] = &Session{ID: txn.Session, Timeout: r.Timeout, Passwd: pw, Claim: zxid}
		return OpResult{Op: op}
	}),
	proto.OpCloseSession: {apply: func(t *Tree, zxid int64, txn *Txn, op proto.OpCode, _ proto.Record) OpResult {
		t.closeSession(zxid, txn.Session)
		return OpResult{Op: op}
	}},
	proto.OpCreate:          handle(false, applyCreate),
	proto.OpCreate2:         handle(false, applyCreate),
	proto.OpCreateContainer: handle(false, applyCreate),
	proto.OpCreateTTL: handle(false, func(t *Tree, zxid int64, txn *Txn, op proto.OpCode, r *proto.CreateTTLRequest) OpResult {
		return t.create(zxid, txn, op, r.Path, r.Data, r.ACL, r.Flags, r.TTL)
	}),
	proto.OpDelete: handle(true, func(t *Tree, zxid int64, txn *Txn, op proto.OpCode, r *proto.DeleteRequest) OpResult {
		return t.delete(zxid, txn, r.Path, r.Version)
	}),
	proto.OpSetData: handle(true, func(t *Tree, zxid int64, txn *Txn, op proto.OpCode, r *proto.SetDataRequest) OpResult {
		return t.setData(zxid, txn, r.Path, r.Data, r.Version)
	}),
	proto.OpSetACL: handle(true, func(t *Tree, zxid int64, txn *Txn, op proto.OpCode, r *proto.SetACLRequest) OpResult {
		return t.setACL(txn, r.Path, r.ACL, r.Version)
	}),
	proto.OpCheck: handle(true, func(t *Tree, zxid int64, txn *Txn, op proto.OpCode, r *proto.CheckVersionRequest) OpResult {
		return t.check(txn, r.Path, r.Version)
	}),
	proto.OpDeleteContainer: handle(true, func(t *Tree, zxid int64, txn *Txn, op proto.OpCode, r *DeleteContainerReq) OpResult {
		return t.deleteContainer(zxid, txn, r.Path)
	}),
}

func applyCreate(t *Tree, zxid int64, txn *Txn, op proto.OpCode, r *proto.CreateRequest) OpResult {
	return t.create(zxid, txn, op, r.Path, r.Data, r.ACL, r.Flags, -1)
}

// Applies reports whether the tree applies transactions of op.
func Applies(op proto.OpCode) bool {
	_, ok := applyHandlers[op]
	return ok || op == proto.OpMulti
}

func (t *Tree) applyOne(zxid int64, txn *Txn, op proto.OpCode, req proto.Record) OpResult {
	h, ok := applyHandlers[op]
	if !ok {
		return OpResult{Op: op, Err: proto.ErrUnimplemented}
	}
	if h.checkSession && !t.sessionValid(txn) {
		return OpResult{Op: op, Err: proto.ErrSessionExpired}
	}
	return h.apply(t, zxid, txn, op, req)
}

func (t *Tree) create(zxid int64, txn *Txn, op proto.OpCode, path string, data []byte, acls []proto.ACL, mode proto.CreateMode, ttl int64) OpResult {
	fail := func(code proto.ErrCode) OpResult { return OpResult{Op: op, Err: code} }
	if !mode.Valid() {
		return fail(proto.ErrBadArguments)
	}
	if mode.IsTTL() && !t.opts.ExtendedTypes {
		return fail(proto.ErrUnimplemented)
	}
	if mode.IsTTL() {
		if ttl <= 0 || ttl > MaxTTL {
			return fail(proto.ErrBadArguments)
		}
	} else if ttl >= 0 || op == proto.OpCreateTTL {
		// ZooKeeper lets createTTL with a non-TTL mode and ttl < 0 through
		// to a failure while applying; refuse it up front.
		return fail(proto.ErrBadArguments)
	}
	if !t.sessionValid(txn) {
		return fail(proto.ErrSessionExpired)
	}
	if strings.IndexByte(path, 0) >= 0 {
		return fail(proto.ErrBadArguments)
	}
	parentPath, _, ok := parentOf(path)
	if !ok {
		return fail(proto.ErrBadArguments)
	}
	fixed, err := t.fixupACL(acls, txn.Auth)
	if err != nil {
		return fail(proto.ErrInvalidACL)
	}
	parent := t.Get(parentPath)
	if parent == nil {
		return fail(proto.ErrNoNode)
	}
	if !acl.Check(parent.acl.list, proto.PermCreate, txn.Auth) {
		return fail(proto.ErrNoAuth)
	}
	if mode.IsSequential() {
		var cversion int32
		if parent.kids != nil {
			cversion = parent.kids.cversion
		}
		if cversion < 0 {
			// Only a snapshot can hold a negative count (Apply stops
			// it at math.MaxInt32, below). Its "-000000005" suffix would
			// sort before every older sibling, so the parent has no
			// sequence numbers left: refuse as when they run out.
			return fail(proto.ErrNodeExists)
		}
		path = fmt.Sprintf("%s%010d", path, cversion)
	}
	if ValidatePath(path) != nil {
		return fail(proto.ErrBadArguments)
	}
	_, name, _ := parentOf(path)
	if path == "/" || parent.child(name) != nil {
		return fail(proto.ErrNodeExists)
	}
	if o := parent.owner; o != 0 && o != ContainerOwner && !IsTTLOwner(o) {
		return fail(proto.ErrNoChildrenForEphemerals)
	}
	if code := t.checkQuota(path, 0, len(data), true); code != proto.ErrOk {
		return fail(code)
	}
	// The request may alias a network buffer: own the path we keep (in
	// the indexes, events and result).
	path = strings.Clone(path)
	name = path[len(path)-len(name):]

	var owner int64
	switch {
	case op == proto.OpCreateContainer:
		owner = ContainerOwner
	case op == proto.OpCreateTTL:
		owner = ttlOwnerMask | ttl
	case mode.IsEphemeral():
		owner = txn.Session
	}
	n := newNode(name, data)
	n.czxid, n.mzxid = zxid, zxid
	n.ctime, n.mtime = txn.Time, txn.Time
	n.owner = owner
	n.acl = t.acls.intern(fixed)
	t.preserve(parent)
	t.unDigest(parentPath, parent)
	hadKids := parent.kids != nil
	k := parent.ensureKids()
	oldPzxid, oldCversion := k.pzxid, k.cversion
	k.add(n)
	// ZooKeeper's DataTree.createNode sets the parent's cversion (and
	// pzxid) only when the create's count, cversion+1 in Java's int, is
	// larger: at math.MaxInt32 it wraps and neither changes. The next
	// sequential create then names the same child (suffix 2147483647)
	// and fails with NodeExists while that child exists, instead of
	// making a negative suffix that sorts before older siblings.
	if k.cversion < math.MaxInt32 {
		k.cversion++
		k.pzxid = zxid
	}
	t.addDigest(parentPath, parent)
	t.addDigest(path, n)
	t.count++
	size := int64(len(path) + len(data))
	t.dataSize += size
	t.index(path, owner, true)
	t.updateQuotaStats(path, 1, int64(len(data)))
	t.record(func() {
		t.index(path, owner, false)
		t.count--
		t.dataSize -= size
		k.remove(name)
		k.pzxid, k.cversion = oldPzxid, oldCversion
		if !hadKids {
			parent.kids = nil
		}
		t.acls.release(n.acl)
	})
	t.events = append(t.events,
		Event{Type: proto.EventNodeCreated, Path: path, ACL: n.acl.list, Zxid: zxid},
		Event{Type: proto.EventNodeChildrenChanged, Path: nonEmpty(parentPath), ACL: parent.acl.list, Zxid: zxid})
	return OpResult{Op: op, Path: path, Stat: n.Stat()}
}

func nonEmpty(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// index adds or removes path from the ephemeral, container and TTL indexes.
func (t *Tree) index(path string, owner int64, add bool) {
	switch {
	case owner == 0:
	case owner == ContainerOwner:
		if add {
			t.containers[path] = struct{}{}
		} else {
			delete(t.containers, path)
		}
	case IsTTLOwner(owner):
		if add {
			t.ttls[path] = struct{}{}
		} else {
			delete(t.ttls, path)
		}
	default:
		set := t.ephemerals[owner]
		if add {
			if set == nil {
				set = make(map[string]struct{})
				t.ephemerals[owner] = set
			}
			set[path] = struct{}{}
		} else if set != nil {
			delete(set, path)
			if len(set) == 0 {
				delete(t.ephemerals, owner)
			}
		}
	}
}

func (t *Tree) delete(zxid int64, txn *Txn, path string, version int32) OpResult {
	fail := func(code proto.ErrCode) OpResult { return OpResult{Op: proto.OpDelete, Err: code} }
	parentPath, _, ok := parentOf(path)
	if !ok || strings.IndexByte(path, 0) >= 0 || isSpecialPath(path) {
		return fail(proto.ErrBadArguments)
	}
	parent := t.Get(parentPath)
	if parent == nil {
		return fail(proto.ErrNoNode)
	}
	if !acl.Check(parent.acl.list, proto.PermDelete, txn.Auth) {
		return fail(proto.ErrNoAuth)
	}
	_, name, _ := parentOf(path)
	n := parent.child(name)
	if n == nil {
		return fail(proto.ErrNoNode)
	}
	if version != -1 && version != n.version {
		return fail(proto.ErrBadVersion)
	}
	if n.NumChildren() > 0 {
		return fail(proto.ErrNotEmpty)
	}
	t.removeNode(zxid, path, parentPath, parent, n)
	return OpResult{Op: proto.OpDelete}
}

// removeNode unlinks a childless node and records the events.
func (t *Tree) removeNode(zxid int64, path, parentPath string, parent, n *Node) {
	t.preserve(parent)
	t.unDigest(path, n)
	t.unDigest(parentPath, parent)
	k := parent.kids // not nil: n is a child
	oldPzxid := k.pzxid
	_, name, _ := parentOf(path)
	k.remove(name)
	if zxid > k.pzxid {
		k.pzxid = zxid
	}
	t.addDigest(parentPath, parent)
	t.count--
	size := int64(len(path) + n.dataLen())
	t.dataSize -= size
	t.index(path, n.owner, false)
	t.updateQuotaStats(path, -1, -int64(n.dataLen()))
	nodeACL := n.acl.list
	t.acls.release(n.acl)
	t.record(func() {
		t.acls.addRef(n.acl)
		t.index(path, n.owner, true)
		k.add(n)
		k.pzxid = oldPzxid
		t.count++
		t.dataSize += size
	})
	t.events = append(t.events,
		Event{Type: proto.EventNodeDeleted, Path: path, ACL: nodeACL, Zxid: zxid},
		Event{Type: proto.EventNodeChildrenChanged, Path: nonEmpty(parentPath), ACL: parent.acl.list, Zxid: zxid})
}

func (t *Tree) setData(zxid int64, txn *Txn, path string, data []byte, version int32) OpResult {
	fail := func(code proto.ErrCode) OpResult { return OpResult{Op: proto.OpSetData, Err: code} }
	if ValidatePath(path) != nil {
		return fail(proto.ErrBadArguments)
	}
	n := t.Get(path)
	if n == nil {
		return fail(proto.ErrNoNode)
	}
	if !acl.Check(n.acl.list, proto.PermWrite, txn.Auth) {
		return fail(proto.ErrNoAuth)
	}
	oldLen := n.dataLen()
	if code := t.checkQuota(path, oldLen, len(data), false); code != proto.ErrOk {
		return fail(code)
	}
	if version != -1 && version != n.version {
		return fail(proto.ErrBadVersion)
	}
	t.preserve(n)
	t.unDigest(path, n)
	oldBuf, oldMeta, oldVersion, oldMzxid, oldMtime := n.bytes(), n.meta, n.version, n.mzxid, n.mtime
	n.setData(data)
	n.version++
	n.mzxid = zxid
	n.mtime = txn.Time
	t.addDigest(path, n)
	delta := int64(len(data) - oldLen)
	t.dataSize += delta
	t.record(func() {
		n.setBytes(oldBuf)
		n.meta, n.version, n.mzxid, n.mtime = oldMeta, oldVersion, oldMzxid, oldMtime
		t.dataSize -= delta
	})
	t.updateQuotaStats(path, 0, int64(len(data)-oldLen))
	t.events = append(t.events, Event{Type: proto.EventNodeDataChanged, Path: path, ACL: n.acl.list, Zxid: zxid})
	return OpResult{Op: proto.OpSetData, Stat: n.Stat()}
}

func (t *Tree) setACL(txn *Txn, path string, acls []proto.ACL, version int32) OpResult {
	fail := func(code proto.ErrCode) OpResult { return OpResult{Op: proto.OpSetACL, Err: code} }
	if ValidatePath(path) != nil {
		return fail(proto.ErrBadArguments)
	}
	fixed, err := t.fixupACL(acls, txn.Auth)
	if err != nil {
		return fail(proto.ErrInvalidACL)
	}
	n := t.Get(path)
	if n == nil {
		return fail(proto.ErrNoNode)
	}
	if !acl.Check(n.acl.list, proto.PermAdmin, txn.Auth) {
		return fail(proto.ErrNoAuth)
	}
	if version != -1 && version != n.aversion {
		return fail(proto.ErrBadVersion)
	}
	t.preserve(n)
	t.unDigest(path, n)
	old := n.acl
	n.acl = t.acls.intern(fixed)
	t.acls.release(old)
	n.aversion++
	t.addDigest(path, n)
	return OpResult{Op: proto.OpSetACL, Stat: n.Stat()}
}

func (t *Tree) check(txn *Txn, path string, version int32) OpResult {
	fail := func(code proto.ErrCode) OpResult { return OpResult{Op: proto.OpCheck, Err: code} }
	if ValidatePath(path) != nil {
		return fail(proto.ErrBadArguments)
	}
	n := t.Get(path)
	if n == nil {
		return fail(proto.ErrNoNode)
	}
	if !acl.Check(n.acl.list, proto.PermRead, txn.Auth) {
		return fail(proto.ErrNoAuth)
	}
	if version != -1 && version != n.version {
		return fail(proto.ErrBadVersion)
	}
	return OpResult{Op: proto.OpCheck, Stat: n.Stat()}
}

// deleteContainer removes a container or TTL node chosen by the sweep, after
// re-checking at this log position that it still qualifies: it exists, has
// no children, and (for TTL nodes) has not been modified within its TTL as of
// the transaction's time.
func (t *Tree) deleteContainer(zxid int64, txn *Txn, path string) OpResult {
	fail := func(code proto.ErrCode) OpResult { return OpResult{Op: proto.OpDeleteContainer, Err: code} }
	parentPath, _, ok := parentOf(path)
	if !ok || isSpecialPath(path) {
		return fail(proto.ErrBadArguments)
	}
	parent, n := t.lookup(path)
	if n == nil {
		return fail(proto.ErrNoNode)
	}
	if n.NumChildren() > 0 {
		return fail(proto.ErrNotEmpty)
	}
	owner := n.owner
	switch {
	case owner == ContainerOwner:
		if n.kids == nil || n.kids.cversion == 0 {
			return fail(proto.ErrBadVersion)
		}
	case IsTTLOwner(owner):
		if !ttlExpired(n, txn.Time) {
			return fail(proto.ErrBadVersion)
		}
	default:
		return fail(proto.ErrBadVersion)
	}
	t.removeNode(zxid, path, parentPath, parent, n)
	return OpResult{Op: proto.OpDeleteContainer}
}

// closeSession deletes the session's ephemerals and forgets the session.
func (t *Tree) closeSession(zxid int64, session int64) {
	for _, p := range t.Ephemerals(session) {
		parent, n := t.lookup(p)
		if n == nil || parent == nil {
			continue
		}
		parentPath, _, _ := parentOf(p)
		t.removeNode(zxid, p, parentPath, parent, n)
	}
	delete(t.ephemerals, session)
	delete(t.sessions, session)
}
