package audit

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
)

// The golden lines are ZooKeeper's AuditEvent.toString of the same
// fields (its admin guide's samples, with tabs).
func TestEventLine(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{Event{User: "zookeeper/192.168.1.3", Operation: OpStart}, "user=zookeeper/192.168.1.3\toperation=serverStart\tresult=success"},
		{Event{User: "root", Operation: OpStop, Result: Invoked}, "user=root\toperation=serverStop\tresult=invoked"},
		{Event{Session: "0x19344730000", User: "192.168.1.2,zkcli@HADOOP.COM", IP: "192.168.1.2", Operation: OpCreate, Znode: "/a", ZnodeType: "persistent"},
			"session=0x19344730000\tuser=192.168.1.2,zkcli@HADOOP.COM\tip=192.168.1.2\toperation=create\tznode=/a\tznode_type=persistent\tresult=success"},
		{Event{Session: "0x1", User: "u", IP: "1.2.3.4", Operation: OpSetACL, Znode: "/a", ACL: "world:anyone:cdrwa", Result: Failure},
			"session=0x1\tuser=u\tip=1.2.3.4\toperation=setAcl\tznode=/a\tacl=world:anyone:cdrwa\tresult=failure"},
		{Event{Session: "0x1", User: "u", IP: "1.2.3.4", Operation: OpMulti, Result: Failure},
			"session=0x1\tuser=u\tip=1.2.3.4\toperation=multiOperation\tresult=failure"},
		{Event{Session: "0x19344730001", User: "zookeeper/192.168.1.3", Operation: OpEphemeralDelete, Znode: "/e"},
			"session=0x19344730001\tuser=zookeeper/192.168.1.3\toperation=ephemeralZNodeDeletionOnSessionCloseOrExpire\tznode=/e\tresult=success"},
		// Empty strings are written; nulls (unset fields) are not.
		{Event{Session: "0x1", IP: "", Operation: OpSetACL, Znode: "/a", Empty: FieldIP | FieldACL, Result: Failure},
			"session=0x1\tip=\toperation=setAcl\tznode=/a\tacl=\tresult=failure"},
		{Event{Result: Invoked}, "result=invoked"},
	} {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

func TestSessionHex(t *testing.T) {
	for id, want := range map[int64]string{0: "0x0", 0x1000a2b3c4d0001: "0x1000a2b3c4d0001", -1: "0xffffffffffffffff", 255: "0xff"} {
		if got := SessionHex(id); got != want {
			t.Errorf("SessionHex(%#x) = %q, want %q", id, got, want)
		}
	}
}

func TestUsers(t *testing.T) {
	ip := proto.Id{Scheme: "ip", ID: "127.0.0.1"}
	for _, tc := range []struct {
		ids  []proto.Id
		want string
	}{
		{nil, ""},
		{[]proto.Id{ip}, "127.0.0.1"},
		{[]proto.Id{ip, {Scheme: "digest", ID: "bob:ZxLyDmp7aMsQ4wVc+DmIlm2LjRE="}}, "127.0.0.1,bob"},
		{[]proto.Id{ip, {Scheme: "super"}, {Scheme: "digest", ID: "super:D/InIHSb7yEEbrWz8b9l71RjZJU="}}, "127.0.0.1,super"},
		{[]proto.Id{ip, {Scheme: "sasl", ID: "zkcli@HADOOP.COM"}}, "127.0.0.1,zkcli@HADOOP.COM"},
		{[]proto.Id{ip, {Scheme: "x509", ID: "CN=app,O=example"}}, "127.0.0.1,CN=app,O=example"},
		{[]proto.Id{{Scheme: "digest", ID: " :x"}, {Scheme: "super", ID: "CN=admin"}}, ""},
	} {
		if got := Users(tc.ids); got != tc.want {
			t.Errorf("Users(%v) = %q, want %q", tc.ids, got, tc.want)
		}
	}
}

func TestACLStringAndModes(t *testing.T) {
	acls := []proto.ACL{
		{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}},
		{Perms: proto.PermRead | proto.PermAdmin, ID: proto.Id{Scheme: "digest", ID: "bob:h="}},
	}
	// ZKUtil.aclToString: no separator between entries.
	if got, want := ACLString(acls), "world:anyone:cdrwadigest:bob:h=:ra"; got != want {
		t.Errorf("ACLString = %q, want %q", got, want)
	}
	if got := ACLString(nil); got != "" {
		t.Errorf("ACLString(nil) = %q", got)
	}
	want := []string{"persistent", "ephemeral", "persistent_sequential", "ephemeral_sequential", "container", "persistent_with_ttl", "persistent_sequential_with_ttl"}
	for i, w := range want {
		if got, ok := CreateModeName(proto.CreateMode(i)); !ok || got != w {
			t.Errorf("CreateModeName(%d) = %q, %v; want %q", i, got, ok, w)
		}
	}
	if _, ok := CreateModeName(7); ok {
		t.Error("flags 7 is a create mode")
	}
}

