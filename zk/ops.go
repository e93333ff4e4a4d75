package zk

import (
	"context"
	"strings"
	"time"

	"github.com/zkgo/zkgo/proto"
)

// CreateOption adjusts a create.
type CreateOption func(*createOpts)

type createOpts struct {
	ttl int64 // ms
}

// maxTTL is the largest TTL ZooKeeper accepts (EphemeralType.TTL's limit).
const maxTTL = 1<<40 - 1

// WithTTL sets the time to live, in milliseconds, of a node created with
// ModePersistentWithTTL or ModePersistentSequentialWithTTL (the server must
// have extended types enabled). A TTL node with no children is deleted once
// it has not been modified for ttl.
//
// WithTTLDuration is the same with a time.Duration, the unit of every other
// duration in zkgo's API.
func WithTTL(ttlMs int64) CreateOption { return func(o *createOpts) { o.ttl = ttlMs } }

// WithTTLDuration is WithTTL(ttl.Milliseconds()).
func WithTTLDuration(ttl time.Duration) CreateOption { return WithTTL(ttl.Milliseconds()) }

// createRequest validates a create and builds its op, body and response.
// withStat selects create2 for plain modes.
func (c *Conn) createRequest(opName, path string, data []byte, acl []ACL, mode CreateMode, withStat bool, opts []CreateOption) (proto.OpCode, proto.Record, error) {
	var o createOpts
	for _, fn := range opts {
		fn(&o)
	}
	if !mode.Valid() {
		return 0, nil, &Error{Code: proto.ErrBadArguments, Err: ErrBadArguments, Op: opName, Path: path, Detail: "invalid create mode"}
	}
	sp, err := c.checkPath(opName, path, mode.IsSequential())
	if err != nil {
		return 0, nil, err
	}
	switch {
	case mode.IsTTL():
		if o.ttl <= 0 || o.ttl > maxTTL {
			return 0, nil, &Error{Code: proto.ErrBadArguments, Err: ErrBadArguments, Op: opName, Path: path, Detail: "TTL mode needs a TTL in (0, 2^40)"}
		}
		return proto.OpCreateTTL, &proto.CreateTTLRequest{Path: sp, Data: data, ACL: acl, Flags: mode, TTL: o.ttl}, nil
	case o.ttl != 0:
		return 0, nil, &Error{Code: proto.ErrBadArguments, Err: ErrBadArguments, Op: opName, Path: path, Detail: "WithTTL needs a TTL create mode"}
	case mode == ModeContainer:
		return proto.OpCreateContainer, &proto.CreateRequest{Path: sp, Data: data, ACL: acl, Flags: mode}, nil
	case withStat:
		return proto.OpCreate2, &proto.CreateRequest{Path: sp, Data: data, ACL: acl, Flags: mode}, nil
	}
	return proto.OpCreate, &proto.CreateRequest{Path: sp, Data: data, ACL: acl, Flags: mode}, nil
}

// Create creates a node and returns its path (with the sequence number for
// sequential modes). Containers and TTL nodes (WithTTL) are supported. acl
// must not be empty: OpenACLUnsafe, CreatorAllACL and ReadACLUnsafe are the
// usual lists, and WorldACL, AuthACL and DigestACL build others.
func (c *Conn) Create(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode, opts ...CreateOption) (string, error) {
	op, body, err := c.createRequest("create", path, data, acl, mode, false, opts)
	if err != nil {
		return "", err
	}
	if op == proto.OpCreate {
		var resp proto.CreateResponse
		if _, err := c.call(ctx, op, body, &resp, nil); err != nil {
			return "", wrapErr(err, "create", path)
		}
		return c.stripRoot(resp.Path), nil
	}
	var resp proto.Create2Response
	if _, err := c.call(ctx, op, body, &resp, nil); err != nil {
		return "", wrapErr(err, "create", path)
	}
	return c.stripRoot(resp.Path), nil
}

// Create2 is Create returning the new node's Stat too (create2).
func (c *Conn) Create2(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode, opts ...CreateOption) (string, *Stat, error) {
	op, body, err := c.createRequest("create2", path, data, acl, mode, true, opts)
	if err != nil {
		return "", nil, err
	}
	var resp proto.Create2Response
	if _, err := c.call(ctx, op, body, &resp, nil); err != nil {
		return "", nil, wrapErr(err, "create2", path)
	}
	return c.stripRoot(resp.Path), &resp.Stat, nil
}

