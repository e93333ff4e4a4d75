package zkcli

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// syncBuffer is a bytes.Buffer safe for the shell's event goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}

type harness struct {
	t        *testing.T
	srv      *zktest.Server
	s        *Shell
	out, err *syncBuffer
}

func newShellFor(t *testing.T, cfg Config) (*Shell, *syncBuffer, *syncBuffer) {
	out, errb := &syncBuffer{}, &syncBuffer{}
	cfg.Stdout, cfg.Stderr = out, errb
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Version == "" {
		cfg.Version = "test"
	}
	cfg.Location = time.UTC
	s := NewShell(cfg)
	t.Cleanup(func() { s.Close() })
	return s, out, errb
}

// newHarness starts a fresh server and a shell connected to it.
func newHarness(t *testing.T, opts ...zktest.Option) *harness {
	t.Helper()
	h := &harness{t: t, srv: zktest.Start(t, opts...)}
	h.s, h.out, h.err = newShellFor(t, Config{})
	if err := h.s.Connect(context.Background(), h.srv.Addr()); err != nil {
		t.Fatal(err)
	}
	return h
}

// exec runs one line and returns what it printed and its exit status.
func (h *harness) exec(line string) (stdout, stderr string, code int) {
	h.t.Helper()
	h.out.Reset()
	h.err.Reset()
	err := h.s.Exec(context.Background(), line)
	return h.out.String(), h.err.String(), ExitCode(err)
}

// step is one line of a table test. In want texts, "{stat:/p}" stands
// for the current Stat of /p printed as zkCli does, "{event:T /p}" for a
// watch event of type T on /p.
type step struct {
	line              string
	wantOut, wantErr  string
	wantCode          int
	outRegexp, errSub string // alternatives to exact matching
}

var placeholderRE = regexp.MustCompile(`\{(stat|event):([^}]*)\}`)

func (h *harness) expand(s string) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		g := placeholderRE.FindStringSubmatch(m)
		switch g[1] {
		case "stat":
			st, err := h.s.Conn().Exists(context.Background(), g[2])
			if err != nil || st == nil {
				h.t.Fatalf("stat %s: %v", g[2], err)
			}
			return formatStat(st, time.UTC)
		default:
			typ, path, _ := strings.Cut(g[2], " ")
			return watchedEvent("SyncConnected", typ, path)
		}
	})
}

func (h *harness) run(steps []step) {
	h.t.Helper()
	for _, st := range steps {
		out, errs, code := h.exec(st.line)
		if code != st.wantCode {
			h.t.Errorf("%q: exit %d, want %d (stdout %q, stderr %q)", st.line, code, st.wantCode, out, errs)
		}
		if st.outRegexp != "" {
			if !regexp.MustCompile(st.outRegexp).MatchString(out) {
				h.t.Errorf("%q: stdout %q does not match %q", st.line, out, st.outRegexp)
			}
		} else if want := h.expand(st.wantOut); out != want {
			h.t.Errorf("%q: stdout\n%q\nwant\n%q", st.line, out, want)
		}
		if st.errSub != "" {
			if !strings.Contains(errs, st.errSub) {
				h.t.Errorf("%q: stderr %q does not contain %q", st.line, errs, st.errSub)
			}
		} else if errs != st.wantErr {
			h.t.Errorf("%q: stderr\n%q\nwant\n%q", st.line, errs, st.wantErr)
		}
	}
}

