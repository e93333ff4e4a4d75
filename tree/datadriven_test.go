package tree

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
)

// TestScenarios runs the scenario scripts in testdata/*.txt. Regenerate the
// expected output with `go test ./tree -run TestScenarios -rewrite` and
// review the diff: the scripts encode ZooKeeper 3.8 behaviour, so a changed
// line is a behaviour change.
//
// Command language (one directive per block; arguments are key=value, a
// value may be a Go-quoted string without spaces, e.g. path="/a\x00b"):
//
//	new [extended] [enforce-quota]      fresh tree (TTL nodes / hard quotas)
//	session id=1 [timeout=1000] [auth=(digest:u:p, ip:1.2.3.4, super)]
//	addauth session=1 id=digest:u:p     add an identity to a session
//	close session=1 [time=T]            closeSession
//	create path=/a [data=x] [mode=persistent|ephemeral|sequential|
//	       ephemeral_sequential|container|ttl|ttl_sequential|<n>]
//	       [ttl=100] [acl=(world:anyone:cdrwa, digest:u:p:rw, auth::cdrwa)]
//	       [op=create|create2|container|ttl] [session=1] [time=T] [stat]
//	       [auth=(digest:u:p, ...)]     identities of this txn only
//	                                    (any write; default: the session's)
//	delete path=/a [version=-1] [session=] [time=]
//	set path=/a [data=y] [version=-1] [session=] [time=] [stat]
//	setacl path=/a acl=(...) [version=-1] [session=]
//	check path=/a [version=-1] [session=]
//	delete-container path=/c [time=T]   the sweep's deleteContainer txn
//	multi [session=] [time=]            sub-ops (create/delete/set/check),
//	                                    one per input line
//	reap now=T [dry]                    ReapCandidates(T), then delete them
//	get path=/a                         data and full stat
//	ls path=/a                          children
//	getacl path=/a
//	events [acl]                        watch events of the last apply
//	walk [path=/a]                      every node of a subtree
//	ephemerals session=1
//	snapshot name=x / compare name=x    full state dump, compared later
//	invariants                          structural invariants
//	known-bug                           skip the rest of the file; the
//	                                    input says why (set
//	                                    ZKGO_RUN_KNOWN_BUGS=1 to run anyway)
//
// Every write uses the next zxid (starting at 1) and the clock, which starts
// at 1000 and is set by any time= argument. The default session is 0 (a
// server-internal transaction, always valid, no identities).
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario files")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			e := newScenarioEnv(Options{})
			datadriven.RunTest(t, f, func(t *testing.T, d *datadriven.TestData) string {
				out, err := e.run(t, d)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				return out
			})
		})
	}
}

type scenarioEnv struct {
	tree  *Tree
	zxid  int64
	clock int64
	auth  map[int64][]proto.Id
	last  Result
	snaps map[string]string
}

func newScenarioEnv(o Options) *scenarioEnv {
	t := New()
	t.SetOptions(o)
	return &scenarioEnv{tree: t, clock: 1000, auth: map[int64][]proto.Id{}, snaps: map[string]string{}}
}

// args is a parsed argument list.
type args map[string][]string

func parseArgs(in []datadriven.CmdArg) args {
	a := args{}
	for _, c := range in {
		a[c.Key] = c.Vals
	}
	return a
}

func (a args) has(k string) bool { _, ok := a[k]; return ok }

func unquote(s string) (string, error) {
	if strings.HasPrefix(s, `"`) {
		return strconv.Unquote(s)
	}
	return s, nil
}

func (a args) str(k, def string) (string, error) {
	v, ok := a[k]
	if !ok {
		return def, nil
	}
	if len(v) != 1 {
		return "", fmt.Errorf("%s: want one value, got %v", k, v)
	}
	return unquote(v[0])
}

func (a args) mustStr(k string) (string, error) {
	if !a.has(k) {
		return "", fmt.Errorf("missing argument %s", k)
	}
	return a.str(k, "")
}

func (a args) int64(k string, def int64) (int64, error) {
	s, err := a.str(k, "")
	if err != nil || !a.has(k) {
		return def, err
	}
	return strconv.ParseInt(s, 0, 64)
}

// data returns the data argument: nil when absent.
func (a args) data() ([]byte, error) {
	if !a.has("data") {
		return nil, nil
	}
	s, err := a.str("data", "")
	return []byte(s), err
}

func parsePerms(s string) (proto.Perm, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return proto.Perm(n), nil
	}
	var p proto.Perm
	for _, c := range s {
		switch c {
		case 'c':
			p |= proto.PermCreate
		case 'd':
			p |= proto.PermDelete
		case 'r':
			p |= proto.PermRead
		case 'w':
			p |= proto.PermWrite
		case 'a':
			p |= proto.PermAdmin
		case '-':
		default:
			return 0, fmt.Errorf("bad perms %q", s)
		}
	}
	return p, nil
}

