package zkcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
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
		{"history", "", false, cmdHistory},
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

func cmdGetACL(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"s", false, "stats"}}, nil)
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
	acls, st, err := s.live().GetACL(ctx, path)
	if err != nil {
		return zkFail(err, path)
	}
	var b strings.Builder
	for _, a := range acls {
		b.WriteString(formatACL(a))
	}
	if cl.has("s") {
		b.WriteString(formatStat(st, s.loc))
	}
	s.outf("%s", b.String())
	return nil
}

func cmdSetACL(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"s", false, "stats"}, {"v", true, "version"}, {"R", false, "recursive"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 3 {
		return c.usage()
	}
	path := cl.arg(1)
	acls := s.parseACL(cl.arg(2))
	version, err := versionOpt(cl)
	if err != nil {
		return err
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	if len(acls) == 0 {
		return s.emptyACL(path, false)
	}
	conn := s.live()
	if cl.has("R") {
		// As zkCli: each node's failure is printed and the walk goes on
		// (zkCli prints the messages without a newline).
		failed := false
		err := s.visitDFS(ctx, conn, path, false, func(p string) error {
			if _, err := conn.SetACL(ctx, p, acls, version); err != nil {
				if code, ok := errorCode(err); ok {
					s.outf("%s\n", keeperMessage(code, p))
				} else {
					s.outf("%s\n", cliMessage(err, p))
				}
				failed = true
			}
			return nil
		})
		if err != nil {
			return err
		}
		if failed {
			return silent()
		}
		return nil
	}
	st, err := conn.SetACL(ctx, path, acls, version)
	if err != nil {
		return zkFail(err, path)
	}
	if cl.has("s") {
		s.outf("%s", formatStat(st, s.loc))
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

func cmdAddAuth(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, nil, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	var auth []byte
	if cl.nargs() >= 3 {
		auth = []byte(cl.arg(2))
	}
	// zkCli sends the credentials without waiting; a refusal shows up as
	// an AuthFailed event. Here the reply is awaited and a refusal is an
	// error.
	if err := s.live().AddAuth(ctx, cl.arg(1), auth); err != nil {
		return zkFail(err, "")
	}
	return nil
}

func cmdWhoAmI(s *Shell, ctx context.Context, c *command, args []string) error {
	infos, err := s.live().WhoAmI(ctx)
	if err != nil {
		return zkFail(err, "")
	}
	var b strings.Builder
	b.WriteString("Auth scheme: User\n")
	for _, ci := range infos {
		b.WriteString(ci.AuthScheme + ": " + ci.User + "\n")
	}
	s.outf("%s", b.String())
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

func cmdConfig(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"s", false, "stats"}, {"w", false, "watch"}, {"c", false, "client connection string"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	conn := s.live()
	var (
		data []byte
		st   *zk.Stat
	)
	if cl.has("w") {
		var ch <-chan zk.Event
		data, st, ch, err = conn.GetConfigW(ctx)
		s.addOneShot(kindData, zk.ConfigNode, ch)
	} else {
		data, st, err = conn.GetConfig(ctx)
	}
	if err != nil {
		return zkFail(err, zk.ConfigNode)
	}
	text := "null"
	if data != nil {
		text = string(data)
	}
	if cl.has("c") {
		text = clientConfigString(text)
	}
	text += "\n"
	if cl.has("s") {
		text += formatStat(st, s.loc)
	}
	s.outf("%s", text)
	return nil
}

// clientConfigString is ConfigUtils.getClientConfigStr: the config
// version and the client addresses of the servers, "version host:port,...".
// The server lines are taken in file order (Java iterates a Properties
// hash table).
func clientConfigString(cfg string) string {
	version := ""
	var addrs []string
	for _, line := range strings.Split(cfg, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "version" {
			version = v
		}
		if !strings.HasPrefix(k, "server.") {
			continue
		}
		// host:quorumPort:electionPort[:role][;[clientHost:]clientPort]
		_, client, ok := strings.Cut(v, ";")
		if !ok {
			addrs = append(addrs, "")
			continue
		}
		client = strings.TrimSpace(client)
		host, port := "0.0.0.0", client
		if i := strings.LastIndexByte(client, ':'); i >= 0 {
			host, port = client[:i], client[i+1:]
		}
		addrs = append(addrs, host+":"+port)
	}
	return version + " " + strings.Join(addrs, ",")
}

func cmdVersion(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, nil, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() > 1 {
		return c.usage()
	}
	v := s.cfg.Version
	if v == "" {
		v = "dev"
	}
	s.outf("ZooKeeper CLI version: zkgo %s\n", v)
	return nil
}

func cmdRemoveWatches(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"c", false, "child watcher type"}, {"d", false, "data watcher type"}, {"a", false, "any watcher type"}, {"l", false, "remove locally when there is no server connection"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	path := cl.arg(1)
	typ := zk.WatcherAny
	switch {
	case cl.has("c"):
		typ = zk.WatcherChildren
	case cl.has("d"):
		typ = zk.WatcherData
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	// -l is accepted; the Go client always asks the server (it waits for a
	// reconnection rather than removing the watches locally).
	if err := s.live().RemoveWatches(ctx, path, typ); err != nil {
		return zkFail(err, path)
	}
	return nil
}

func cmdAddWatch(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"m", true, ""}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() != 2 {
		return c.usage()
	}
	mode := zk.AddWatchPersistentRecursive
	if cl.has("m") {
		switch strings.ToUpper(cl.val("m")) {
		case "PERSISTENT":
			mode = zk.AddWatchPersistent
		case "PERSISTENT_RECURSIVE":
		default:
			return c.usage()
		}
	}
	path := cl.arg(1)
	if err := checkPath(path, false); err != nil {
		return err
	}
	w, err := s.live().AddWatch(ctx, path, mode)
	if err != nil {
		return zkFail(err, path)
	}
	s.addPersistent(w, path, mode == zk.AddWatchPersistentRecursive)
	return nil
}

func cmdReconfig(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{
		{"s", false, "stats"},
		{"v", true, "required current config version"},
		{"file", true, "path of config file to parse for membership"},
		{"members", true, "comma-separated list of config strings for non-incremental reconfig"},
		{"add", true, "comma-separated list of config strings for new servers"},
		{"remove", true, "comma-separated list of server IDs to remove"},
	}, nil)
	if err != nil {
		return parseFail(err)
	}
	nonIncr := cl.has("file") || cl.has("members")
	incr := cl.has("add") || cl.has("remove")
	if !nonIncr && !incr {
		return c.usage()
	}
	version := int64(-1)
	if cl.has("v") {
		// The configuration version is hexadecimal, as in /zookeeper/config.
		if version, err = strconv.ParseInt(cl.val("v"), 16, 64); err != nil {
			return fail("-v must be followed by a long (configuration version)")
		}
	}
	if nonIncr && incr {
		return fail("Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)")
	}
	if cl.has("file") && cl.has("members") {
		return fail("Can't use -file and -members together (conflicting non-incremental modes)")
	}
	list := func(v string) []string {
		var out []string
		for _, x := range strings.Split(strings.ToLower(v), ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
		return out
	}
	conn := s.live()
	var (
		data []byte
		st   *zk.Stat
	)
	switch {
	case cl.has("file"):
		// The membership lines of a dynamic configuration file; zkCli
		// validates them with the server's parser first, the server
		// does here.
		text, err := os.ReadFile(cl.val("file"))
		if err != nil {
			return fail("Error processing %s: %v", cl.val("file"), err)
		}
		var members []string
		for _, line := range strings.Split(string(text), "\n") {
			line = strings.TrimSpace(line)
			k, _, ok := strings.Cut(line, "=")
			k = strings.TrimSpace(k)
			if ok && (strings.HasPrefix(k, "server.") || strings.HasPrefix(k, "group.") || strings.HasPrefix(k, "weight.")) {
				members = append(members, strings.ToLower(line))
			}
		}
		if len(members) == 0 {
			return fail("Error processing %s: no server lines", cl.val("file"))
		}
		data, st, err = conn.Reconfig(ctx, members, version)
	case cl.has("members"):
		data, st, err = conn.Reconfig(ctx, list(cl.val("members")), version)
	default:
		data, st, err = conn.IncrementalReconfig(ctx, list(cl.val("add")), list(cl.val("remove")), version)
	}
	if err != nil {
		return zkFail(err, zk.ConfigNode)
	}
	text := "Committed new configuration:\n" + string(data) + "\n"
	if cl.has("s") {
		text += formatStat(st, s.loc)
	}
	s.outf("%s", text)
	return nil
}

func cmdClose(s *Shell, ctx context.Context, c *command, args []string) error {
	s.closeConn(true)
	return nil
}

func cmdQuit(s *Shell, ctx context.Context, c *command, args []string) error {
	s.closeConn(true)
	return ErrQuit
}

func cmdConnect(s *Shell, ctx context.Context, c *command, args []string) error {
	s.mu.Lock()
	host := s.host
	s.mu.Unlock()
	if len(args) >= 2 {
		host = args[1]
	}
	if host == "" {
		return c.usage()
	}
	if err := s.Connect(ctx, host); err != nil {
		return fail("%v", err)
	}
	return nil
}

func cmdHistory(s *Shell, ctx context.Context, c *command, args []string) error {
	var b strings.Builder
	for i := s.count - 10; i <= s.count; i++ {
		line, ok := s.history[i]
		if i < 0 || !ok {
			continue
		}
		fmt.Fprintf(&b, "%d - %s\n", i, line)
	}
	s.outf("%s", b.String())
	return nil
}

func cmdRedo(s *Shell, ctx context.Context, c *command, args []string) error {
	if len(args) < 2 {
		return c.usage()
	}
	// Integer.decode: decimal, 0x/# hex, leading-0 octal.
	t := args[1]
	if strings.HasPrefix(t, "#") {
		t = "0x" + t[1:]
	}
	n, err := strconv.ParseInt(t, 0, 32)
	if err != nil {
		return fail("redo: the command number must be an integer: %s", args[1])
	}
	i := int(n)
	if s.count <= i || i < 0 {
		return fail("Command index out of range")
	}
	line := s.history[i]
	words := splitLine(line)
	if len(words) == 0 {
		return fail("Command index out of range")
	}
	if words[0] == "redo" {
		return fail("No redoing redos")
	}
	s.history[s.count] = line
	err = s.run(ctx, words)
	var e *ExitError
	if errors.As(err, &e) { // already printed by run
		return &ExitError{Code: e.Code}
	}
	return err
}

func cmdPrintWatches(s *Shell, ctx context.Context, c *command, args []string) error {
	if len(args) == 1 {
		state := "off"
		if s.printWatches.Load() {
			state = "on"
		}
		s.outf("printwatches is %s\n", state)
		return nil
	}
	s.printWatches.Store(args[1] == "on")
	return nil
}

func cmdHelp(s *Shell, ctx context.Context, c *command, args []string) error {
	s.outf("%s", usageText())
	return nil
}
