package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/internal/tlstest"
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
