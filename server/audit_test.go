package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/internal/sasl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zktest"
)

var auditPrefix = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|ERROR) audit\.Slf4jAuditLogger: `)

// auditLines reads the audit file: each line's message, with the session
// given as S<n> (n: the order sessions appear in, from 1), and checks
// each line's level (ERROR for failures, as Slf4jAuditLogger).
func auditLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	sessions := map[string]string{}
	sessionRE := regexp.MustCompile(`session=0x[0-9a-f]+`)
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		m := auditPrefix.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("audit line without logback's prefix: %q", l)
		}
		msg := l[len(m[0]):]
		if (m[1] == "ERROR") != strings.HasSuffix(msg, "result=failure") {
			t.Errorf("level %s for %q", m[1], msg)
		}
		msg = sessionRE.ReplaceAllStringFunc(msg, func(s string) string {
			if _, ok := sessions[s]; !ok {
				sessions[s] = fmt.Sprintf("session=S%d", len(sessions)+1)
			}
			return sessions[s]
		})
		out = append(out, msg)
	}
	return out
}

func auditServer(t *testing.T, fn func(*server.Options)) (*zktest.Server, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "zookeeper_audit.log")
	s := zktest.Start(t, zktest.WithExtendedTypes(), zktest.WithOptions(func(o *server.Options) {
		o.Audit, o.AuditFile, o.AuditUser = true, file, "zkuser"
		if fn != nil {
			fn(o)
		}
	}))
	return s, file
}

func compareLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

var worldACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}

// Every kind of event, with ZooKeeper's fields and results.
func TestAuditLog(t *testing.T) {
	s, file := auditServer(t, nil)
	c := dial(t, s.Addr())
	mk := func(path string, mode proto.CreateMode) proto.ErrCode {
		return call(t, c, proto.OpCreate, &proto.CreateRequest{Path: path, ACL: worldACL, Flags: mode}, &proto.CreateResponse{})
	}
	mk("/a", proto.ModePersistent)
	mk("/a", proto.ModePersistent)                                                           // NodeExists
	mk("/e-", proto.ModeEphemeralSequential)                                                 // /e-0000000001
	mk("/x", 9)                                                                              // no create mode: no line, as ZooKeeper
	call(t, c, proto.OpGetData, &proto.GetDataRequest{Path: "/a"}, &proto.GetDataResponse{}) // reads: none
	call(t, c, proto.OpSetData, &proto.SetDataRequest{Path: "/a", Data: []byte("x"), Version: -1}, &proto.SetDataResponse{})
	call(t, c, proto.OpSetData, &proto.SetDataRequest{Path: "/nx", Version: -1}, &proto.SetDataResponse{})
	call(t, c, proto.OpSetACL, &proto.SetACLRequest{Path: "/a", ACL: worldACL, Version: -1}, &proto.SetACLResponse{})
	call(t, c, proto.OpSetACL, &proto.SetACLRequest{Path: "/a", ACL: nil, Version: -1}, &proto.SetACLResponse{}) // InvalidACL
	call(t, c, proto.OpCreateTTL, &proto.CreateTTLRequest{Path: "/t", ACL: worldACL, Flags: proto.ModePersistentWithTTL, TTL: 60000}, &proto.Create2Response{})
	call(t, c, proto.OpCreateContainer, &proto.CreateRequest{Path: "/c", ACL: worldACL, Flags: proto.ModeContainer}, &proto.Create2Response{})
	call(t, c, proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte("bob:secret")}, nil)
	call(t, c, proto.OpMulti, &proto.MultiRequest{Ops: []proto.MultiOp{
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m", ACL: worldACL}},
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m/s-", ACL: worldACL, Flags: proto.ModePersistentSequential}},
		{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: "/m", Version: 0}},
		{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/m", Version: -1}},
		{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/m/s-0000000000", Version: -1}},
	}}, &proto.MultiResponse{})
	call(t, c, proto.OpMulti, &proto.MultiRequest{Ops: []proto.MultiOp{
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m2", ACL: worldACL}},
		{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/nx", Version: -1}},
	}}, &proto.MultiResponse{})
	call(t, c, proto.OpDelete, &proto.DeleteRequest{Path: "/a", Version: 7}, nil) // BadVersion
	call(t, c, proto.OpDelete, &proto.DeleteRequest{Path: "/a", Version: -1}, nil)
	call(t, c, proto.OpReconfig, &proto.ReconfigRequest{JoiningServers: "server.2=127.0.0.1:2888:3888"}, &proto.GetDataResponse{}) // ReconfigDisabled
	if err := c.CloseSession(); err != nil {
		t.Fatal(err)
	}
	if mntr := fourLetter(t, s.Addr(), "mntr"); !strings.Contains(mntr, "zkgo_audit_dropped\t0") || !strings.Contains(mntr, "zkgo_audit_events\t") {
		t.Errorf("mntr lacks the audit counters:\n%s", mntr)
	}
	s.Close()

	ip := "\tip=127.0.0.1"
	anon := "session=S1\tuser=127.0.0.1" + ip
	bob := "session=S1\tuser=127.0.0.1,bob" + ip
	compareLines(t, auditLines(t, file), []string{
		"user=zkuser\toperation=serverStart\tresult=success",
		anon + "\toperation=create\tznode=/a\tznode_type=persistent\tresult=success",
		anon + "\toperation=create\tznode=/a\tznode_type=persistent\tresult=failure",
		anon + "\toperation=create\tznode=/e-0000000001\tznode_type=ephemeral_sequential\tresult=success",
		anon + "\toperation=setData\tznode=/a\tresult=success",
		anon + "\toperation=setData\tznode=/nx\tresult=failure",
		anon + "\toperation=setAcl\tznode=/a\tacl=world:anyone:cdrwa\tresult=success",
		anon + "\toperation=setAcl\tznode=/a\tacl=\tresult=failure",
		anon + "\toperation=create\tznode=/t\tznode_type=persistent_with_ttl\tresult=success",
		anon + "\toperation=create\tznode=/c\tznode_type=container\tresult=success",
		bob + "\toperation=addAuth\tresult=success",
		bob + "\toperation=create\tznode=/m\tznode_type=persistent\tresult=success",
		bob + "\toperation=create\tznode=/m/s-0000000000\tresult=success", // no type: as ZooKeeper's map by requested path
		bob + "\toperation=setData\tznode=/m\tresult=success",
		bob + "\toperation=delete\tznode=/m/s-0000000000\tresult=success",
		bob + "\toperation=multiOperation\tresult=failure",
		bob + "\toperation=delete\tznode=/a\tresult=failure",
		bob + "\toperation=delete\tznode=/a\tresult=success",
		bob + "\toperation=reconfig\tresult=failure",
		"session=S1\tuser=zkuser\toperation=ephemeralZNodeDeletionOnSessionCloseOrExpire\tznode=/e-0000000001\tresult=success",
		"user=zkuser\toperation=serverStop\tresult=invoked",
	})
}

// SASL authentications, and a failure, are recorded (zkgo's addition).
func TestAuditSASL(t *testing.T) {
	s, file := auditServer(t, func(o *server.Options) { o.SASL = server.SASLOptions{Users: saslUsers} })
	c := dial(t, s.Addr())
	saslLogin(t, c, "bob", "bobsecret")
	call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/s", ACL: worldACL}, &proto.CreateResponse{})
	bad := dial(t, s.Addr())
	cli := sasl.NewClient(sasl.ClientConfig{User: "bob", Password: "wrong"})
	code, out := saslStep(t, bad, cli.Start())
	if code != proto.ErrOk {
		t.Fatalf("first step: %v", code)
	}
	tok, err := cli.Next(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Send(proto.OpSasl, &proto.GetSASLRequest{Token: tok}); err != nil {
		t.Fatal(err)
	}
	if code := readFailure(t, bad); code == proto.ErrOk {
		t.Fatal("wrong password accepted")
	}
	s.Close()
	compareLines(t, auditLines(t, file), []string{
		"user=zkuser\toperation=serverStart\tresult=success",
		"session=S1\tuser=127.0.0.1,bob\tip=127.0.0.1\toperation=saslAuth\tresult=success",
		"session=S1\tuser=127.0.0.1,bob\tip=127.0.0.1\toperation=create\tznode=/s\tznode_type=persistent\tresult=success",
		"session=S2\tuser=127.0.0.1\tip=127.0.0.1\toperation=saslAuth\tresult=failure",
		"user=zkuser\toperation=serverStop\tresult=invoked",
	})
}

// Off by default: no file, and no cost but a nil check.
func TestAuditOffByDefault(t *testing.T) {
	file := filepath.Join(t.TempDir(), "zookeeper_audit.log")
	s := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.AuditFile = file }))
	c := dial(t, s.Addr())
	call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/a", ACL: worldACL}, &proto.CreateResponse{})
	if strings.Contains(fourLetter(t, s.Addr(), "mntr"), "zkgo_audit") {
		t.Error("mntr shows audit counters with the audit log off")
	}
	s.Close()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("audit file with audit off: %v", err)
	}
}

// Only the member a client is connected to records its changes; every
// member records the ephemeral nodes of a closed session.
func TestAuditOnlyOwnClients(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	n := 0
	cl := zktest.StartCluster(t, 3, zktest.WithOptions(func(o *server.Options) {
		mu.Lock()
		n++
		o.Audit, o.AuditUser = true, "zkuser"
		o.AuditFile = filepath.Join(dir, fmt.Sprintf("audit-%d.log", n))
		mu.Unlock()
	}))
	cl.Leader() // waits for one
	c, err := rawzk.Dial(cl.Addr(0), rawzk.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/own", ACL: worldACL, Flags: proto.ModeEphemeral}, &proto.CreateResponse{}); code != proto.ErrOk {
		t.Fatal(code)
	}
	if err := c.CloseSession(); err != nil {
		t.Fatal(err)
	}
	// A sync through each member: it has applied the close then.
	for i := range 3 {
		ci := dial(t, cl.Addr(i))
		call(t, ci, proto.OpSync, &proto.SyncRequest{Path: "/"}, &proto.SyncResponse{})
		ci.Close()
	}
	for i := range 3 {
		cl.Stop(i)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "audit-*.log"))
	if len(files) != 3 {
		t.Fatalf("audit files %q", files)
	}
	creates := 0
	for _, f := range files {
		lines := auditLines(t, f)
		deletions := 0
		for _, l := range lines {
			if strings.Contains(l, "operation=create\tznode=/own") {
				creates++
			}
			if strings.Contains(l, "operation=ephemeralZNodeDeletionOnSessionCloseOrExpire\tznode=/own") {
				deletions++
			}
		}
		if deletions != 1 {
			t.Errorf("%s: %d ephemeral deletions, want 1:\n%s", f, deletions, strings.Join(lines, "\n"))
		}
	}
	if creates != 1 {
		t.Errorf("%d members recorded the client's create, want 1 (its own)", creates)
	}
}

// BenchmarkSetData64Audit is BenchmarkSetData64 with the audit log on
// (into a file): what recording every write costs the write path.
func BenchmarkSetData64Audit(b *testing.B) {
	file := filepath.Join(b.TempDir(), "zookeeper_audit.log")
	s := zktest.Start(b, zktest.WithOptions(func(o *server.Options) { o.Audit, o.AuditFile = true, file }))
	runClients(b, s.Addr(), 64, func(c *rawzk.Conn, i int) {
		c.Call(proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("/bench-set-%d", i), ACL: openACL}, nil)
	}, func(c *rawzk.Conn, i int) error {
		var rsp proto.SetDataResponse
		return mustOK(c.Call(proto.OpSetData, &proto.SetDataRequest{Path: fmt.Sprintf("/bench-set-%d", i), Data: make([]byte, 100), Version: -1}, &rsp))
	})
}