// AnyVersion matches every version in Delete, Set, SetACL and CheckOp.
const AnyVersion int32 = -1

// Delete deletes a node if its version matches (AnyVersion for any).
func (c *Conn) Delete(ctx context.Context, path string, version int32) error {
	sp, err := c.checkPath("delete", path, false)
	if err != nil {
		return err
	}
	_, err = c.call(ctx, proto.OpDelete, &proto.DeleteRequest{Path: sp, Version: version}, nil, nil)
	return wrapErr(err, "delete", path)
}

// Exists returns the node's Stat, or nil (and no error) if it does not exist.
func (c *Conn) Exists(ctx context.Context, path string) (*Stat, error) {
	sp, err := c.checkPath("exists", path, false)
	if err != nil {
		return nil, err
	}
	resp := new(proto.ExistsResponse)
	if _, err := c.call(ctx, proto.OpExists, &proto.ExistsRequest{Path: sp}, resp, nil); err != nil {
		if ErrorCode(err) == proto.ErrNoNode {
			return nil, nil
		}
		return nil, wrapErr(err, "exists", path)
	}
	return &resp.Stat, nil
}

// watchCall sends a watch-setting read; kind maps the reply's code to the
// kind of watch to register (ok false: none).
func (c *Conn) watchCall(ctx context.Context, opName, path string, op proto.OpCode, body, resp proto.Record, kind func(proto.ErrCode) (watchKind, bool)) (<-chan Event, error) {
	ch := make(chan Event, 1)
	c.watches.begin(path)
	defer c.watches.end(path)
	_, err := c.call(ctx, op, body, resp, func(code proto.ErrCode) {
		if k, ok := kind(code); ok {
			c.watches.add(k, path, ch)
		}
	})
	if err != nil {
		return nil, wrapErr(err, opName, path)
	}
	return ch, nil
}

// ExistsW is Exists that also sets a watch: the channel receives exactly one
// event (NodeCreated if the node did not exist; NodeDataChanged or
// NodeDeleted if it did) and is then closed. If the session ends first, the
// event is EventNotWatching. The watch survives reconnections.
func (c *Conn) ExistsW(ctx context.Context, path string) (*Stat, <-chan Event, error) {
	sp, err := c.checkPath("exists", path, false)
	if err != nil {
		return nil, nil, err
	}
	resp := new(proto.ExistsResponse)
	ch := make(chan Event, 1)
	c.watches.begin(path)
	defer c.watches.end(path)
	_, err = c.call(ctx, proto.OpExists, &proto.ExistsRequest{Path: sp, Watch: true}, resp, func(code proto.ErrCode) {
		switch code {
		case proto.ErrOk:
			c.watches.add(watchData, path, ch)
		case proto.ErrNoNode:
			c.watches.add(watchExist, path, ch)
		}
	})
	if err != nil {
		if ErrorCode(err) == proto.ErrNoNode {
			return nil, ch, nil
		}
		return nil, nil, wrapErr(err, "exists", path)
	}
	return &resp.Stat, ch, nil
}

// Get returns a node's data and Stat.
func (c *Conn) Get(ctx context.Context, path string) ([]byte, *Stat, error) {
	sp, err := c.checkPath("getData", path, false)
	if err != nil {
		return nil, nil, err
	}
	resp := new(proto.GetDataResponse)
	if _, err := c.call(ctx, proto.OpGetData, &proto.GetDataRequest{Path: sp}, resp, nil); err != nil {
		return nil, nil, wrapErr(err, "getData", path)
	}
	return resp.Data, &resp.Stat, nil
}

// GetW is Get that also sets a data watch: the channel receives exactly one
// event (NodeDataChanged or NodeDeleted, or EventNotWatching if the session
// ends first) and is then closed.
func (c *Conn) GetW(ctx context.Context, path string) ([]byte, *Stat, <-chan Event, error) {
	sp, err := c.checkPath("getData", path, false)
	if err != nil {
		return nil, nil, nil, err
	}
	resp := new(proto.GetDataResponse)
	ch, err := c.watchCall(ctx, "getData", path, proto.OpGetData, &proto.GetDataRequest{Path: sp, Watch: true}, resp, okKind(watchData))
	if err != nil {
		return nil, nil, nil, err
	}
	return resp.Data, &resp.Stat, ch, nil
}

