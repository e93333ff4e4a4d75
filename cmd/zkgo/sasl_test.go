package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zk"
)

// zoo.cfg's SASL keys reach the server: users from the JAAS file named by
// zkgo.sasl.jaasConfig, superUser, and sessionRequireClientSASLAuth.
func TestServerSASLFromZooCfg(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	jaas := "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_bob=\"bobsecret\"\n  user_admin=\"adminsecret\";\n};\n"
	if err := os.WriteFile(filepath.Join(dir, "jaas.conf"), []byte(jaas), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	os.WriteFile(cfg, []byte("tickTime=100\ndataDir="+dir+"\nclientPort="+strconv.Itoa(port)+"\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"+
		"zkgo.sasl.jaasConfig=jaas.conf\nsuperUser=admin\nsessionRequireClientSASLAuth=true\n"+
		"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"), 0o644)
	_, addr := startServer(t, cfg)

	raw, err := rawzk.Dial(addr, rawzk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if h, err := raw.Call(proto.OpExists, &proto.ExistsRequest{Path: "/"}, nil); err != nil || h.Err != proto.ErrSessionClosedRequireSaslAuth {
		t.Fatalf("unauthenticated: %+v %v", h, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := zk.Connect(ctx, addr, zk.WithSASL("admin", "adminsecret"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	who, err := admin.WhoAmI(ctx)
	if err != nil || !slices.Contains(who, zk.ClientInfo{AuthScheme: "super"}) {
		t.Fatalf("admin whoAmI %+v %v", who, err)
	}
	if _, err := zk.Connect(ctx, addr, zk.WithSASL("bob", "wrong")); !errors.Is(err, zk.ErrAuthFailed) {
		t.Fatalf("bad password: %v", err)
	}
}

// sessionRequireClientSASLAuth=true with no SASL user, as kazoo's test
// harness runs ZooKeeper (authProvider.1=SASLAuthenticationProvider and an
// empty JAAS file in -Djava.security.auth.login.config): the server starts,
// as ZooKeeper does, with one warning that no client can authenticate, and
// answers an unauthenticated client's first request
// SessionClosedRequireSaslAuth, then closes the connection; a client that
// tries SASL is refused.
func TestServerRequireSASLWithoutUsers(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	jaas := filepath.Join(dir, "jaas.conf")
	if err := os.WriteFile(jaas, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte("tickTime=100\ndataDir="+dir+"\nclientPort="+strconv.Itoa(port)+"\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"+
		"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\nsessionRequireClientSASLAuth=true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr, logs := startCommandLog(t, []string{"SERVER_JVMFLAGS=-Djava.security.auth.login.config=" + jaas, "JVMFLAGS="}, "server", cfg)

	raw, err := rawzk.Dial(addr, rawzk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if h, err := raw.Call(proto.OpExists, &proto.ExistsRequest{Path: "/"}, nil); err != nil || h.Err != proto.ErrSessionClosedRequireSaslAuth {
		t.Fatalf("unauthenticated: %+v %v", h, err)
	}
	raw.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
	if h, err := raw.Call(proto.OpExists, &proto.ExistsRequest{Path: "/"}, nil); err == nil {
		t.Fatalf("the connection stayed open after SessionClosedRequireSaslAuth: %+v", h)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c, err := zk.Connect(ctx, addr, zk.WithSASL("bob", "bobsecret")); !errors.Is(err, zk.ErrSessionClosedRequireSaslAuth) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("SASL client: %v", err)
	}

	var warned []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "no client can authenticate with SASL") || strings.Contains(l, "server SASL is off") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "level=WARN") || !strings.Contains(warned[0], "sessionRequireClientSASLAuth: sasl authentication is enforced") || !strings.Contains(warned[0], jaas) {
		t.Errorf("want one warning naming the JAAS file, got %q", warned)
	}
}
