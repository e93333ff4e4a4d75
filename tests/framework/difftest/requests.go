package difftest

// Building the requests a script's steps name.

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
)

var createOps = map[string]proto.OpCode{
	"create": proto.OpCreate, "create2": proto.OpCreate2,
	"createContainer": proto.OpCreateContainer, "createTTL": proto.OpCreateTTL,
}

func (r *run) buildRequest(verb string, args []token, subs []subOp) (proto.OpCode, proto.Record, error) {
	pos := positional(args)
	path := func() (string, error) {
		if len(pos) == 0 {
			return "", scriptErr("%s needs a path", verb)
		}
		return r.path(pos[0]), nil
	}
	version := func(key string) (int32, error) {
		v, ok := option(args, key)
		if !ok {
			return -1, nil
		}
		n, err := strconv.ParseInt(v, 0, 32)
		if err != nil {
			return 0, scriptErr("bad %s %q", key, v)
		}
		return int32(n), nil
	}
	switch verb {
	case "create", "create2", "createContainer", "createTTL":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		data := dataOpt(args, "data")
		acl, err := r.aclOpt(args)
		if err != nil {
			return 0, nil, err
		}
		mode := proto.ModePersistent
		switch verb {
		case "createContainer":
			mode = proto.ModeContainer
		case "createTTL":
			mode = proto.ModePersistentWithTTL
		}
		if v, ok := option(args, "mode"); ok {
			if mode, err = parseMode(v); err != nil {
				return 0, nil, err
			}
		}
		op := createOps[verb]
		if v, ok := option(args, "ttl"); ok || verb == "createTTL" {
			ttl, err := strconv.ParseInt(v, 0, 64)
			if err != nil {
				return 0, nil, scriptErr("bad ttl %q", v)
			}
			if verb != "createTTL" {
				return 0, nil, scriptErr("ttl only with createTTL")
			}
			return op, &proto.CreateTTLRequest{Path: p, Data: data, ACL: acl, Flags: mode, TTL: ttl}, nil
		}
		return op, &proto.CreateRequest{Path: p, Data: data, ACL: acl, Flags: mode}, nil

	case "delete":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		v, err := version("v")
		return proto.OpDelete, &proto.DeleteRequest{Path: p, Version: v}, err

	case "check":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		v, err := version("v")
		return proto.OpCheck, &proto.CheckVersionRequest{Path: p, Version: v}, err

	case "exists", "getData", "getChildren", "getChildren2":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		w := hasWord(args, "watch")
		switch verb {
		case "exists":
			return proto.OpExists, &proto.ExistsRequest{Path: p, Watch: w}, nil
		case "getData":
			return proto.OpGetData, &proto.GetDataRequest{Path: p, Watch: w}, nil
		case "getChildren":
			return proto.OpGetChildren, &proto.GetChildrenRequest{Path: p, Watch: w}, nil
		default:
			return proto.OpGetChildren2, &proto.GetChildren2Request{Path: p, Watch: w}, nil
		}

	case "setData":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		var data []byte
		if len(pos) > 1 {
			data = tokenData(pos[1])
		}
		v, err := version("v")
		return proto.OpSetData, &proto.SetDataRequest{Path: p, Data: data, Version: v}, err

	case "getACL":
		p, err := path()
		return proto.OpGetACL, &proto.GetACLRequest{Path: p}, err

	case "setACL":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		acl, err := r.aclOpt(args)
		if err != nil {
			return 0, nil, err
		}
		v, err := version("v")
		return proto.OpSetACL, &proto.SetACLRequest{Path: p, ACL: acl, Version: v}, err

	case "sync":
		p, err := path()
		return proto.OpSync, &proto.SyncRequest{Path: p}, err

	case "multi", "multiRead":
		m := &proto.MultiRequest{}
		for _, sub := range subs {
			op, req, err := r.buildRequest(sub.verb, sub.args, nil)
			if err != nil {
				return 0, nil, err
			}
			m.Ops = append(m.Ops, proto.MultiOp{Type: op, Req: req})
		}
		if verb == "multiRead" {
			return proto.OpMultiRead, m, nil
		}
		return proto.OpMulti, m, nil

	case "reconfig":
		req := &proto.ReconfigRequest{CurConfigID: -1}
		req.JoiningServers, _ = option(args, "joining")
		req.LeavingServers, _ = option(args, "leaving")
		req.NewMembers, _ = option(args, "members")
		if v, ok := option(args, "from"); ok {
			n, err := r.number(v)
			if err != nil {
				return 0, nil, err
			}
			req.CurConfigID = n
		}
		return proto.OpReconfig, req, nil

	case "checkWatches", "removeWatches":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		if len(pos) < 2 {
			return 0, nil, scriptErr("%s needs a watcher type", verb)
		}
		var wt proto.WatcherType
		switch pos[1].val {
		case "data":
			wt = proto.WatcherData
		case "children":
			wt = proto.WatcherChildren
		case "any":
			wt = proto.WatcherAny
		default:
			n, err := strconv.Atoi(pos[1].val)
			if err != nil {
				return 0, nil, scriptErr("bad watcher type %q", pos[1].val)
			}
			wt = proto.WatcherType(n)
		}
		if verb == "checkWatches" {
			return proto.OpCheckWatches, &proto.CheckWatchesRequest{Path: p, Type: wt}, nil
		}
		return proto.OpRemoveWatches, &proto.RemoveWatchesRequest{Path: p, Type: wt}, nil

	case "addauth":
		if len(pos) < 2 {
			return 0, nil, scriptErr("addauth needs a scheme and an id")
		}
		return proto.OpAuth, &proto.AuthPacket{Scheme: pos[0].val, Auth: []byte(pos[1].val)}, nil

	case "setWatches", "setWatches2":
		rel := int64(0)
		if v, ok := option(args, "rel"); ok {
			var err error
			if rel, err = r.number(v); err != nil {
				return 0, nil, err
			}
		}
		list := func(key string) []string {
			out := []string{}
			if v, ok := option(args, key); ok && v != "" {
				for _, p := range strings.Split(v, ",") {
					out = append(out, strings.ReplaceAll(p, "$R", r.root))
				}
			}
			return out
		}
		if verb == "setWatches" {
			return proto.OpSetWatches, &proto.SetWatches{RelativeZxid: rel,
				DataWatches: list("data"), ExistWatches: list("exist"), ChildWatches: list("child")}, nil
		}
		return proto.OpSetWatches2, &proto.SetWatches2{RelativeZxid: rel,
			DataWatches: list("data"), ExistWatches: list("exist"), ChildWatches: list("child"),
			PersistentWatches: list("persistent"), PersistentRecursiveWatches: list("recursive")}, nil

	case "addWatch":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		if len(pos) < 2 {
			return 0, nil, scriptErr("addWatch needs a mode")
		}
		var m proto.AddWatchMode
		switch pos[1].val {
		case "persistent":
			m = proto.AddWatchPersistent
		case "recursive":
			m = proto.AddWatchPersistentRecursive
		default:
			n, err := strconv.Atoi(pos[1].val)
			if err != nil {
				return 0, nil, scriptErr("bad addWatch mode %q", pos[1].val)
			}
			m = proto.AddWatchMode(n)
		}
		return proto.OpAddWatch, &proto.AddWatchRequest{Path: p, Mode: m}, nil

	case "getEphemerals":
		p := ""
		if len(pos) > 0 {
			p = r.path(pos[0])
		}
		return proto.OpGetEphemerals, &proto.GetEphemeralsRequest{PrefixPath: p}, nil

	case "getAllChildrenNumber":
		p, err := path()
		return proto.OpGetAllChildrenNumber, &proto.GetAllChildrenNumberRequest{Path: p}, err

	case "whoAmI":
		return proto.OpWhoAmI, nil, nil
	case "ping":
		return proto.OpPing, nil, nil
	case "closeSession":
		return proto.OpCloseSession, nil, nil

	case "op":
		// op CODE [body=HEX]: a request of any type with any body.
		if len(pos) == 0 {
			return 0, nil, scriptErr("op needs an opcode")
		}
		code, err := strconv.ParseInt(pos[0].val, 0, 32)
		if err != nil {
			return 0, nil, scriptErr("bad opcode %q", pos[0].val)
		}
		var body []byte
		if v, ok := option(args, "body"); ok {
			if body, err = r.buildBody(v); err != nil {
				return 0, nil, err
			}
		}
		return proto.OpCode(code), rawBody(body), nil
	}
	return 0, nil, scriptErr("unknown request %q", verb)
}

