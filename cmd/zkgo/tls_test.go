package main

import (
	"context"
	binenc "encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/tlstest"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// A server from a zoo.cfg with ZooKeeper's TLS keys, and zkgo cli over
// TLS with PEM flags or a ZooKeeper client configuration file.
func TestServerTLSFromZooCfg(t *testing.T) {
	dir := t.TempDir()
	files := tlstest.WriteFiles(t, dir, "server", "client")
	port, securePort := zktest.FreePort(t), zktest.FreePort(t)
	cfg := filepath.Join(dir, "zoo.cfg")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`tickTime=100
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
secureClientPort=%d
secureClientPortAddress=127.0.0.1
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider
ssl.keyStore.location=%s
ssl.trustStore.location=%s
admin.enableServer=false
`, dir, port, securePort, files.Path("server"), files.Path("ca"))), 0o644)
	startServer(t, cfg)
	secure := fmt.Sprintf("127.0.0.1:%d", securePort)

	pemFlags := []string{"-server", secure, "-tls-ca", files.Path("ca"), "-tls-cert", files.Path("client"), "-tls-key", files.Path("client")}
	if code, out, errOut := runCLIBinary(t, "", append(pemFlags, "create", "/tls", "over-tls")...); code != 0 {
		t.Fatalf("create over TLS: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := runCLIBinary(t, "", append(pemFlags, "whoami")...); code != 0 || !strings.Contains(out, "x509") || !strings.Contains(out, "CN=client,O=zkgo") {
		t.Fatalf("whoami over TLS: %d %q %q", code, out, errOut)
	}
	props := filepath.Join(dir, "client.properties")
	os.WriteFile(props, []byte(fmt.Sprintf(`zookeeper.client.secure=true
zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty
zookeeper.ssl.keyStore.location=%s
zookeeper.ssl.trustStore.location=%s
`, files.Path("client"), files.Path("ca"))), 0o644)
	code, out, errOut := runCLIBinary(t, "", "-server", secure, "-client-configuration", props, "get", "/tls")
	if code != 0 || strings.TrimSpace(out) != "over-tls" {
		t.Fatalf("get with -client-configuration: %d %q %q", code, out, errOut)
	}
	// Without TLS the secure port does not answer.
	if code, _, _ := runCLIBinary(t, "", "-server", secure, "-timeout", "1s", "get", "/tls"); code == 0 {
		t.Fatal("a plaintext client read from the TLS port")
	}
	// The plaintext port is there too.
	code, out, errOut = runCLIBinary(t, "", "-server", fmt.Sprintf("127.0.0.1:%d", port), "get", "/tls")
	if code != 0 || strings.TrimSpace(out) != "over-tls" {
		t.Fatalf("get on the plaintext port: %d %q %q", code, out, errOut)
	}
}

// TestEnsembleSSLQuorumFromZooCfg: three members whose zoo.cfg sets
// sslQuorum=true with ssl.quorum.* PEM stores replicate over mutual TLS.
func TestEnsembleSSLQuorumFromZooCfg(t *testing.T) {
	base := t.TempDir()
	files := tlstest.WriteFiles(t, base, "member")
	cfgs, _ := writeEnsemble(t, base, 3, fmt.Sprintf("sslQuorum=true\nssl.quorum.keyStore.location=%s\nssl.quorum.trustStore.location=%s\n",
		files.Path("member"), files.Path("ca")))
	addrs := make([]string, len(cfgs))
	for i, cfg := range cfgs {
		_, addrs[i] = startServer(t, cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := zk.Connect(ctx, addrs[0])
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer w.Close()
	if _, err := w.Create(ctx, "/ssl-quorum", []byte("q"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	r, err := zk.Connect(ctx, addrs[2])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	if b, _, err := r.Get(ctx, "/ssl-quorum"); err != nil || string(b) != "q" {
		t.Fatalf("read on member 3: %q %v", b, err)
	}
}

// TestRollingUpgradeToQuorumTLS: the switch of a running plaintext
// ensemble to TLS between members without downtime, as ZooKeeper's
// administrator's guide does it — three rolling restarts: portUnification
// with the ssl.quorum.* stores (the peer port takes both), then
// sslQuorum=true (members dial over TLS), then portUnification removed
// (TLS only). A steady write load goes on throughout; no acknowledged
// write is lost, and at the end the peer ports refuse plaintext.
func TestRollingUpgradeToQuorumTLS(t *testing.T) {
	const n = 3
	base := t.TempDir()
	files := tlstest.WriteFiles(t, base, "member")
	cfgs, lines := writeEnsemble(t, base, n, "4lw.commands.whitelist=*\n")
	var servers, peers []string
	for _, l := range lines {
		addrs, client, _ := strings.Cut(l, ";")
		servers = append(servers, client)
		_, addrs, _ = strings.Cut(addrs, "=")
		host, rest, _ := strings.Cut(addrs, ":")
		port, _, _ := strings.Cut(rest, ":")
		peers = append(peers, host+":"+port)
	}
	plain := make([]string, n)
	for i, cfg := range cfgs {
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		plain[i] = string(b)
	}
	stores := fmt.Sprintf("ssl.quorum.keyStore.location=%s\nssl.quorum.trustStore.location=%s\n", files.Path("member"), files.Path("ca"))
	m := newMemberProcs(t, cfgs)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m.startHealthy(ctx, servers, "/w")

	load := startLoad(ctx, servers, "/w", 2)
	for step, extra := range []string{
		"sslQuorum=false\nportUnification=true\n" + stores,
		"sslQuorum=true\nportUnification=true\n" + stores,
		"sslQuorum=true\n" + stores,
	} {
		for i := range n {
			before := load.count()
			m.procs[i].kill()
			if err := os.WriteFile(cfgs[i], []byte(plain[i]+extra), 0o644); err != nil {
				t.Fatal(err)
			}
			m.start(i)
			what := fmt.Sprintf("step %d, member %d", step+1, i+1)
			waitHealthy(ctx, t, servers, what)
			load.waitWrites(ctx, t, before+20, what)
		}
		if step == 0 {
			// The unified ports answer a member dialling in plaintext
			// (and so show that the check below can tell).
			for _, p := range peers {
				if !plaintextHelloAnswered(t, p) {
					t.Fatalf("the unified peer port %s did not answer a plaintext hello", p)
				}
			}
		}
	}
	acked := load.finish(t)
	for i := range n {
		checkHeld(ctx, t, servers[i], "/w", acked)
	}
	// TLS only now: a member that dials in plaintext gets no answer.
	for _, p := range peers {
		if ok := plaintextHelloAnswered(t, p); ok {
			t.Fatalf("the peer port %s answered a plaintext hello after the upgrade", p)
		}
	}
	t.Logf("%d acknowledged creates during the switch to TLS between members", len(acked))
}

// plaintextHelloAnswered sends a zkgo peer hello in plaintext to addr
// (cluster 0, for member 1: to be refused) and reports whether a zkgo
// answer came back, which only a member that reads plaintext sends.
func plaintextHelloAnswered(t *testing.T, addr string) bool {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hello := make([]byte, 4+36)
	binenc.BigEndian.PutUint32(hello, 36)
	copy(hello[4:], "zkgoraft")
	binenc.BigEndian.PutUint32(hello[12:], 1)  // version
	binenc.BigEndian.PutUint64(hello[24:], 99) // sender
	binenc.BigEndian.PutUint64(hello[32:], 1)  // receiver (not 0: a probe)
	if _, err := c.Write(hello); err != nil {
		return false
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return false
	}
	n := binenc.BigEndian.Uint32(hdr[:])
	return n >= 1 && n <= 1024
}