func TestNodeCommands(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{line: "create /a hello", wantErr: "Created /a\n"},
		{line: "create /a x", wantErr: "Node already exists: /a\n", wantCode: 1},
		{line: "create /a/b", wantErr: "Created /a/b\n"},
		{line: "create -e /a/e", wantErr: "Created /a/e\n"},
		{line: "create -s /a/s", wantErr: "Created /a/s0000000002\n"},
		{line: "create -s -e /a/es-", wantErr: "Created /a/es-0000000003\n"},
		{line: "create /nope/x", wantErr: "Node does not exist: /nope/x\n", wantCode: 1},
		{line: "create /a/e/x", wantErr: "Ephemerals cannot have children: /a/e/x\n", wantCode: 1},
		{line: "create", wantErr: "create [-s] [-e] [-c] [-t ttl] path [data] [acl]\n", wantCode: 1},
		{line: "create x", wantErr: "Path must start with / character\n", wantCode: 1},
		{line: "create -c -e /cc", wantErr: "-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.\n", wantCode: 1},
		{line: "create -t abc /ttl", wantErr: "-t argument must be a long value\n", wantCode: 1},
		{line: "create -e -t 5 /ttl", wantErr: "TTLs cannot be used with Ephemeral znodes\n", wantCode: 1},
		{line: "create -c -t 5 /ttl", wantErr: "TTLs cannot be used with Container znodes\n", wantCode: 1},
		{line: "create -t 0 /ttl", wantErr: "ttl must be positive and cannot be larger than: 1099511627775\n", wantCode: 1},
		{line: "create -t 100 /ttl", wantErr: "KeeperErrorCode = Unimplemented for /ttl\n", wantCode: 1},
		{line: "ls /", wantOut: "[a, zookeeper]\n"},
		{line: "ls /a", wantOut: "[b, e, es-0000000003, s0000000002]\n"},
		{line: "ls -s /a", wantOut: "[b, e, es-0000000003, s0000000002]\n{stat:/a}"},
		{line: "ls -R /a", wantOut: "/a\n/a/b\n/a/e\n/a/es-0000000003\n/a/s0000000002\n"},
		{line: "ls -R /nope", wantErr: "Node does not exist: /nope\n", wantCode: 1},
		{line: "ls", wantErr: "ls [-s] [-w] [-R] path\n", wantCode: 1},
		{line: "ls -x /", wantErr: "Unrecognized option: -x\n", wantCode: 1},
		{line: "ls /nope", wantErr: "Node does not exist: /nope\n", wantCode: 1},
		{line: "ls nope", wantErr: "Path must start with / character\n", wantCode: 1},
		{line: "ls /a/", wantErr: "Path must not end with / character\n", wantCode: 1},
		{line: "ls /a//b", wantErr: "Invalid path string \"/a//b\" caused by empty node name specified @3\n", wantCode: 1},
		{line: "ls / extra", wantOut: "[a, zookeeper]\n", wantErr: "'ls path [watch]' has been deprecated. Please use 'ls [-w] path' instead.\n"},
		{line: "get /a", wantOut: "hello\n"},
		{line: "get -s /a", wantOut: "hello\n{stat:/a}"},
		{line: "get /a/b", wantOut: "null\n"},
		// The old "ls path watch" form set a child watch on /.
		{line: `create /q "hello world"`, wantErr: "Created /q\n", wantOut: "{event:NodeChildrenChanged /}"},
		{line: "get /q", wantOut: "hello world\n"},
		{line: `create /empty ""`, wantErr: "Created /empty\n"},
		{line: "get /empty", wantOut: "\n"},
		{line: "get", wantErr: "get [-s] [-w] path\n", wantCode: 1},
		{line: "get /nope", wantErr: "Node does not exist: /nope\n", wantCode: 1},
		{line: "set /a world", wantOut: ""},
		{line: "get /a", wantOut: "world\n"},
		{line: "set -s /a again", wantOut: "{stat:/a}"},
		{line: "set /a -v 2 versioned", wantOut: ""},
		{line: "set -v 99 /a x", wantErr: "version No is not valid : /a\n", wantCode: 1},
		{line: "set -v x /a y", wantErr: "-v argument must be an int value\n", wantCode: 1},
		{line: "set /a", wantErr: "set [-s] [-v version] path data\n", wantCode: 1},
		{line: "set /nope x", wantErr: "Node does not exist: /nope\n", wantCode: 1},
		{line: "stat /a", wantOut: "{stat:/a}"},
		{line: "stat /nope", wantErr: "Node does not exist: /nope\n", wantCode: 1},
		{line: "stat", wantErr: "stat [-w] path\n", wantCode: 1},
		{line: "delete /a", wantErr: "Node not empty: /a\n", wantCode: 1},
		{line: "delete -v 5 /a/b", wantErr: "version No is not valid : /a/b\n", wantCode: 1},
		{line: "delete -v x /a/b", wantErr: "-v argument must be an int value\n", wantCode: 1},
		{line: "delete /a/b 7", wantErr: "'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.\n"},
		{line: "delete /a/b", wantErr: "Node does not exist: /a/b\n", wantCode: 1},
		{line: "delete /", wantErr: "Arguments are not valid : /\n", wantCode: 1},
		{line: "delete", wantErr: "delete [-v version] path\n", wantCode: 1},
		{line: "getEphemerals", wantOut: "[/a/e, /a/es-0000000003]\n"},
		{line: "getEphemerals /a/es", wantOut: "[/a/es-0000000003]\n"},
		{line: "getEphemerals /q", wantOut: "[]\n"},
		{line: "getAllChildrenNumber /a", wantOut: "3\n"},
		{line: "getAllChildrenNumber", wantErr: "getAllChildrenNumber path\n", wantCode: 1},
		{line: "getAllChildrenNumber /nope", wantErr: "Node does not exist: /nope\n", wantCode: 1},
		{line: "deleteall -b x /a", wantErr: "-b argument must be an int value\n", wantCode: 1},
		{line: "deleteall /nope", wantErr: "Node does not exist: /nope\n", wantCode: 1},
		{line: "deleteall", wantErr: "deleteall path [-b batch size]\n", wantCode: 1},
		{line: "deleteall /a -b 2"},
		{line: "create /d", wantErr: "Created /d\n"},
		{line: "create /d/1", wantErr: "Created /d/1\n"},
		{line: "deleteall -b 0 /d"},
		{line: "ls /", wantOut: "[empty, q, zookeeper]\n"},
		{line: "sync /q", wantOut: "Sync is OK\n"},
		{line: "sync", wantErr: "sync path\n", wantCode: 1},
		{line: "sync q", wantErr: "Path must start with / character\n", wantCode: 1},
		{line: "version", wantOut: "ZooKeeper CLI version: zkgo test\n"},
		{line: "version x", wantErr: "version \n", wantCode: 1},
		{line: "whoami", wantOut: "Auth scheme: User\nip: 127.0.0.1\n"},
		{line: "config", outRegexp: `^.*\n$`},
		{line: "config -w -s", outRegexp: `^.*\ncZxid = 0x0\n(.*\n){10}$`},
		{line: "config -x", wantErr: "Unrecognized option: -x\n", wantCode: 1},
		{line: "reconfig", wantErr: "reconfig " + lookupCommand("reconfig").syntax + "\n", wantCode: 1},
		{line: "reconfig -add 4=h:1:2;3 -members x", wantErr: "Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)\n", wantCode: 1},
		{line: "reconfig -v xyz -remove 3", wantErr: "-v must be followed by a long (configuration version)\n", wantCode: 1},
		{line: "reconfig -file a -members b", wantErr: "Can't use -file and -members together (conflicting non-incremental modes)\n", wantCode: 1},
		{line: "reconfig -file /nonexistent/zoo.cfg.dynamic", errSub: "Error processing /nonexistent/zoo.cfg.dynamic: ", wantCode: 1},
		// A standalone server refuses reconfiguration.
		{line: "reconfig -remove 3", wantErr: "KeeperErrorCode = Reconfig is disabled for /zookeeper/config\n", wantCode: 1},
		{line: "reconfig -v 100000000 -members server.1=127.0.0.1:2888:3888;2181", wantErr: "KeeperErrorCode = Reconfig is disabled for /zookeeper/config\n", wantCode: 1},
		{line: "   ", wantOut: ""},
		{line: "foo bar", errSub: "\tls [-s] [-w] [-R] path\n\tprintwatches on|off\n\tquit \n\treconfig [-s]", wantCode: 127},
	})
	// "delete /a/b 7" above deleted /a/b: the old positional version is
	// ignored, as zkCli does.
	// The help text lists the commands on stdout.
	out, _, code := h.exec("help")
	if code != 0 || out != usageText() {
		t.Errorf("help: %d %q", code, out)
	}
}

