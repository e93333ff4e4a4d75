package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zk"
)

// dropinConfig writes a zoo.cfg on a free port into dir; extra is added
// to it.
func dropinConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := filepath.Join(dir, "zoo.cfg")
	text := "tickTime=100\ndataDir=" + dir + "\nclientPort=" + strconv.Itoa(port) + "\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n" + extra
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serverEnv is the test's environment without the variables zkgo reads
// JVM flags from, plus env.
func serverEnv(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "SERVER_JVMFLAGS" && k != "JVMFLAGS" && k != "ZOOCFGDIR" {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// A zoo.cfg with the JAAS file, the SASL provider, the super digest and
// jute.maxbuffer given the Java way, in SERVER_JVMFLAGS, as zkServer.sh
// users have them.
func TestServerJVMFlagsSASL(t *testing.T) {
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas.conf")
	os.WriteFile(jaas, []byte("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_bob=\"bobsecret\";\n};\n"), 0o600)
	cfg := dropinConfig(t, dir, "")
	flags := "-Xmx512m -Dlog4j.configuration=file:/etc/zk/log4j.properties -Dzookeeper.log.dir=/var/log/zk " +
		"-Djava.security.auth.login.config=" + jaas + " " +
		"-Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider " +
		"'-Dzookeeper.DigestAuthenticationProvider.superDigest=" + acl.DigestID("super", "supersecret") + "' " +
		"-Djute.maxbuffer=4096"
	cmd := exec.Command(binary, "server", cfg)
	cmd.Env = serverEnv("SERVER_JVMFLAGS=" + flags)
	_, addr, logs := startServerCmd(t, cmd)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bob, err := zk.Connect(ctx, addr, zk.WithSASL("bob", "bobsecret"))
	if err != nil {
		t.Fatalf("SASL client: %v\n%s", err, logs.String())
	}
	defer bob.Close()
	who, err := bob.WhoAmI(ctx)
	if err != nil || !slices.Contains(who, zk.ClientInfo{AuthScheme: "sasl", User: "bob"}) {
		t.Fatalf("bob whoAmI %+v %v", who, err)
	}
	super, err := zk.Connect(ctx, addr, zk.WithAuth("digest", []byte("super:supersecret")))
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close()
	who, err = super.WhoAmI(ctx)
	if err != nil || !slices.Contains(who, zk.ClientInfo{AuthScheme: "super"}) {
		t.Fatalf("super whoAmI %+v %v", who, err)
	}

	// The JVM's own flags and the logging properties: one summary line.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "zkgo server started"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no start line:\n%s", logs.String())
		}
	}
	startup, _, _ := strings.Cut(logs.String(), "zkgo server started")
	if n := strings.Count(startup, "level=WARN"); n != 1 || !strings.Contains(startup, "JVM flags: 3 without a meaning for zkgo ignored") {
		t.Fatalf("want one warning, the summary line:\n%s", logs.String())
	}

	// jute.maxbuffer=4096: a request larger than that is refused.
	raw, err := rawzk.Dial(addr, rawzk.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	if h, err := raw.Call(proto.OpCreate, &proto.CreateRequest{Path: "/small", Data: make([]byte, 1000), ACL: open}, nil); err != nil || h.Err != proto.ErrOk {
		t.Fatalf("small create: %+v %v", h, err)
	}
	if h, err := raw.Call(proto.OpCreate, &proto.CreateRequest{Path: "/big", Data: make([]byte, 8000), ACL: open}, nil); err == nil && h.Err == proto.ErrOk {
		t.Fatal("an 8000-byte request passed jute.maxbuffer=4096")
	}
}

// java.env next to zoo.cfg is read as zkEnv.sh sources it, on top of the
// environment; lines zkgo cannot read get a warning.
func TestServerJavaEnv(t *testing.T) {
	dir := t.TempDir()
	cfg := dropinConfig(t, dir, "")
	os.WriteFile(filepath.Join(dir, "java.env"), []byte("# set by ops\n"+
		"export SERVER_JVMFLAGS=\"$SERVER_JVMFLAGS -Dzookeeper.4lw.commands.whitelist=ruok,srvr\"\n"+
		"ulimit -n 65536\n"), 0o644)
	cmd := exec.Command(binary, "server", cfg)
	cmd.Env = serverEnv("SERVER_JVMFLAGS=-Dzookeeper.extendedTypesEnabled=true")
	_, addr, logs := startServerCmd(t, cmd)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := zk.FourLetterWord(ctx, addr, "ruok"); err != nil || out != "imok" {
		t.Fatalf("ruok: %q %v\n%s", out, err, logs.String())
	}
	// extendedTypesEnabled from the environment, kept by java.env's
	// $SERVER_JVMFLAGS: TTL nodes can be created.
	c, err := zk.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create(ctx, "/ttl", nil, zk.OpenACLUnsafe, zk.ModePersistentWithTTL, zk.WithTTL(3600000)); err != nil {
		t.Fatalf("TTL node: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "java.env:3: not a simple assignment"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning about java.env's ulimit line:\n%s", logs.String())
		}
	}
}

// A bad value by -D stops the server with the zoo.cfg key's message,
// naming the flag.
func TestServerJVMFlagsBadValue(t *testing.T) {
	dir := t.TempDir()
	cfg := dropinConfig(t, dir, "")
	cmd := exec.Command(binary, "server", cfg)
	cmd.Env = serverEnv("SERVER_JVMFLAGS=-Djute.maxbuffer=lots")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `zkgo server: SERVER_JVMFLAGS: -Djute.maxbuffer: invalid integer "lots"`) {
		t.Fatalf("%v\n%s", err, out)
	}
	cfg = dropinConfig(t, dir, "jute.maxbuffer=lots\n")
	out, err = exec.Command(binary, "server", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `zoo.cfg:6: jute.maxbuffer: invalid integer "lots"`) {
		t.Fatalf("%v\n%s", err, out)
	}
}