func okKind(k watchKind) func(proto.ErrCode) (watchKind, bool) {
	return func(code proto.ErrCode) (watchKind, bool) { return k, code == proto.ErrOk }
}

// Set replaces a node's data if its version matches (AnyVersion for any)
// and returns the new Stat.
func (c *Conn) Set(ctx context.Context, path string, data []byte, version int32) (*Stat, error) {
	sp, err := c.checkPath("setData", path, false)
	if err != nil {
		return nil, err
	}
	resp := new(proto.SetDataResponse)
	if _, err := c.call(ctx, proto.OpSetData, &proto.SetDataRequest{Path: sp, Data: data, Version: version}, resp, nil); err != nil {
		return nil, wrapErr(err, "setData", path)
	}
	return &resp.Stat, nil
}

// Children returns the names of a node's children (unsorted) and its Stat.
func (c *Conn) Children(ctx context.Context, path string) ([]string, *Stat, error) {
	sp, err := c.checkPath("getChildren", path, false)
	if err != nil {
		return nil, nil, err
	}
	resp := new(proto.GetChildren2Response)
	if _, err := c.call(ctx, proto.OpGetChildren2, &proto.GetChildren2Request{Path: sp}, resp, nil); err != nil {
		return nil, nil, wrapErr(err, "getChildren", path)
	}
	return nonNil(resp.Children), &resp.Stat, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ChildrenW is Children that also sets a child watch: the channel receives
// exactly one event (NodeChildrenChanged or NodeDeleted, or EventNotWatching)
// and is then closed.
func (c *Conn) ChildrenW(ctx context.Context, path string) ([]string, *Stat, <-chan Event, error) {
	sp, err := c.checkPath("getChildren", path, false)
	if err != nil {
		return nil, nil, nil, err
	}
	resp := new(proto.GetChildren2Response)
	ch, err := c.watchCall(ctx, "getChildren", path, proto.OpGetChildren2, &proto.GetChildren2Request{Path: sp, Watch: true}, resp, okKind(watchChild))
	if err != nil {
		return nil, nil, nil, err
	}
	return nonNil(resp.Children), &resp.Stat, ch, nil
}

// GetACL returns a node's ACL and Stat.
func (c *Conn) GetACL(ctx context.Context, path string) ([]ACL, *Stat, error) {
	sp, err := c.checkPath("getACL", path, false)
	if err != nil {
		return nil, nil, err
	}
	resp := new(proto.GetACLResponse)
	if _, err := c.call(ctx, proto.OpGetACL, &proto.GetACLRequest{Path: sp}, resp, nil); err != nil {
		return nil, nil, wrapErr(err, "getACL", path)
	}
	return resp.ACL, &resp.Stat, nil
}

// SetACL replaces a node's ACL if its ACL version (Stat.Aversion) matches.
func (c *Conn) SetACL(ctx context.Context, path string, acl []ACL, aversion int32) (*Stat, error) {
	sp, err := c.checkPath("setACL", path, false)
	if err != nil {
		return nil, err
	}
	resp := new(proto.SetACLResponse)
	if _, err := c.call(ctx, proto.OpSetACL, &proto.SetACLRequest{Path: sp, ACL: acl, Version: aversion}, resp, nil); err != nil {
		return nil, wrapErr(err, "setACL", path)
	}
	return &resp.Stat, nil
}

// Sync waits until the server the Conn is connected to has caught up with
// the leader, so that reads after it see every write committed before it.
func (c *Conn) Sync(ctx context.Context, path string) (string, error) {
	sp, err := c.checkPath("sync", path, false)
	if err != nil {
		return "", err
	}
	resp := new(proto.SyncResponse)
	if _, err := c.call(ctx, proto.OpSync, &proto.SyncRequest{Path: sp}, resp, nil); err != nil {
		return "", wrapErr(err, "sync", path)
	}
	return c.stripRoot(resp.Path), nil
}

// AddWatch sets a persistent watch on path (AddWatchPersistent: data
// and child events of the node itself) or a persistent recursive one
// (AddWatchPersistentRecursive: data events of the node and of every
// descendant). The watch stays until closed and is re-registered after
// reconnections. The node need not exist.
func (c *Conn) AddWatch(ctx context.Context, path string, mode AddWatchMode) (*Watcher, error) {
	sp, err := c.checkPath("addWatch", path, false)
	if err != nil {
		return nil, err
	}
	if mode != AddWatchPersistent && mode != AddWatchPersistentRecursive {
		return nil, &Error{Code: proto.ErrBadArguments, Err: ErrBadArguments, Op: "addWatch", Path: path, Detail: "invalid mode"}
	}
	w := &Watcher{c: c, path: path, recursive: mode == AddWatchPersistentRecursive, q: newQueue[Event](64)}
	c.watches.begin(path)
	defer c.watches.end(path)
	_, err = c.call(ctx, proto.OpAddWatch, &proto.AddWatchRequest{Path: sp, Mode: mode}, new(proto.ErrorResponse), func(code proto.ErrCode) {
		if code == proto.ErrOk {
			c.watches.addPersistent(w)
		}
	})
	if err != nil {
		w.q.stop()
		return nil, wrapErr(err, "addWatch", path)
	}
	return w, nil
}

// RemoveWatches removes this session's watches of the given type on path,
// on the server and locally: removed one-shot watches receive
// EventDataWatchRemoved or EventChildWatchRemoved, and with WatcherAny the
// persistent Watchers on path receive EventPersistentWatchRemoved and end.
// It fails with ErrNoWatcher if the server had none.
func (c *Conn) RemoveWatches(ctx context.Context, path string, typ WatcherType) error {
	sp, err := c.checkPath("removeWatches", path, false)
	if err != nil {
		return err
	}
	_, err = c.call(ctx, proto.OpRemoveWatches, &proto.RemoveWatchesRequest{Path: sp, Type: typ}, nil, func(code proto.ErrCode) {
		if code == proto.ErrOk {
			c.watches.removed(path, typ)
		}
	})
	return wrapErr(err, "removeWatches", path)
}

// CheckWatches fails with ErrNoWatcher unless the server holds a watch of
// the given type on path for this session.
func (c *Conn) CheckWatches(ctx context.Context, path string, typ WatcherType) error {
	sp, err := c.checkPath("checkWatches", path, false)
	if err != nil {
		return err
	}
	_, err = c.call(ctx, proto.OpCheckWatches, &proto.CheckWatchesRequest{Path: sp, Type: typ}, nil, nil)
	return wrapErr(err, "checkWatches", path)
}

// GetEphemerals returns the paths of this session's ephemeral nodes under
// prefix ("/" for all).
func (c *Conn) GetEphemerals(ctx context.Context, prefix string) ([]string, error) {
	sp, err := c.checkPath("getEphemerals", prefix, false)
	if err != nil {
		return nil, err
	}
	resp := new(proto.GetEphemeralsResponse)
	if _, err := c.call(ctx, proto.OpGetEphemerals, &proto.GetEphemeralsRequest{PrefixPath: sp}, resp, nil); err != nil {
		return nil, wrapErr(err, "getEphemerals", prefix)
	}
	out := nonNil(resp.Ephemerals)
	for i, p := range out {
		out[i] = c.stripRoot(p)
	}
	return out, nil
}

// GetAllChildrenNumber returns the number of descendants of path.
func (c *Conn) GetAllChildrenNumber(ctx context.Context, path string) (int, error) {
	sp, err := c.checkPath("getAllChildrenNumber", path, false)
	if err != nil {
		return 0, err
	}
	resp := new(proto.GetAllChildrenNumberResponse)
	if _, err := c.call(ctx, proto.OpGetAllChildrenNumber, &proto.GetAllChildrenNumberRequest{Path: sp}, resp, nil); err != nil {
		return 0, wrapErr(err, "getAllChildrenNumber", path)
	}
	return int(resp.TotalNumber), nil
}

// WhoAmI returns the identities the session is authenticated as.
func (c *Conn) WhoAmI(ctx context.Context) ([]ClientInfo, error) {
	resp := new(proto.WhoAmIResponse)
	if _, err := c.call(ctx, proto.OpWhoAmI, nil, resp, nil); err != nil {
		return nil, wrapErr(err, "whoAmI", "")
	}
	return resp.ClientInfo, nil
}

// ConfigNode is where ZooKeeper publishes its dynamic configuration.
const ConfigNode = "/zookeeper/config"

// GetConfig returns the server's configuration (the data of
// /zookeeper/config, read outside any chroot) and its Stat.
func (c *Conn) GetConfig(ctx context.Context) ([]byte, *Stat, error) {
	resp := new(proto.GetDataResponse)
	if _, err := c.call(ctx, proto.OpGetData, &proto.GetDataRequest{Path: ConfigNode}, resp, nil); err != nil {
		return nil, nil, wrapErr(err, "getConfig", ConfigNode)
	}
	return resp.Data, &resp.Stat, nil
}

// GetConfigW is GetConfig that also watches the configuration: the channel
// receives one event (EventNodeDataChanged with Path ConfigNode) when the
// membership changes, and is then closed. Like every watch it survives
// reconnections and ends with EventNotWatching if the session ends. With a
// chroot the watch is still on the real /zookeeper/config.
func (c *Conn) GetConfigW(ctx context.Context) ([]byte, *Stat, <-chan Event, error) {
	key := ConfigNode
	if c.chroot != "" {
		key = configKey
	}
	resp := new(proto.GetDataResponse)
	ch, err := c.watchCall(ctx, "getConfig", key, proto.OpGetData, &proto.GetDataRequest{Path: ConfigNode, Watch: true}, resp, okKind(watchData))
	if err != nil {
		return nil, nil, nil, err
	}
	return resp.Data, &resp.Stat, ch, nil
}

// Reconfig replaces the ensemble's membership with members (lines in the
// dynamic configuration format, e.g. "server.1=10.0.0.1:2888:3888;2181"),
// provided the current configuration version is fromConfig (-1: any). It
// returns the new configuration and its Stat. Servers answer
// ErrReconfigDisabled unless reconfigEnabled is set, and ErrNoAuth unless
// the session is authorised for /zookeeper/config (super user or ACL).
func (c *Conn) Reconfig(ctx context.Context, members []string, fromConfig int64) ([]byte, *Stat, error) {
	if len(members) == 0 {
		return nil, nil, &Error{Code: proto.ErrBadArguments, Err: ErrBadArguments, Op: "reconfig", Detail: "no members"}
	}
	return c.reconfig(ctx, &proto.ReconfigRequest{NewMembers: strings.Join(members, ","), CurConfigID: fromConfig})
}

// IncrementalReconfig adds the joining servers (dynamic configuration
// lines) and removes the leaving ones (server ids), provided the current
// configuration version is fromConfig (-1: any). See Reconfig.
func (c *Conn) IncrementalReconfig(ctx context.Context, joining, leaving []string, fromConfig int64) ([]byte, *Stat, error) {
	if len(joining) == 0 && len(leaving) == 0 {
		return nil, nil, &Error{Code: proto.ErrBadArguments, Err: ErrBadArguments, Op: "reconfig", Detail: "nothing joins or leaves"}
	}
	return c.reconfig(ctx, &proto.ReconfigRequest{
		JoiningServers: strings.Join(joining, ","), LeavingServers: strings.Join(leaving, ","), CurConfigID: fromConfig})
}

func (c *Conn) reconfig(ctx context.Context, req *proto.ReconfigRequest) ([]byte, *Stat, error) {
	resp := new(proto.GetDataResponse)
	if _, err := c.call(ctx, proto.OpReconfig, req, resp, nil); err != nil {
		return nil, nil, wrapErr(err, "reconfig", "")
	}
	return resp.Data, &resp.Stat, nil
}

// AddAuth authenticates the session (for example scheme "digest", auth
// "user:password"). Accepted credentials are re-sent after every
// reconnection. If the server refuses them it returns ErrAuthFailed and
// closes the connection (the Conn reconnects, without them).
func (c *Conn) AddAuth(ctx context.Context, scheme string, auth []byte) error {
	a := authInfo{scheme, append([]byte(nil), auth...)}
	r := &request{xid: proto.XidAuth, op: proto.OpAuth, body: &proto.AuthPacket{Scheme: a.scheme, Auth: a.auth}, done: make(chan struct{}),
		onReply: func(code proto.ErrCode) {
			if code == proto.ErrOk {
				c.mu.Lock()
				c.auths = append(c.auths, a)
				c.mu.Unlock()
			}
		}}
	return wrapErr(c.roundTrip(ctx, r), "auth", "")
}