func TestDeleteAllFailure(t *testing.T) {
	h := newHarness(t)
	// A child that may not be deleted (no DELETE on its parent) makes the
	// batch fail.
	h.run([]step{
		{line: "create /p", wantErr: "Created /p\n"},
		{line: "create /p/c", wantErr: "Created /p/c\n"},
		{line: "setAcl /p world:anyone:rwa"},
		{line: "deleteall /p", wantErr: "Failed to delete some node(s) in the subtree!\n", wantCode: 1},
		{line: "deleteall -b 0 /p", wantErr: "Insufficient permission : /p/c\n", wantCode: 1},
		{line: "ls /p", wantOut: "[c]\n"},
	})
}

func TestTTLNodes(t *testing.T) {
	h := newHarness(t, zktest.WithExtendedTypes())
	h.run([]step{
		{line: "create -t 60000 /ttl x", wantErr: "Created /ttl\n"},
		{line: "create -s -t 60000 /ttl/s-", wantErr: "Created /ttl/s-0000000000\n"},
		{line: "get /ttl", wantOut: "x\n"},
	})
}

func TestACLCommands(t *testing.T) {
	h := newHarness(t)
	bob := zk.DigestID("bob", "pw")
	h.run([]step{
		{line: "create /q x", wantErr: "Created /q\n"},
		{line: "getAcl /q", wantOut: "'world,'anyone\n: cdrwa\n"},
		{line: "getAcl -s /q", wantOut: "'world,'anyone\n: cdrwa\n{stat:/q}"},
		{line: "getAcl", wantErr: "getAcl [-s] path\n", wantCode: 1},
		{line: "getAcl /nope", wantErr: "Node does not exist: /nope\n", wantCode: 1},
		{line: "setAcl /q world:anyone:r"},
		{line: "getAcl /q", wantOut: "'world,'anyone\n: r\n"},
		{line: "set /q y", wantErr: "Insufficient permission : /q\n", wantCode: 1},
		{line: "setAcl /q foo", wantErr: "foo does not have the form scheme:id:perm\nAcl is not valid : /q\n", wantCode: 1},
		{line: "setAcl /q world:anyone:rq", wantErr: "Unknown perm type: q\nInsufficient permission : /q\n", wantCode: 1},
		{line: "setAcl -v 9 /q world:anyone:r", wantErr: "Insufficient permission : /q\n", wantCode: 1},
		{line: "setAcl /q", wantErr: "setAcl [-s] [-v version] [-R] path acl\n", wantCode: 1},
		{line: "create /x x bad", wantErr: "bad does not have the form scheme:id:perm\nKeeperErrorCode = InvalidACL for /x\nAcl is not valid : /x\n", wantCode: 1},
		{line: "create /y y world:anyone:cdrwa,bad", wantErr: "bad does not have the form scheme:id:perm\nCreated /y\n"},
		{line: "create /z z auth::cdrwa", wantErr: "KeeperErrorCode = InvalidACL for /z\nAcl is not valid : /z\n", wantCode: 1},
		{line: "addauth", wantErr: "addauth scheme auth\n", wantCode: 1},
		{line: "addauth digest bob:pw"},
		{line: "whoami", wantOut: "Auth scheme: User\nip: 127.0.0.1\ndigest: bob\n"},
		{line: "create /z z auth::cdrwa", wantErr: "Created /z\n"},
		{line: "getAcl /z", wantOut: "'digest,'" + bob + "\n: cdrwa\n"},
		{line: "create /t t", wantErr: "Created /t\n"},
		{line: "create /t/a", wantErr: "Created /t/a\n"},
		{line: "create /t/a/b", wantErr: "Created /t/a/b\n"},
		{line: "setAcl -R /t world:anyone:cdra"},
		{line: "getAcl /t/a/b", wantOut: "'world,'anyone\n: cdra\n"},
		{line: "setAcl -s /t world:anyone:cdrwa", wantOut: "{stat:/t}"},
		{line: "setAcl /t/a digest:" + bob + ":cdrwa"},
		{line: "getAcl /t/a", wantOut: "'digest,'" + bob + "\n: cdrwa\n"},
	})
	// A session without bob's credentials cannot change /t/a.
	h2, _, _ := newShellFor(t, Config{})
	if err := h2.Connect(context.Background(), h.srv.Addr()); err != nil {
		t.Fatal(err)
	}
	h.s = h2
	h.out, h.err = h2.cfg.Stdout.(*syncBuffer), h2.cfg.Stderr.(*syncBuffer)
	h.run([]step{
		// Each node's failure is printed and the walk goes on; a node
		// whose children cannot be listed ends it, as in zkCli.
		{line: "setAcl -R /t world:anyone:cdra", wantOut: "KeeperErrorCode = NoAuth for /t/a\n", wantErr: "Insufficient permission : /t/a\n", wantCode: 1},
		{line: "getAcl /t", wantOut: "'world,'anyone\n: cdra\n"},
		{line: "getAcl /t/a", wantErr: "Insufficient permission : /t/a\n", wantCode: 1},
	})
}

