package clientport

import (
	"strings"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// execRead answers a request that does not change the tree t. The caller
// holds the tree lock (read or write: it runs inside the state machine's
// View, or from a Waiter's Applied with the batch's tree). inline is true
// on the connection's reader goroutine, which then flushes the reply
// itself.
func (c *Conn) execRead(r *request, t *tree.Tree, inline bool) {
	if !r.noSlot {
		defer c.release()
	}
	zxid := t.LastZxid()
	hdr := proto.ReplyHeader{Xid: r.xid, Zxid: zxid}
	c.noteReply(r, zxid)
	if fr, ok := r.body.(fixedReply); ok {
		code, body := fr(r, t)
		hdr.Err = code
		c.reply(&hdr, body, inline)
		return
	}
	code, body := c.read(r, t)
	hdr.Err = code
	if code != proto.ErrOk {
		body = nil
	}
	c.reply(&hdr, body, inline)
}

func (c *Conn) reply(hdr *proto.ReplyHeader, body proto.Record, inline bool) {
	if !inline {
		c.enqueue(hdr, body)
		return
	}
	if c.append(hdr, body) {
		c.inlinePending = true
	}
}

// readHandler answers a read (proto.KindRead) from the tree t, which the
// caller holds locked.
type readHandler func(c *Conn, r *request, t *tree.Tree) (proto.ErrCode, proto.Record)

// readHandlers holds the handler of every read opcode of proto's table; a
// test checks that none is missing.
var readHandlers = map[proto.OpCode]readHandler{
	proto.OpPing:                 (*Conn).readPing,
	proto.OpExists:               (*Conn).readExists,
	proto.OpGetData:              (*Conn).readGetData,
	proto.OpGetChildren:          (*Conn).readGetChildren,
	proto.OpGetChildren2:         (*Conn).readGetChildren2,
	proto.OpGetACL:               (*Conn).readGetACL,
	proto.OpGetAllChildrenNumber: (*Conn).readAllChildrenNumber,
	proto.OpGetEphemerals:        (*Conn).readGetEphemerals,
	proto.OpWhoAmI:               (*Conn).readWhoAmI,
	proto.OpCheckWatches:         (*Conn).readCheckWatches,
	proto.OpRemoveWatches:        (*Conn).readRemoveWatches,
	proto.OpAddWatch:             (*Conn).readAddWatch,
	proto.OpSetWatches:           (*Conn).readSetWatches,
	proto.OpSetWatches2:          (*Conn).readSetWatches2,
	proto.OpMultiRead:            (*Conn).readMulti,
}

func (c *Conn) read(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	h := readHandlers[r.op]
	if h == nil {
		return proto.ErrUnimplemented, nil
	}
	if n := newWatches(r); n > 0 && c.s.watches.WatchesOf(c)+n > c.s.opts.MaxWatches {
		// The connection's watches are bounded: a request that would
		// add more is not executed, and the client may retry (Throttled,
		// as ZooKeeper answers an overloaded server's requests).
		c.s.stats.WatchRefusals.Add(1)
		return proto.ErrThrottled, nil
	}
	return h(c, r, t)
}

// newWatches returns how many watches r may register (an upper bound).
func newWatches(r *request) int {
	switch q := r.body.(type) {
	case *proto.ExistsRequest:
		return b2i(q.Watch)
	case *proto.GetDataRequest:
		return b2i(q.Watch)
	case *proto.GetChildrenRequest:
		return b2i(q.Watch)
	case *proto.GetChildren2Request:
		return b2i(q.Watch)
	case *proto.AddWatchRequest:
		return 2
	case *proto.SetWatches:
		return len(q.DataWatches) + len(q.ExistWatches) + len(q.ChildWatches)
	case *proto.SetWatches2:
		return len(q.DataWatches) + len(q.ExistWatches) + len(q.ChildWatches) + 2*(len(q.PersistentWatches)+len(q.PersistentRecursiveWatches))
	}
	return 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (c *Conn) readPing(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	return proto.ErrOk, nil
}

func (c *Conn) readExists(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	s := c.s
	q := r.body.(*proto.ExistsRequest)
	if strings.IndexByte(q.Path, 0) >= 0 {
		return proto.ErrBadArguments, nil
	}
	n := t.Get(q.Path)
	// ZOOKEEPER-2590 (3.8.4, 3.9.2): READ on an existing node, checked
	// before the watch is set, so a refused exists sets none.
	if n != nil && !s.opts.ExistsWithoutRead && !tree.CheckACL(n, proto.PermRead, r.auth) {
		return proto.ErrNoAuth, nil
	}
	if q.Watch {
		s.watches.AddData(strings.Clone(q.Path), c)
	}
	if n == nil {
		return proto.ErrNoNode, nil
	}
	return proto.ErrOk, &proto.ExistsResponse{Stat: n.Stat()}
}

func (c *Conn) readGetData(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	s := c.s
	q := r.body.(*proto.GetDataRequest)
	n := t.Get(q.Path)
	if n == nil {
		return proto.ErrNoNode, nil
	}
	if !tree.CheckACL(n, proto.PermRead, r.auth) {
		return proto.ErrNoAuth, nil
	}
	if q.Watch {
		s.watches.AddData(strings.Clone(q.Path), c)
	}
	return proto.ErrOk, &proto.GetDataResponse{Data: n.Data(), Stat: n.Stat()}
}

func (c *Conn) readGetChildren(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	s := c.s
	q := r.body.(*proto.GetChildrenRequest)
	n, code := c.readable(t, q.Path, r.auth)
	if code != proto.ErrOk {
		return code, nil
	}
	if q.Watch {
		s.watches.AddChild(strings.Clone(q.Path), c)
	}
	return proto.ErrOk, &proto.GetChildrenResponse{Children: n.Children()}
}

func (c *Conn) readGetChildren2(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	s := c.s
	q := r.body.(*proto.GetChildren2Request)
	n, code := c.readable(t, q.Path, r.auth)
	if code != proto.ErrOk {
		return code, nil
	}
	if q.Watch {
		s.watches.AddChild(strings.Clone(q.Path), c)
	}
	return proto.ErrOk, &proto.GetChildren2Response{Children: n.Children(), Stat: n.Stat()}
}

func (c *Conn) readGetACL(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	q := r.body.(*proto.GetACLRequest)
	n := t.Get(q.Path)
	if n == nil {
		return proto.ErrNoNode, nil
	}
	if !tree.CheckACL(n, proto.PermRead|proto.PermAdmin, r.auth) {
		return proto.ErrNoAuth, nil
	}
	list := n.ACL()
	if !tree.CheckACL(n, proto.PermAdmin, r.auth) {
		list = acl.Masked(list)
	}
	return proto.ErrOk, &proto.GetACLResponse{ACL: list, Stat: n.Stat()}
}

func (c *Conn) readAllChildrenNumber(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	q := r.body.(*proto.GetAllChildrenNumberRequest)
	_, code := c.readable(t, q.Path, r.auth)
	if code != proto.ErrOk {
		return code, nil
	}
	return proto.ErrOk, &proto.GetAllChildrenNumberResponse{TotalNumber: int32(t.CountDescendants(q.Path))}
}

func (c *Conn) readGetEphemerals(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	q := r.body.(*proto.GetEphemeralsRequest)
	all := t.Ephemerals(c.sessionID)
	prefix := strings.TrimSpace(q.PrefixPath)
	if prefix == "" || prefix == "/" {
		return proto.ErrOk, &proto.GetEphemeralsResponse{Ephemerals: all}
	}
	out := make([]string, 0, len(all))
	for _, p := range all {
		if strings.HasPrefix(p, q.PrefixPath) {
			out = append(out, p)
		}
	}
	return proto.ErrOk, &proto.GetEphemeralsResponse{Ephemerals: out}
}

func (c *Conn) readWhoAmI(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	ids := r.auth
	infos := make([]proto.ClientInfo, 0, len(ids))
	for _, id := range ids {
		user := id.ID
		switch id.Scheme {
		case acl.SchemeDigest:
			// The digest provider names the user without the hash.
			user, _, _ = strings.Cut(user, ":")
		case acl.SchemeSuper:
			// No provider has the super scheme: ZooKeeper's whoAmI
			// (AuthUtil.getUser) shows no user.
			user = ""
		}
		infos = append(infos, proto.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	return proto.ErrOk, &proto.WhoAmIResponse{ClientInfo: infos}
}

func (c *Conn) readCheckWatches(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	s := c.s
	q := r.body.(*proto.CheckWatchesRequest)
	if !validWatcherType(q.Type) {
		return proto.ErrMarshallingError, nil // WatcherType.fromInt throws
	}
	if !s.watches.Contains(q.Path, c, q.Type) {
		return proto.ErrNoWatcher, nil
	}
	return proto.ErrOk, nil
}

func (c *Conn) readRemoveWatches(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	s := c.s
	q := r.body.(*proto.RemoveWatchesRequest)
	if !validWatcherType(q.Type) {
		return proto.ErrMarshallingError, nil // WatcherType.fromInt throws
	}
	if !s.watches.Remove(q.Path, c, q.Type) {
		return proto.ErrNoWatcher, nil
	}
	return proto.ErrOk, nil
}

func (c *Conn) readAddWatch(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	s := c.s
	q := r.body.(*proto.AddWatchRequest)
	if q.Mode != proto.AddWatchPersistent && q.Mode != proto.AddWatchPersistentRecursive {
		return proto.ErrMarshallingError, nil // WatcherMode.fromZooDef throws
	}
	if n := t.Get(q.Path); n != nil && !tree.CheckACL(n, proto.PermRead, r.auth) {
		return proto.ErrNoAuth, nil
	}
	s.watches.AddPersistent(strings.Clone(q.Path), c, q.Mode == proto.AddWatchPersistentRecursive)
	return proto.ErrOk, &proto.ErrorResponse{Err: proto.ErrOk}
}

func (c *Conn) readSetWatches(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	q := r.body.(*proto.SetWatches)
	c.setWatches(t, q.RelativeZxid, q.DataWatches, q.ExistWatches, q.ChildWatches, nil, nil)
	return proto.ErrOk, nil
}

func (c *Conn) readSetWatches2(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	q := r.body.(*proto.SetWatches2)
	c.setWatches(t, q.RelativeZxid, q.DataWatches, q.ExistWatches, q.ChildWatches, q.PersistentWatches, q.PersistentRecursiveWatches)
	return proto.ErrOk, nil
}

func (c *Conn) readMulti(r *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
	q := r.body.(*proto.MultiRequest)
	out := &proto.MultiResponse{Results: make([]proto.MultiResult, len(q.Ops))}
	for i, op := range q.Ops {
		res := &out.Results[i]
		switch req := op.Req.(type) {
		case *proto.GetDataRequest:
			n := t.Get(req.Path)
			switch {
			case n == nil:
				res.Type, res.Err = proto.OpError, proto.ErrNoNode
			case !tree.CheckACL(n, proto.PermRead, r.auth):
				res.Type, res.Err = proto.OpError, proto.ErrNoAuth
			default:
				// ZooKeeper ignores the watch flag of multiRead ops.
				res.Type, res.Data, res.Stat = proto.OpGetData, n.Data(), n.Stat()
			}
		case *proto.GetChildrenRequest:
			n, code := c.readable(t, req.Path, r.auth)
			if code != proto.ErrOk {
				res.Type, res.Err = proto.OpError, code
				continue
			}
			res.Type, res.Children = proto.OpGetChildren, n.Children()
		default:
			res.Type, res.Err = proto.OpError, proto.ErrMarshallingError
		}
	}
	return proto.ErrOk, out
}

// validWatcherType reports whether t is a WatcherType of ZooKeeper 3.9
// (3.8 knows 1..3; 3.9 added Persistent and PersistentRecursive).
func validWatcherType(t proto.WatcherType) bool {
	return t >= proto.WatcherChildren && t <= proto.WatcherPersistentRecursive
}

func (c *Conn) readable(t *tree.Tree, p string, ids []proto.Id) (*tree.Node, proto.ErrCode) {
	n := t.Get(p)
	if n == nil {
		return nil, proto.ErrNoNode
	}
	if !tree.CheckACL(n, proto.PermRead, ids) {
		return nil, proto.ErrNoAuth
	}
	return n, proto.ErrOk
}

// setWatches re-registers a reconnecting client's watches, firing at once
// the events it missed since relativeZxid (ZooKeeper's DataTree.setWatches).
func (c *Conn) setWatches(t *tree.Tree, rel int64, data, exist, child, persistent, recursive []string) {
	s := c.s
	// Catch-up events are checked for READ on the node like every other
	// notification (Deliver; the CVE-2024-23944 class): a client that
	// re-registers a watch learns nothing of a node it cannot read. A
	// deletion has no node left to check.
	notify := func(typ proto.EventType, p string, n *tree.Node) {
		var nodeACL []proto.ACL
		if n != nil {
			nodeACL = n.ACL()
		}
		// Catch-up events carry no zxid (-1), as ZooKeeper 3.9's
		// DataTree.setWatches sends them.
		c.Deliver(proto.WatcherEvent{Type: typ, State: proto.StateSyncConnected, Path: p}, -1, nodeACL)
	}
	for _, p := range data {
		n := t.Get(p)
		switch {
		case n == nil:
			notify(proto.EventNodeDeleted, p, nil)
		case n.Stat().Mzxid > rel:
			notify(proto.EventNodeDataChanged, p, n)
		default:
			s.watches.AddData(strings.Clone(p), c)
		}
	}
	for _, p := range exist {
		if n := t.Get(p); n != nil {
			notify(proto.EventNodeCreated, p, n)
		} else {
			s.watches.AddData(strings.Clone(p), c)
		}
	}
	for _, p := range child {
		n := t.Get(p)
		switch {
		case n == nil:
			notify(proto.EventNodeDeleted, p, nil)
		case n.Stat().Pzxid > rel:
			notify(proto.EventNodeChildrenChanged, p, n)
		default:
			s.watches.AddChild(strings.Clone(p), c)
		}
	}
	for _, p := range persistent {
		s.watches.AddPersistent(strings.Clone(p), c, false)
	}
	for _, p := range recursive {
		s.watches.AddPersistent(strings.Clone(p), c, true)
	}
}