// parseACL parses scheme:id:perms. For "digest", an id of the form
// user:password is turned into the digest id; any other id is used as is.
func parseACL(s string) (proto.ACL, error) {
	i, j := strings.IndexByte(s, ':'), strings.LastIndexByte(s, ':')
	if i < 0 || i == j {
		return proto.ACL{}, fmt.Errorf("bad acl %q (want scheme:id:perms)", s)
	}
	perms, err := parsePerms(s[j+1:])
	if err != nil {
		return proto.ACL{}, err
	}
	id := proto.Id{Scheme: s[:i], ID: s[i+1 : j]}
	if id.Scheme == acl.SchemeDigest {
		if u, p, ok := strings.Cut(id.ID, ":"); ok {
			id.ID = acl.DigestID(u, p)
		}
	}
	return proto.ACL{Perms: perms, ID: id}, nil
}

func (a args) acls() ([]proto.ACL, error) {
	v, ok := a["acl"]
	if !ok {
		return []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}, nil
	}
	if len(v) == 1 && v[0] == "none" {
		return nil, nil
	}
	out := make([]proto.ACL, 0, len(v))
	for _, s := range v {
		x, err := parseACL(s)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// parseID parses an identity: digest:user:password, super, or scheme:id.
func parseID(s string) (proto.Id, error) {
	if s == "super" {
		return proto.Id{Scheme: acl.SchemeSuper}, nil
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return proto.Id{}, fmt.Errorf("bad id %q", s)
	}
	if scheme == acl.SchemeDigest {
		u, p, ok := strings.Cut(rest, ":")
		if !ok {
			return proto.Id{}, fmt.Errorf("digest id wants user:password, got %q", rest)
		}
		return proto.Id{Scheme: scheme, ID: acl.DigestID(u, p)}, nil
	}
	return proto.Id{Scheme: scheme, ID: rest}, nil
}

func parseMode(s string) (proto.CreateMode, error) {
	switch s {
	case "persistent":
		return proto.ModePersistent, nil
	case "ephemeral":
		return proto.ModeEphemeral, nil
	case "sequential", "persistent_sequential":
		return proto.ModePersistentSequential, nil
	case "ephemeral_sequential":
		return proto.ModeEphemeralSequential, nil
	case "container":
		return proto.ModeContainer, nil
	case "ttl":
		return proto.ModePersistentWithTTL, nil
	case "ttl_sequential":
		return proto.ModePersistentSequentialWithTTL, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bad mode %q", s)
	}
	return proto.CreateMode(n), nil
}

// buildOp turns a write command into an opcode and request record.
func buildOp(cmd string, a args) (proto.OpCode, proto.Record, error) {
	path, err := a.mustStr("path")
	if err != nil {
		return 0, nil, err
	}
	version, err := a.int64("version", -1)
	if err != nil {
		return 0, nil, err
	}
	switch cmd {
	case "create":
		data, err := a.data()
		if err != nil {
			return 0, nil, err
		}
		acls, err := a.acls()
		if err != nil {
			return 0, nil, err
		}
		mode, err := parseMode(first(a.str("mode", "persistent")))
		if err != nil {
			return 0, nil, err
		}
		op := proto.OpCreate
		switch {
		case mode.IsContainer():
			op = proto.OpCreateContainer
		case mode.IsTTL():
			op = proto.OpCreateTTL
		}
		if a.has("op") {
			s, _ := a.str("op", "")
			switch s {
			case "create":
				op = proto.OpCreate
			case "create2":
				op = proto.OpCreate2
			case "container":
				op = proto.OpCreateContainer
			case "ttl":
				op = proto.OpCreateTTL
			default:
				return 0, nil, fmt.Errorf("bad op %q", s)
			}
		}
		if op == proto.OpCreateTTL {
			ttl, err := a.int64("ttl", 0)
			if err != nil {
				return 0, nil, err
			}
			return op, &proto.CreateTTLRequest{Path: path, Data: data, ACL: acls, Flags: mode, TTL: ttl}, nil
		}
		return op, &proto.CreateRequest{Path: path, Data: data, ACL: acls, Flags: mode}, nil
	case "delete":
		return proto.OpDelete, &proto.DeleteRequest{Path: path, Version: int32(version)}, nil
	case "set":
		data, err := a.data()
		if err != nil {
			return 0, nil, err
		}
		return proto.OpSetData, &proto.SetDataRequest{Path: path, Data: data, Version: int32(version)}, nil
	case "setacl":
		acls, err := a.acls()
		if err != nil {
			return 0, nil, err
		}
		return proto.OpSetACL, &proto.SetACLRequest{Path: path, ACL: acls, Version: int32(version)}, nil
	case "check":
		return proto.OpCheck, &proto.CheckVersionRequest{Path: path, Version: int32(version)}, nil
	case "delete-container":
		return proto.OpDeleteContainer, &DeleteContainerReq{Path: path}, nil
	}
	return 0, nil, fmt.Errorf("unknown write command %q", cmd)
}

func first[T any](v T, _ error) T { return v }

func (e *scenarioEnv) apply(txn *Txn) Result {
	e.zxid++
	e.last = e.tree.Apply(e.zxid, txn)
	return e.last
}

// txn builds a transaction from the session and time arguments.
func (e *scenarioEnv) txn(a args, op proto.OpCode, req proto.Record) (*Txn, error) {
	sess, err := a.int64("session", 0)
	if err != nil {
		return nil, err
	}
	if a.has("time") {
		if e.clock, err = a.int64("time", 0); err != nil {
			return nil, err
		}
	}
	ids := e.auth[sess]
	if a.has("auth") {
		ids = nil
		for _, s := range a["auth"] {
			x, err := parseID(s)
			if err != nil {
				return nil, err
			}
			ids = append(ids, x)
		}
	}
	return &Txn{Op: op, Session: sess, Time: e.clock, Auth: ids, Req: req}, nil
}

func opResultString(r OpResult, withOp bool) string {
	var b strings.Builder
	if withOp {
		b.WriteString(r.Op.String())
		b.WriteByte(' ')
	}
	b.WriteString(r.Err.String())
	if r.Path != "" {
		b.WriteString(" path=")
		b.WriteString(r.Path)
	}
	return b.String()
}

func (e *scenarioEnv) run(t *testing.T, d *datadriven.TestData) (string, error) {
	a := parseArgs(d.CmdArgs)
	tr := e.tree
	switch d.Cmd {
	case "known-bug":
		if os.Getenv("ZKGO_RUN_KNOWN_BUGS") == "" {
			t.Skip("zkgo bug: " + strings.TrimSpace(d.Input))
		}
		return "", nil

	case "new":
		*e = *newScenarioEnv(Options{ExtendedTypes: a.has("extended"), EnforceQuota: a.has("enforce-quota")})
		return "ok", nil

	case "session":
		id, err := a.int64("id", 0)
		if err != nil {
			return "", err
		}
		timeout, err := a.int64("timeout", 30000)
		if err != nil {
			return "", err
		}
		var ids []proto.Id
		for _, s := range a["auth"] {
			x, err := parseID(s)
			if err != nil {
				return "", err
			}
			ids = append(ids, x)
		}
		e.auth[id] = ids
		txn := &Txn{Op: proto.OpCreateSession, Session: id, Time: e.clock, Req: &CreateSessionReq{Timeout: int32(timeout), Passwd: []byte("pw")}}
		r := e.apply(txn)
		return fmt.Sprintf("zxid=%d %s", e.zxid, r.Err), nil

	case "addauth":
		id, err := a.int64("session", 0)
		if err != nil {
			return "", err
		}
		s, err := a.mustStr("id")
		if err != nil {
			return "", err
		}
		x, err := parseID(s)
		if err != nil {
			return "", err
		}
		e.auth[id] = append(e.auth[id], x)
		return "ok", nil

	case "close":
		txn, err := e.txn(a, proto.OpCloseSession, nil)
		if err != nil {
			return "", err
		}
		r := e.apply(txn)
		return fmt.Sprintf("zxid=%d %s", e.zxid, r.Err), nil

	case "create", "delete", "set", "setacl", "check", "delete-container":
		op, req, err := buildOp(d.Cmd, a)
		if err != nil {
			return "", err
		}
		txn, err := e.txn(a, op, req)
		if err != nil {
			return "", err
		}
		r := e.apply(txn)
		out := fmt.Sprintf("zxid=%d %s", e.zxid, opResultString(r.OpResult, false))
		if r.Err == proto.ErrOk {
			switch op {
			case proto.OpSetData:
				out += fmt.Sprintf(" version=%d", r.Stat.Version)
			case proto.OpSetACL:
				out += fmt.Sprintf(" aversion=%d", r.Stat.Aversion)
			}
			if a.has("stat") {
				out += "\nstat: " + statString(r.Stat)
			}
		}
		return out, nil

	case "multi":
		var ops []proto.MultiOp
		for _, line := range strings.Split(d.Input, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			cmd, cargs, err := datadriven.ParseLine(line)
			if err != nil {
				return "", err
			}
			op, req, err := buildOp(cmd, parseArgs(cargs))
			if err != nil {
				return "", err
			}
			ops = append(ops, proto.MultiOp{Type: op, Req: req})
		}
		txn, err := e.txn(a, proto.OpMulti, &proto.MultiRequest{Ops: ops})
		if err != nil {
			return "", err
		}
		r := e.apply(txn)
		var b strings.Builder
		fmt.Fprintf(&b, "zxid=%d %s\n", e.zxid, r.Err)
		for i, sr := range r.Multi {
			fmt.Fprintf(&b, "%d: %s\n", i, opResultString(sr, true))
		}
		return b.String(), nil

	case "reap":
		now, err := a.int64("now", 0)
		if err != nil {
			return "", err
		}
		cands := tr.ReapCandidates(now)
		var b strings.Builder
		fmt.Fprintf(&b, "candidates: %v\n", cands)
		if !a.has("dry") {
			e.clock = now
			for _, p := range cands {
				r := e.apply(&Txn{Op: proto.OpDeleteContainer, Time: now, Req: &DeleteContainerReq{Path: p}})
				fmt.Fprintf(&b, "zxid=%d delete-container %s: %s\n", e.zxid, p, r.Err)
			}
		}
		return b.String(), nil

	case "get":
		p, err := a.mustStr("path")
		if err != nil {
			return "", err
		}
		n := tr.Get(p)
		if n == nil {
			return "no node", nil
		}
		return fmt.Sprintf("data=%q\n%s", n.Data(), statString(n.Stat())), nil

	case "ls":
		p, err := a.mustStr("path")
		if err != nil {
			return "", err
		}
		n := tr.Get(p)
		if n == nil {
			return "no node", nil
		}
		cs := n.Children()
		if len(cs) == 0 {
			return "(no children)", nil
		}
		return strings.Join(cs, " "), nil

	case "getacl":
		p, err := a.mustStr("path")
		if err != nil {
			return "", err
		}
		n := tr.Get(p)
		if n == nil {
			return "no node", nil
		}
		return aclString(n.ACL()), nil

	case "events":
		if len(e.last.Events) == 0 {
			return "(no events)", nil
		}
		var b strings.Builder
		for _, ev := range e.last.Events {
			fmt.Fprintf(&b, "%s %s", ev.Type, ev.Path)
			if a.has("acl") {
				fmt.Fprintf(&b, " acl=%s", aclString(ev.ACL))
			}
			b.WriteByte('\n')
		}
		return b.String(), nil

	case "walk":
		root, err := a.str("path", "/")
		if err != nil {
			return "", err
		}
		var b strings.Builder
		tr.Walk(func(p string, n *Node) {
			if p == root || strings.HasPrefix(p, root+"/") || root == "/" {
				st := n.rawStat()
				fmt.Fprintf(&b, "%s data=%q version=%d cversion=%d numChildren=%d pzxid=%d owner=%s\n",
					p, n.Data(), st.Version, st.Cversion, st.NumChildren, st.Pzxid, ownerString(st.EphemeralOwner))
			}
		})
		return b.String(), nil

	case "ephemerals":
		id, err := a.int64("session", 0)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%v", tr.Ephemerals(id)), nil

	case "sessions":
		var ids []string
		for _, s := range tr.Sessions() {
			ids = append(ids, ownerString(s.ID))
		}
		sort.Strings(ids)
		return fmt.Sprintf("%v", ids), nil

	case "snapshot":
		name, err := a.mustStr("name")
		if err != nil {
			return "", err
		}
		e.snaps[name] = dumpState(tr, false)
		return "ok", nil

	case "compare":
		name, err := a.mustStr("name")
		if err != nil {
			return "", err
		}
		before, ok := e.snaps[name]
		if !ok {
			return "", fmt.Errorf("no snapshot %q", name)
		}
		if diff := lineDiff(before, dumpState(tr, false)); diff != "" {
			return "differs:\n" + diff, nil
		}
		return "identical", nil

	case "invariants":
		if bad := checkInvariants(tr); len(bad) > 0 {
			return strings.Join(bad, "\n"), nil
		}
		return "ok", nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// lineDiff returns the lines only in a ("-") and only in b ("+"), as
// multisets.
func lineDiff(a, b string) string {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	count := func(ls []string) map[string]int {
		m := make(map[string]int, len(ls))
		for _, l := range ls {
			m[l]++
		}
		return m
	}
	var out []string
	cb := count(bs)
	for _, l := range as {
		if cb[l] > 0 {
			cb[l]--
		} else {
			out = append(out, "- "+l)
		}
	}
	ca := count(as)
	for _, l := range bs {
		if ca[l] > 0 {
			ca[l]--
		} else {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