func TestQuotaCommands(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{line: "create /qa data", wantErr: "Created /qa\n"},
		{line: "create /qa/1", wantErr: "Created /qa/1\n"},
		{line: "setquota -n 5 /qa"},
		{line: "listquota /qa", wantOut: "Output quota for /qa count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1\nOutput stat for /qa count=2,bytes=4\n",
			wantErr: "absolute path is /zookeeper/quota/qa/zookeeper_limits\n"},
		{line: "get /zookeeper/quota/qa/zookeeper_limits", wantOut: "count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1\n"},
		{line: "setquota -b 10 /qa"},
		{line: "setquota -B 100 /qa"},
		{line: "listquota /qa", wantOut: "Output quota for /qa count=5,bytes=10=;byteHardLimit=100;countHardLimit=-1\nOutput stat for /qa count=2,bytes=4\n",
			wantErr: "absolute path is /zookeeper/quota/qa/zookeeper_limits\n"},
		{line: "setquota -n 1 /qa", wantOut: "[Warning]: the count quota you create is less than the existing count:2\n"},
		{line: "setquota -b 1 /qa", wantOut: "[Warning]: the count quota you create is less than the existing count:2\n[Warning]: the bytes quota you create is less than the existing bytes:4\n"},
		{line: "setquota -N 5 /qa/1", wantErr: "/qa/1 has a parent /qa which has a quota\n", wantCode: 1},
		{line: "create /qb", wantErr: "Created /qb\n"},
		{line: "create /qb/c", wantErr: "Created /qb/c\n"},
		{line: "setquota -n 3 /qb/c"},
		{line: "setquota -n 3 /qb", wantErr: "/qb has a child /qb/c which has a quota\n", wantCode: 1},
		{line: "setquota -n 5 /nope", wantErr: "/nope does not exist.\n", wantCode: 1},
		{line: "setquota -n 0 /qa", wantErr: "the num quota must be greater than zero\n", wantCode: 1},
		{line: "setquota -b -1 /qa", wantErr: "the bytes quota must be greater than or equal to zero\n", wantCode: 1},
		{line: "setquota -n x /qa", wantErr: "NumberFormatException happens when parsing the option value\n", wantCode: 1},
		{line: "setquota /qa", wantErr: "Missing required option: [-n num soft quota, -b bytes soft quota, -N num hard quota, -B bytes hard quota]\n", wantCode: 1},
		{line: "setquota -n 1 -b 2 /qa", wantErr: "The option 'b' was specified but an option from this group has already been selected: 'n'\n", wantCode: 1},
		{line: "setquota -n 1", wantErr: "setquota -n|-b|-N|-B val path\n", wantCode: 1},
		{line: "setquota -n 5 /zookeeper/quota/x", wantErr: "cannot set a quota under the path: /zookeeper/quota\n", wantCode: 1},
		{line: "delquota -b /qa"},
		{line: "listquota /qa", wantOut: "Output quota for /qa count=1,bytes=-1=;byteHardLimit=100;countHardLimit=-1\nOutput stat for /qa count=2,bytes=4\n",
			wantErr: "absolute path is /zookeeper/quota/qa/zookeeper_limits\n"},
		{line: "delquota -n -b /qa", wantErr: "The option 'b' was specified but an option from this group has already been selected: 'n'\n", wantCode: 1},
		{line: "delquota /qa"},
		{line: "listquota /qa", wantErr: "absolute path is /zookeeper/quota/qa/zookeeper_limits\nquota for /qa does not exist.\n", wantCode: 1},
		{line: "ls /zookeeper/quota", wantOut: "[qb]\n"},
		{line: "delquota /nope", wantOut: "Quota does not exist for /nope\n"},
		{line: "delquota /qb/c"},
		{line: "ls /zookeeper/quota", wantOut: "[]\n"},
		{line: "listquota", wantErr: "listquota path\n", wantCode: 1},
		{line: "delquota", wantErr: "delquota [-n|-b|-N|-B] path\n", wantCode: 1},
		// Hard limits are enforced by the server.
		{line: "create /qh", wantErr: "Created /qh\n"},
		{line: "setquota -N 2 /qh"},
		{line: "create /qh/1", wantErr: "Created /qh/1\n"},
		{line: "create /qh/2", wantErr: "Quota has exceeded : /qh/2\n", wantCode: 1},
	})
}