// number reads a number option: $MARK or a Go integer literal.
func (r *run) number(v string) (int64, error) {
	if name, ok := strings.CutPrefix(v, "$"); ok {
		z, ok := r.vars[name]
		if !ok {
			return 0, scriptErr("no mark %q", name)
		}
		return z, nil
	}
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		return 0, scriptErr("bad number %q", v)
	}
	return n, nil
}

// configVersionRE finds the version line of /zookeeper/config's data.
var configVersionRE = regexp.MustCompile(`(?m)^version=([0-9a-fA-F]+)$`)

// buildBody encodes a request body written as comma-separated fields:
// s:STRING (a jute string, $R substituted), i:INT32, l:INT64, b:BYTE,
// x:HEX (raw bytes), t:TEXT (raw bytes of the text, $R substituted).
func (r *run) buildBody(spec string) ([]byte, error) {
	var e jute.Encoder
	for _, f := range strings.Split(spec, ",") {
		kind, v, ok := strings.Cut(f, ":")
		if !ok {
			return nil, scriptErr("bad body field %q", f)
		}
		switch kind {
		case "s":
			e.WriteString(strings.ReplaceAll(v, "$R", r.root))
		case "t":
			rawBody(strings.ReplaceAll(v, "$R", r.root)).Encode(&e)
		case "i", "l", "b":
			n, err := strconv.ParseInt(v, 0, 64)
			if err != nil {
				return nil, scriptErr("bad body field %q", f)
			}
			switch kind {
			case "i":
				e.WriteInt(int32(n))
			case "l":
				e.WriteLong(n)
			default:
				rawBody{byte(n)}.Encode(&e)
			}
		case "x":
			b, err := hex.DecodeString(v)
			if err != nil {
				return nil, scriptErr("bad body field %q", f)
			}
			rawBody(b).Encode(&e)
		default:
			return nil, scriptErr("bad body field %q", f)
		}
	}
	return e.Bytes(), nil
}

