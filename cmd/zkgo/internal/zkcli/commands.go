package zkcli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk"
)

// command is one shell command. syntax is zkCli's option string (3.8),
// printed after the name in usage messages.
type command struct {
	name      string
	syntax    string
	needsConn bool
	run       func(s *Shell, ctx context.Context, c *command, args []string) error
}

func (c *command) usage() error { return &ExitError{Code: 1, Msg: c.name + " " + c.syntax} }

var commands []*command

func init() {
	commands = []*command{
		{"addWatch", "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE", true, cmdAddWatch},
		{"addauth", "scheme auth", true, cmdAddAuth},
		{"close", "", true, cmdClose},
		{"config", "[-c] [-w] [-s]", true, cmdConfig},
		{"connect", "host:port", false, cmdConnect},
		{"create", "[-s] [-e] [-c] [-t ttl] path [data] [acl]", true, cmdCreate},
		{"delete", "[-v version] path", true, cmdDelete},
		{"deleteall", "path [-b batch size]", true, cmdDeleteAll},
		{"delquota", "[-n|-b|-N|-B] path", true, cmdDelQuota},
		{"get", "[-s] [-w] path", true, cmdGet},
		{"getAcl", "[-s] path", true, cmdGetACL},
		{"getAllChildrenNumber", "path", true, cmdGetAllChildrenNumber},
		{"getEphemerals", "path", true, cmdGetEphemerals},
		{"help", "", false, cmdHelp},
		{"export", "[-f file] path # zkgo: print the subtree at path as JSON (data, ACLs), or write it to file", true, cmdExport},
		{"history", "", false, cmdHistory},
		{"import", "[-n] [-o] file path # zkgo: create the nodes of an export under path (-n: dry run, -o: overwrite nodes that differ)", true, cmdImport},
		{"listquota", "path", true, cmdListQuota},
		{"ls", "[-s] [-w] [-R] path", true, cmdLs},
		{"printwatches", "on|off", false, cmdPrintWatches},
		{"quit", "", false, cmdQuit},
		{"reconfig", "[-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | [-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]", true, cmdReconfig},
		{"redo", "cmdno", false, cmdRedo},
		{"removewatches", "path [-c|-d|-a] [-l]", true, cmdRemoveWatches},
		{"set", "[-s] [-v version] path data", true, cmdSet},
		{"setAcl", "[-s] [-v version] [-R] path acl", true, cmdSetACL},
		{"setquota", "-n|-b|-N|-B val path", true, cmdSetQuota},
		{"stat", "[-w] path", true, cmdStat},
		{"sync", "path", true, cmdSync},
		{"version", "", false, cmdVersion},
		{"watch", "path [-R] # zkgo: print the changes of path (-R: of its subtree) until interrupted", true, cmdWatch},
		{"whoami", "", true, cmdWhoAmI},
	}
}

func lookupCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// sortedCommands returns the commands in zkCli's order (String.compareTo,
// that is bytewise: "addWatch" before "addauth").
func sortedCommands() []*command {
	out := append([]*command(nil), commands...)
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Error helpers.

func fail(format string, a ...any) error { return &ExitError{Code: 1, Msg: fmt.Sprintf(format, a...)} }

// silent is a failure whose message was already printed.
func silent() error { return &ExitError{Code: 1} }

func zkFail(err error, path string) error { return &ExitError{Code: 1, Msg: cliMessage(err, path)} }

func parseFail(err error) error { return &ExitError{Code: 1, Msg: err.Error()} }

func checkPath(p string, sequential bool) error {
	if err := validatePath(p, sequential); err != nil {
		return &ExitError{Code: 1, Msg: err.Error()}
	}
	return nil
}

// versionOpt reads a -v option (Integer.parseInt; zkCli dies with a stack
// trace on a bad number).
func versionOpt(cl *cmdLine) (int32, error) {
	if !cl.has("v") {
		return zk.AnyVersion, nil
	}
	v, ok := parseJavaInt(cl.val("v"))
	if !ok {
		return 0, fail("-v argument must be an int value")
	}
	return v, nil
}

// parseACL parses "scheme:id:perms[,...]" as zkCli's AclParser, printing
// the same complaints about malformed entries (which are skipped).
func (s *Shell) parseACL(text string) []zk.ACL {
	out := []zk.ACL{}
	parts := strings.Split(text, ",")
	for len(parts) > 0 && parts[len(parts)-1] == "" && len(parts) > 1 { // Java's split drops trailing empties
		parts = parts[:len(parts)-1]
	}
	for _, a := range parts {
		first, last := strings.IndexByte(a, ':'), strings.LastIndexByte(a, ':')
		if first < 0 || first == last {
			s.errf("%s does not have the form scheme:id:perm\n", a)
			continue
		}
		var perms zk.Perm
		for _, r := range a[last+1:] {
			switch r {
			case 'r':
				perms |= zk.PermRead
			case 'w':
				perms |= zk.PermWrite
			case 'c':
				perms |= zk.PermCreate
			case 'd':
				perms |= zk.PermDelete
			case 'a':
				perms |= zk.PermAdmin
			default:
				s.errf("Unknown perm type: %c\n", r)
			}
		}
		out = append(out, zk.ACL{Perms: perms, ID: zk.Id{Scheme: a[:first], ID: a[first+1 : last]}})
	}
	return out
}

// emptyACL reports an ACL list that the Java client refuses before
// sending (ZooKeeper.validateACL). zkCli prints the path as "null"; the
// path is given here.
func (s *Shell) emptyACL(path string, create bool) error {
	if create { // CreateCommand prints the exception's message first
		s.errf("%s\n", keeperMessage(proto.ErrInvalidACL, path))
	}
	return zkFail(&zk.Error{Code: proto.ErrInvalidACL, Err: zk.ErrInvalidACL}, path)
}

// deprecated prints zkCli's warning for the old "cmd path watch" forms.
func (s *Shell) deprecated(old, now string) {
	s.errf("'%s' has been deprecated. Please use '%s' instead.\n", old, now)
}

func cmdLs(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"s", false, "stat"}, {"w", false, "watch"}, {"R", false, "recurse"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() > 2 {
		s.deprecated("ls path [watch]", "ls [-w] path")
		cl.set["w"] = true
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	path, watch := cl.arg(1), cl.has("w")
	if err := checkPath(path, false); err != nil {
		return err
	}
	conn := s.live()
	if cl.has("R") {
		return s.visitDFS(ctx, conn, path, watch, func(p string) error {
			s.outf("%s\n", p)
			return nil
		})
	}
	var (
		children []string
		st       *zk.Stat
		ch       <-chan zk.Event
	)
	if watch {
		children, st, ch, err = conn.ChildrenW(ctx, path)
	} else {
		children, st, err = conn.Children(ctx, path)
	}
	if err != nil {
		return zkFail(err, path)
	}
	s.addOneShot(kindChild, path, ch)
	sort.Strings(children)
	text := javaList(children) + "\n"
	if cl.has("s") {
		text += formatStat(st, s.loc)
	}
	s.outf("%s", text)
	return nil
}

// visitDFS is ZKUtil.visitSubTreeDFS: it reads the root (setting a data
// watch if asked), visits it, then lists each node's children (sorted,
// setting child watches if asked), visits them all and descends into
// each. Nodes deleted meanwhile are skipped.
func (s *Shell) visitDFS(ctx context.Context, conn *zk.Conn, root string, watch bool, visit func(string) error) error {
	if watch {
		_, _, ch, err := conn.GetW(ctx, root)
		if err != nil {
			return zkFail(err, root)
		}
		s.addOneShot(kindData, root, ch)
	} else if _, _, err := conn.Get(ctx, root); err != nil {
		return zkFail(err, root)
	}
	if err := visit(root); err != nil {
		return err
	}
	var walk func(p string) error
	walk = func(p string) error {
		var (
			children []string
			ch       <-chan zk.Event
			err      error
		)
		if watch {
			children, _, ch, err = conn.ChildrenW(ctx, p)
		} else {
			children, _, err = conn.Children(ctx, p)
		}
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return zkFail(err, p)
		}
		s.addOneShot(kindChild, p, ch)
		sort.Strings(children)
		for _, name := range children {
			if err := visit(joinPath(p, name)); err != nil {
				return err
			}
		}
		for _, name := range children {
			if err := walk(joinPath(p, name)); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root)
}

func joinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

func cmdGet(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"s", false, "stats"}, {"w", false, "watch"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	if cl.nargs() > 2 {
		s.deprecated("get path [watch]", "get [-s] [-w] path")
		cl.set["w"] = true
	}
	path := cl.arg(1)
	if err := checkPath(path, false); err != nil {
		return err
	}
	conn := s.live()
	var (
		data []byte
		st   *zk.Stat
		ch   <-chan zk.Event
	)
	if cl.has("w") {
		data, st, ch, err = conn.GetW(ctx, path)
	} else {
		data, st, err = conn.Get(ctx, path)
	}
	if err != nil {
		return zkFail(err, path)
	}
	s.addOneShot(kindData, path, ch)
	// The data is printed as stored (zkCli decodes it as UTF-8, turning
	// invalid bytes into U+FFFD); a node created without data prints "null".
	text := "null"
	if data != nil {
		text = string(data)
	}
	text += "\n"
	if cl.has("s") {
		text += formatStat(st, s.loc)
	}
	s.outf("%s", text)
	return nil
}

func cmdSet(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"s", false, "stats"}, {"v", true, "version"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 3 {
		return c.usage()
	}
	path := cl.arg(1)
	version, err := versionOpt(cl)
	if err != nil {
		return err
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	st, err := s.live().Set(ctx, path, []byte(cl.arg(2)), version)
	if err != nil {
		return zkFail(err, path)
	}
	if cl.has("s") {
		s.outf("%s", formatStat(st, s.loc))
	}
	return nil
}

func cmdStat(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"w", false, "watch"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	if cl.nargs() > 2 {
		s.deprecated("stat path [watch]", "stat [-w] path")
		cl.set["w"] = true
	}
	path := cl.arg(1)
	if err := checkPath(path, false); err != nil {
		return err
	}
	conn := s.live()
	var (
		st *zk.Stat
		ch <-chan zk.Event
	)
	if cl.has("w") {
		st, ch, err = conn.ExistsW(ctx, path)
	} else {
		st, err = conn.Exists(ctx, path)
	}
	if err != nil {
		return zkFail(err, path)
	}
	s.addOneShot(kindData, path, ch)
	if st == nil {
		return zkFail(zk.ErrNoNode, path)
	}
	s.outf("%s", formatStat(st, s.loc))
	return nil
}

// maxTTL is EphemeralType.TTL's largest value.
const maxTTL = 1<<40 - 1

func cmdCreate(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"e", false, "ephemeral"}, {"s", false, "sequential"}, {"c", false, "container"}, {"t", true, "ttl"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	hasE, hasS, hasC, hasT := cl.has("e"), cl.has("s"), cl.has("c"), cl.has("t")
	if hasC && (hasE || hasS) {
		return fail("-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.")
	}
	var ttl int64
	if hasT {
		var ok bool
		if ttl, ok = parseJavaLong(cl.val("t")); !ok {
			return fail("-t argument must be a long value")
		}
	}
	if hasT && hasE {
		return fail("TTLs cannot be used with Ephemeral znodes")
	}
	if hasT && hasC {
		return fail("TTLs cannot be used with Container znodes")
	}
	var mode zk.CreateMode
	switch {
	case hasE && hasS:
		mode = zk.ModeEphemeralSequential
	case hasE:
		mode = zk.ModeEphemeral
	case hasS && hasT:
		mode = zk.ModePersistentSequentialWithTTL
	case hasS:
		mode = zk.ModePersistentSequential
	case hasC:
		mode = zk.ModeContainer
	case hasT:
		mode = zk.ModePersistentWithTTL
	default:
		mode = zk.ModePersistent
	}
	if hasT && (ttl <= 0 || ttl > maxTTL) {
		return fail("ttl must be positive and cannot be larger than: %d", int64(maxTTL))
	}
	path := cl.arg(1)
	var data []byte
	if cl.nargs() > 2 {
		data = []byte(cl.arg(2))
	}
	acls := zk.OpenACLUnsafe
	if cl.nargs() > 3 {
		acls = s.parseACL(cl.arg(3))
	}
	if err := checkPath(path, mode.IsSequential()); err != nil {
		return err
	}
	if len(acls) == 0 {
		return s.emptyACL(path, true)
	}
	var opts []zk.CreateOption
	if hasT {
		opts = append(opts, zk.WithTTL(ttl))
	}
	created, err := s.live().Create(ctx, path, data, acls, mode, opts...)
	if err != nil {
		switch code, _ := errorCode(err); code {
		case proto.ErrEphemeralOnLocalSession:
			s.errf("Unable to create ephemeral node on a local session\n")
		case proto.ErrInvalidACL:
			s.errf("%s\n", keeperMessage(code, path))
		}
		return zkFail(err, path)
	}
	s.errf("Created %s\n", created)
	return nil
}

func cmdDelete(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"v", true, "version"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	if cl.nargs() > 2 {
		// zkCli warns and, like here, ignores the old positional version.
		s.deprecated("delete path [version]", "delete [-v version] path")
	}
	path := cl.arg(1)
	version, err := versionOpt(cl)
	if err != nil {
		return err
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	if err := s.live().Delete(ctx, path, version); err != nil {
		return zkFail(err, path)
	}
	return nil
}

func cmdDeleteAll(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"b", true, "batch size"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	batch := int32(1000)
	if cl.has("b") {
		var ok bool
		if batch, ok = parseJavaInt(cl.val("b")); !ok {
			return fail("-b argument must be an int value")
		}
	}
	path := cl.arg(1)
	if err := checkPath(path, false); err != nil {
		return err
	}
	conn := s.live()
	// ZKUtil.listSubTreeBFS, then deletions from the last node back.
	tree := []string{path}
	for i := 0; i < len(tree); i++ {
		children, _, err := conn.Children(ctx, tree[i])
		if err != nil {
			return zkFail(err, tree[i])
		}
		for _, ch := range children {
			tree = append(tree, joinPath(tree[i], ch))
		}
	}
	if batch <= 0 {
		for i := len(tree) - 1; i >= 0; i-- {
			if err := conn.Delete(ctx, tree[i], zk.AnyVersion); err != nil {
				return zkFail(err, tree[i])
			}
		}
		return nil
	}
	var ops []zk.Op
	for i := len(tree) - 1; i >= 0; i-- {
		ops = append(ops, zk.DeleteOp(tree[i], zk.AnyVersion))
		if len(ops) == int(batch) || i == 0 {
			if _, err := conn.Multi(ctx, ops...); err != nil {
				return fail("Failed to delete some node(s) in the subtree!")
			}
			ops = ops[:0]
		}
	}
	return nil
}

func cmdSync(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, nil, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	path := cl.arg(1)
	if err := checkPath(path, false); err != nil {
		return err
	}
	if _, err := s.live().Sync(ctx, path); err != nil {
		if code, ok := errorCode(err); ok {
			s.outf("Sync has failed. rc=%d\n", int32(code))
			return silent()
		}
		return zkFail(err, path)
	}
	s.outf("Sync is OK\n")
	return nil
}

func cmdGetEphemerals(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, nil, nil)
	if err != nil {
		return parseFail(err)
	}
	path := "/"
	if cl.nargs() >= 2 {
		path = cl.arg(1)
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	eph, err := s.live().GetEphemerals(ctx, path)
	if err != nil {
		return zkFail(err, path)
	}
	// Sorted here; zkCli prints the server's order.
	sort.Strings(eph)
	s.outf("%s\n", javaList(eph))
	return nil
}

func cmdGetAllChildrenNumber(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, nil, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	path := cl.arg(1)
	if err := checkPath(path, false); err != nil {
		return err
	}
	n, err := s.live().GetAllChildrenNumber(ctx, path)
	if err != nil {
		return zkFail(err, path)
	}
	s.outf("%d\n", n)
	return nil
}