func TestWatchCommands(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{line: "create /w a", wantErr: "Created /w\n"},
		{line: "get -w /w", wantOut: "a\n"},
		{line: "set /w b", wantOut: "{event:NodeDataChanged /w}"},
		{line: "set /w c", wantOut: ""},
		// Several watches of the session on one node: one event, as
		// zkCli's single default watcher gets.
		{line: "get -w /w", wantOut: "c\n"},
		{line: "get -w /w", wantOut: "c\n"},
		{line: "ls -w /w", wantOut: "[]\n"},
		{line: "stat -w /w", wantOut: "{stat:/w}"},
		{line: "delete /w", wantOut: "{event:NodeDeleted /w}"},
		{line: "stat -w /w", wantErr: "Node does not exist: /w\n", wantCode: 1},
		{line: "create /w x", wantErr: "Created /w\n", wantOut: "{event:NodeCreated /w}"},
		{line: "ls -w /w", wantOut: "[]\n"},
		{line: "create /w/c", wantErr: "Created /w/c\n", wantOut: "{event:NodeChildrenChanged /w}"},
		{line: "get /w extra", wantOut: "x\n", wantErr: "'get path [watch]' has been deprecated. Please use 'get [-s] [-w] path' instead.\n"},
		{line: "set /w y", wantOut: "{event:NodeDataChanged /w}"},
		// Persistent recursive watch (the default mode).
		{line: "addWatch /w"},
		{line: "create /w/c/d", wantErr: "Created /w/c/d\n", wantOut: "{event:NodeCreated /w/c/d}"},
		{line: "set /w/c/d 1", wantOut: "{event:NodeDataChanged /w/c/d}"},
		{line: "set /w/c/d 2", wantOut: "{event:NodeDataChanged /w/c/d}"},
		// With a one-shot watch as well, still one event.
		{line: "get -w /w/c/d", wantOut: "2\n"},
		{line: "set /w/c/d 3", wantOut: "{event:NodeDataChanged /w/c/d}"},
		{line: "addWatch /w"},
		{line: "set /w/c/d 4", wantOut: "{event:NodeDataChanged /w/c/d}"},
		{line: "removewatches /w", wantOut: "{event:PersistentWatchRemoved /w}"},
		{line: "set /w/c/d 5", wantOut: ""},
		// Persistent (non-recursive) watch.
		{line: "addWatch -m persistent /w"},
		{line: "create /w/e", wantErr: "Created /w/e\n", wantOut: "{event:NodeChildrenChanged /w}"},
		{line: "set /w z", wantOut: "{event:NodeDataChanged /w}"},
		{line: "set /w/e z", wantOut: ""},
		{line: "removewatches /w -a", wantOut: "{event:PersistentWatchRemoved /w}"},
		{line: "addWatch -m bogus /w", wantErr: "addWatch " + lookupCommand("addWatch").syntax + "\n", wantCode: 1},
		{line: "addWatch /w /x", wantErr: "addWatch " + lookupCommand("addWatch").syntax + "\n", wantCode: 1},
		// removewatches by type.
		{line: "get -w /w", wantOut: "z\n"},
		{line: "ls -w /w", wantOut: "[c, e]\n"},
		{line: "removewatches /w -d", wantOut: "{event:DataWatchRemoved /w}"},
		{line: "removewatches /w -c", wantOut: "{event:ChildWatchRemoved /w}"},
		{line: "removewatches /w -l", wantErr: "KeeperErrorCode = No such watcher for /w\n", wantCode: 1},
		{line: "removewatches /nope", wantErr: "KeeperErrorCode = No such watcher for /nope\n", wantCode: 1},
		{line: "removewatches", wantErr: "removewatches path [-c|-d|-a] [-l]\n", wantCode: 1},
		// ls -R -w: a data watch on the root, child watches everywhere.
		{line: "ls -R -w /w", wantOut: "/w\n/w/c\n/w/e\n/w/c/d\n"},
		{line: "create /w/c/f", wantErr: "Created /w/c/f\n", wantOut: "{event:NodeChildrenChanged /w/c}"},
		{line: "set /w q", wantOut: "{event:NodeDataChanged /w}"},
		// printwatches.
		{line: "printwatches", wantOut: "printwatches is on\n"},
		{line: "printwatches off"},
		{line: "printwatches", wantOut: "printwatches is off\n"},
		{line: "get -w /w", wantOut: "q\n"},
		{line: "set /w r", wantOut: ""},
		{line: "printwatches on"},
		{line: "get -w /w", wantOut: "r\n"},
		{line: "set /w s", wantOut: "{event:NodeDataChanged /w}"},
	})
}