// rawBody is a request body given as bytes.
type rawBody []byte

func (b rawBody) Encode(e *jute.Encoder) {
	for _, c := range b {
		e.WriteBool(false) // grow by one byte, then overwrite it
		e.Bytes()[e.Len()-1] = c
	}
}

func (b rawBody) Decode(*jute.Decoder) {}

// dataOpt returns the bytes of option key: absent or the bare word null
// mean a null buffer.
func dataOpt(args []token, key string) []byte {
	for _, a := range args {
		if a.key == key {
			return tokenData(a)
		}
	}
	return nil
}

func tokenData(t token) []byte {
	if !t.quoted && t.val == "null" {
		return nil
	}
	// "@N" stands for N bytes of filler.
	if n, ok := strings.CutPrefix(t.val, "@"); ok && !t.quoted {
		if k, err := strconv.Atoi(n); err == nil && k >= 0 {
			b := make([]byte, k)
			for i := range b {
				b[i] = byte('a' + i%26)
			}
			return b
		}
	}
	return []byte(t.val)
}

func parseMode(v string) (proto.CreateMode, error) {
	switch v {
	case "persistent":
		return proto.ModePersistent, nil
	case "ephemeral":
		return proto.ModeEphemeral, nil
	case "psequential":
		return proto.ModePersistentSequential, nil
	case "esequential":
		return proto.ModeEphemeralSequential, nil
	case "container":
		return proto.ModeContainer, nil
	case "ttl":
		return proto.ModePersistentWithTTL, nil
	case "sttl":
		return proto.ModePersistentSequentialWithTTL, nil
	}
	n, err := strconv.ParseInt(v, 0, 32)
	if err != nil {
		return 0, scriptErr("bad mode %q", v)
	}
	return proto.CreateMode(n), nil
}

// aclOpt parses the acl= option. Default: world:anyone with all
// permissions. Forms: open, read (world:anyone:r), creator (auth::cdrwa),
// empty (no entry), null (a null vector), or a comma-separated list of
// scheme:id:perms where perms are letters of "rwcda" or a number, and the
// pseudo scheme dpw (dpw:user:password:perms) is a digest ACL for that
// password.
func (r *run) aclOpt(args []token) ([]proto.ACL, error) {
	v, ok := option(args, "acl")
	if !ok {
		v = "open"
	}
	switch v {
	case "open":
		return []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}, nil
	case "read":
		return []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "world", ID: "anyone"}}}, nil
	case "creator":
		return []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "auth", ID: ""}}}, nil
	case "empty":
		return []proto.ACL{}, nil
	case "null":
		return nil, nil
	}
	var out []proto.ACL
	for _, e := range strings.Split(v, ",") {
		if e == "creator" {
			e = "auth::cdrwa"
		}
		i, j := strings.Index(e, ":"), strings.LastIndex(e, ":")
		if i < 0 || i == j {
			return nil, scriptErr("bad acl entry %q", e)
		}
		scheme, id, ps := e[:i], e[i+1:j], e[j+1:]
		perms, err := parsePerms(ps)
		if err != nil {
			return nil, err
		}
		if scheme == "dpw" {
			scheme, id = "digest", digestID(id)
		}
		out = append(out, proto.ACL{Perms: perms, ID: proto.Id{Scheme: scheme, ID: id}})
	}
	return out, nil
}

// digestID turns "user:password" into ZooKeeper's "user:base64(sha1)".
func digestID(userPass string) string {
	user, _, _ := strings.Cut(userPass, ":")
	sum := sha1.Sum([]byte(userPass))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

func parsePerms(s string) (proto.Perm, error) {
	if n, err := strconv.ParseInt(s, 0, 32); err == nil {
		return proto.Perm(n), nil
	}
	var p proto.Perm
	for _, c := range s {
		switch c {
		case 'r':
			p |= proto.PermRead
		case 'w':
			p |= proto.PermWrite
		case 'c':
			p |= proto.PermCreate
		case 'd':
			p |= proto.PermDelete
		case 'a':
			p |= proto.PermAdmin
		default:
			return 0, scriptErr("bad permissions %q", s)
		}
	}
	return p, nil
}
