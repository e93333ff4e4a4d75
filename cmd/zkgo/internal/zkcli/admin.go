// zkCli commands about ACLs, authentication, the ensemble's configuration
// and the version.

package zkcli

import (
	"context"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/internal/boundedfile"
	"github.com/zkgo/zkgo/zk"
)

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
		text, rerr := boundedfile.ReadFile(cl.val("file"), "dynamic configuration file", boundedfile.Config)
		if rerr != nil {
			return fail("Error processing %s: %v", cl.val("file"), rerr)
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