// lineRE is the RFAAUDIT appender's pattern, %d{ISO8601} %p %c{2}: %m.
var lineRE = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|ERROR) audit\.Slf4jAuditLogger: (.*)$`)

func readLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestWriterFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "zookeeper_audit.log")
	w, err := Open(Config{File: name})
	if err != nil {
		t.Fatal(err)
	}
	w.Log(Event{User: "zk", Operation: OpStart})
	w.Log(Event{Session: "0x1", User: "127.0.0.1", IP: "127.0.0.1", Operation: OpDelete, Znode: "/a", Result: Failure})
	w.Close()
	lines := readLines(t, name)
	if len(lines) != 2 {
		t.Fatalf("lines %q", lines)
	}
	for i, want := range []struct{ level, msg string }{
		{"INFO", "user=zk\toperation=serverStart\tresult=success"},
		{"ERROR", "session=0x1\tuser=127.0.0.1\tip=127.0.0.1\toperation=delete\tznode=/a\tresult=failure"},
	} {
		m := lineRE.FindStringSubmatch(lines[i])
		if m == nil || m[1] != want.level || m[2] != want.msg {
			t.Errorf("line %d %q, want level %s and %q", i, lines[i], want.level, want.msg)
		}
	}
	if w.Written() != 2 || w.Dropped() != 0 {
		t.Errorf("written %d dropped %d", w.Written(), w.Dropped())
	}
	if w.Log(Event{Operation: OpStop}) || w.Dropped() != 1 {
		t.Error("an event logged after Close was not dropped")
	}
}

func TestWriterLogStream(t *testing.T) {
	var buf bytes.Buffer
	w, err := Open(Config{Log: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w.Log(Event{User: "zk", Operation: OpStart})
	w.Close()
	if got := buf.String(); !strings.Contains(got, `"msg":"audit","event":"user=zk\toperation=serverStart\tresult=success"`) {
		t.Errorf("log: %s", got)
	}
}

// blockingHandler holds the writer goroutine in its first record until
// release is closed.
type blockingHandler struct {
	slog.Handler
	release chan struct{}
}

func (h blockingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "audit" {
		<-h.release
	}
	return h.Handler.Handle(ctx, r)
}

// The queue is bounded: with the writer stuck, Log returns at once, and
// what does not fit is dropped, counted and reported.
func TestWriterQueueBound(t *testing.T) {
	var buf bytes.Buffer
	h := blockingHandler{Handler: slog.NewTextHandler(&buf, nil), release: make(chan struct{})}
	w, err := Open(Config{Log: slog.New(h), Queue: 4})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ok := 0
	for range 100 {
		if w.Log(Event{Operation: OpCreate}) {
			ok++
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("100 Log calls took %v", d)
	}
	// The writer took at most one event off the queue before blocking.
	if ok < 4 || ok > 5 || w.Dropped() != int64(100-ok) {
		t.Errorf("queued %d, dropped %d", ok, w.Dropped())
	}
	close(h.release)
	w.Close()
	if w.Written() != int64(ok) {
		t.Errorf("written %d, want %d", w.Written(), ok)
	}
	if !strings.Contains(buf.String(), "audit log: events dropped") || !strings.Contains(buf.String(), "droppedTotal="+strconv.FormatInt(w.Dropped(), 10)) {
		t.Errorf("drops not reported: %s", buf.String())
	}
}

func TestWriterRotates(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a.log")
	w, err := Open(Config{File: name, MaxSize: 300, MaxBackups: 2, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		w.Log(Event{Session: "0x1", User: "127.0.0.1", IP: "127.0.0.1", Operation: OpSetData, Znode: "/some/node"})
	}
	w.Close()
	for _, f := range []string{name, name + ".1", name + ".2"} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 300 {
			t.Errorf("%s: %d bytes", f, st.Size())
		}
	}
	if _, err := os.Stat(name + ".3"); err == nil {
		t.Error("more than MaxBackups files kept")
	}
}