func TestWatchFromOtherSession(t *testing.T) {
	h := newHarness(t)
	events := make(chan string, 10)
	h.s.eventHook = func(s string) { events <- s }
	h.run([]step{
		{line: "create /ext a", wantErr: "Created /ext\n"},
		{line: "get -w /ext", wantOut: "a\n"},
	})
	h.out.Reset()
	other, err := zk.Connect(context.Background(), h.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Set(context.Background(), "/ext", []byte("b"), -1); err != nil {
		t.Fatal(err)
	}
	want := watchedEvent("SyncConnected", "NodeDataChanged", "/ext")
	select {
	case got := <-events:
		if got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	if got := h.out.String(); got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}

func TestSessionCommands(t *testing.T) {
	h := newHarness(t)
	addr := h.srv.Addr()
	h.run([]step{
		{line: "create /h1", wantErr: "Created /h1\n"},
		{line: "ls /", wantOut: "[h1, zookeeper]\n"},
		{line: "history", wantOut: "0 - create /h1\n1 - ls /\n2 - history\n"},
		{line: "redo 1", wantOut: "[h1, zookeeper]\n"},
		{line: "redo 0x1", wantOut: "[h1, zookeeper]\n"},
		{line: "redo 0", wantErr: "Node already exists: /h1\n", wantCode: 1},
		{line: "redo 99", wantErr: "Command index out of range\n", wantCode: 1},
		// A redo that ran is recorded as the command it ran; one that
		// failed stays "redo".
		{line: "redo 6", wantErr: "No redoing redos\n", wantCode: 1},
		{line: "redo -1", wantErr: "Command index out of range\n", wantCode: 1},
		{line: "redo x", wantErr: "redo: the command number must be an integer: x\n", wantCode: 1},
		{line: "redo", wantErr: "redo cmdno\n", wantCode: 1},
		{line: "redo 3", wantOut: "[h1, zookeeper]\n"},
		{line: "history", wantOut: "2 - history\n3 - ls /\n4 - ls /\n5 - create /h1\n6 - redo 99\n7 - redo 6\n8 - redo -1\n9 - redo x\n10 - redo\n11 - ls /\n12 - history\n"},
	})
	if p, want := h.s.Prompt(), fmt.Sprintf("[zk: %s(CONNECTED) 13] ", addr); p != want {
		t.Errorf("prompt %q, want %q", p, want)
	}
	h.run([]step{
		{line: "close"},
		{line: "ls /", wantOut: "Not connected\n", wantCode: 1},
		{line: "close", wantOut: "Not connected\n", wantCode: 1},
		{line: "printwatches", wantOut: "printwatches is on\n"},
	})
	if p := h.s.Prompt(); !strings.Contains(p, "(CLOSED)") {
		t.Errorf("prompt after close: %q", p)
	}
	h.run([]step{
		{line: "connect"},
		{line: "ls /", wantOut: "[h1, zookeeper]\n"},
		{line: "connect " + addr + "/h1"},
		{line: "ls /", wantOut: "[]\n"},
		{line: "create /x", wantErr: "Created /x\n"},
		{line: "create -s /s", wantErr: "Created /s0000000001\n"},
		// The configuration is read outside the chroot.
		{line: "config -w", outRegexp: `^.*\n$`},
		{line: "get -w /x", wantOut: "null\n"},
		{line: "set /x 1", wantOut: "{event:NodeDataChanged /x}"},
		{line: "connect " + addr},
		{line: "ls /h1", wantOut: "[s0000000001, x]\n"},
	})
	if p := h.s.Prompt(); !strings.Contains(p, "(CONNECTED)") || !strings.Contains(p, addr+"(") {
		t.Errorf("prompt after connect: %q", p)
	}
	_, _, code := h.exec("quit")
	if code != 0 {
		t.Errorf("quit: exit %d", code)
	}
	if err := h.s.Exec(context.Background(), "quit"); err != ErrQuit {
		t.Errorf("quit returned %v", err)
	}
}

func TestConnectFailure(t *testing.T) {
	addr := closedPort(t)
	s, _, errb := newShellFor(t, Config{Timeout: 500 * time.Millisecond})
	start := time.Now()
	err := s.Connect(context.Background(), addr)
	if err == nil || !strings.HasPrefix(err.Error(), "Unable to connect to "+addr) {
		t.Fatalf("Connect: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Connect took %v", d)
	}
	if code := ExitCode(s.Exec(context.Background(), "connect "+addr)); code != 1 || !strings.HasPrefix(errb.String(), "Unable to connect to "+addr) {
		t.Errorf("connect: exit %d, stderr %q", code, errb.String())
	}
	if p := s.Prompt(); p != "[zk: "+addr+"(NOT_CONNECTED) 1] " {
		t.Errorf("prompt %q", p)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	srv, err := zktest.New()
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr()
	srv.Close()
	return addr
}

func TestStateEvents(t *testing.T) {
	srv := zktest.Start(t)
	s, out, _ := newShellFor(t, Config{StateEvents: true, Timeout: 600 * time.Millisecond})
	states := make(chan struct{}, 10)
	s.onState = func() { states <- struct{}{} }
	if err := s.Connect(context.Background(), srv.Addr()); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), watchedEvent("SyncConnected", "None", "null"); got != want {
		t.Errorf("after connect: %q, want %q", got, want)
	}
	out.Reset()
	s.Exec(context.Background(), "close")
	if got, want := out.String(), watchedEvent("Closed", "None", "null"); got != want {
		t.Errorf("after close: %q, want %q", got, want)
	}
	if err := s.Connect(context.Background(), srv.Addr()); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	// Stop the server: the session is suspended, then lost.
	srv.Close()
	want := watchedEvent("Disconnected", "None", "null") + watchedEvent("Expired", "None", "null")
	deadline := time.After(20 * time.Second)
	for out.String() != want {
		select {
		case <-states:
		case <-deadline:
			t.Fatalf("state events %q, want %q", out.String(), want)
		}
	}
	if p := s.Prompt(); !strings.Contains(p, "(CLOSED)") {
		t.Errorf("prompt after expiry: %q", p)
	}
	out.Reset()
	if code := ExitCode(s.Exec(context.Background(), "ls /")); code != 1 || out.String() != "Not connected\n" {
		t.Errorf("ls after expiry: %d %q", code, out.String())
	}
}

func TestComplete(t *testing.T) {
	h := newHarness(t)
	h.exec("create /app")
	h.exec("create /app/one")
	h.exec("create /app/two")
	ctx := context.Background()
	for _, tc := range []struct {
		word  string
		first bool
		want  []string
	}{
		{"ge", true, []string{"get ", "getAcl ", "getAllChildrenNumber ", "getEphemerals "}},
		{"getAl", true, []string{"getAllChildrenNumber "}},
		{"q", true, []string{"quit "}},
		{"zz", true, nil},
		{"ge", false, nil},
		{"/", false, []string{"/app", "/zookeeper"}},
		{"/zoo", false, []string{"/zookeeper"}},
		{"/zookeeper/", false, []string{"/zookeeper/config", "/zookeeper/quota"}},
		{"/app/t", false, []string{"/app/two"}},
		{"/app/", true, []string{"/app/one", "/app/two"}},
		{"/nope/", false, nil},
		{"/a//", false, nil},
	} {
		got := h.s.Complete(ctx, tc.word, tc.first)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Complete(%q, %v) = %q, want %q", tc.word, tc.first, got, tc.want)
		}
	}
	c := &completer{s: h.s}
	line := []rune("ls /app/o")
	got, n := c.Do(line, len(line))
	if n != 6 || len(got) != 1 || string(got[0]) != "ne" {
		t.Errorf("Do(%q) = %q, %d", string(line), got, n)
	}
	line = []rune("getE /x")
	got, n = c.Do(line, 4)
	if n != 4 || len(got) != 1 || string(got[0]) != "phemerals " {
		t.Errorf("Do(%q, 4) = %q, %d", string(line), got, n)
	}
}

func TestStatNotWatchingAfterClose(t *testing.T) {
	// Watches pending when the session closes end quietly.
	h := newHarness(t)
	h.run([]step{
		{line: "create /c x", wantErr: "Created /c\n"},
		{line: "get -w /c", wantOut: "x\n"},
		{line: "addWatch /c"},
		{line: "close"},
		{line: "connect"},
		{line: "set /c y", wantOut: ""},
	})
}

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		code proto.ErrCode
		want string
	}{
		{proto.ErrNoNode, "Node does not exist: /p"},
		{proto.ErrNodeExists, "Node already exists: /p"},
		{proto.ErrNotEmpty, "Node not empty: /p"},
		{proto.ErrBadVersion, "version No is not valid : /p"},
		{proto.ErrNoAuth, "Insufficient permission : /p"},
		{proto.ErrInvalidACL, "Acl is not valid : /p"},
		{proto.ErrBadArguments, "Arguments are not valid : /p"},
		{proto.ErrNotReadOnly, "Not a read-only call: /p"},
		{proto.ErrQuotaExceeded, "Quota has exceeded : /p"},
		{proto.ErrNoChildrenForEphemerals, "Ephemerals cannot have children: /p"},
		{proto.ErrSessionExpired, "KeeperErrorCode = Session expired for /p"},
		{proto.ErrConnectionLoss, "KeeperErrorCode = ConnectionLoss for /p"},
		{proto.ErrCode(-999), "KeeperErrorCode = Unknown error -999 for /p"},
	} {
		err := &zk.Error{Code: tc.code, Op: "x", Path: "/p", Err: zk.CodeError(tc.code)}
		if got := cliMessage(err, "/p"); got != tc.want {
			t.Errorf("code %d: %q, want %q", tc.code, got, tc.want)
		}
	}
	if got := cliMessage(context.DeadlineExceeded, "/p"); got != "KeeperErrorCode = ConnectionLoss for /p" {
		t.Errorf("deadline: %q", got)
	}
	if got := cliMessage(zk.ErrNoNode, "/p"); got != "Node does not exist: /p" {
		t.Errorf("bare sentinel: %q", got)
	}
}

func TestManyWatches(t *testing.T) {
	// More watches than one event dispatcher holds.
	h := newHarness(t)
	ctx := context.Background()
	conn := h.s.Conn()
	if _, err := conn.Create(ctx, "/big", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	const n = 3*shardSize + 100
	want := "/big\n"
	for i := 0; i < n; i += 200 {
		var ops []zk.Op
		for j := i; j < min(i+200, n); j++ {
			ops = append(ops, zk.CreateOp(fmt.Sprintf("/big/c%04d", j), nil, zk.OpenACLUnsafe, zk.ModePersistent))
		}
		if _, err := conn.Multi(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	for j := 0; j < n; j++ {
		want += fmt.Sprintf("/big/c%04d\n", j)
	}
	h.run([]step{
		{line: "ls -R -w /big", wantOut: want},
		{line: fmt.Sprintf("delete /big/c%04d", n-1), wantOut: fmt.Sprintf("{event:NodeDeleted /big/c%04d}{event:NodeChildrenChanged /big}", n-1)},
		{line: "create /big/c0000/x", wantErr: "Created /big/c0000/x\n", wantOut: "{event:NodeChildrenChanged /big/c0000}"},
		{line: "delete /big/c0001", wantOut: "{event:NodeDeleted /big/c0001}"},
	})
	h.s.ctlMu.Lock()
	shards := len(h.s.shards)
	h.s.ctlMu.Unlock()
	if shards < 3 {
		t.Errorf("%d shards for %d watches", shards, n+1)
	}
}
