package curator_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/internal/tlsconf"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/tlstest"
	"github.com/zkgo/zkgo/tests/interop/curator"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// TestTLSJavaClientAgainstZkgo: the ZooKeeper Java client and Curator,
// configured for TLS as ZooKeeper documents it (Netty socket,
// zookeeper.ssl.* stores), talk to zkgo's TLS port with a client
// certificate: PEM stores, and JKS stores made by keytool.
func TestTLSJavaClientAgainstZkgo(t *testing.T) {
	dir := t.TempDir()
	files := tlstest.WriteFiles(t, dir, "server", "java")
	cfg, err := tlsconf.ServerConfig(tlsconf.Options{
		KeyStore: tlsconf.Store{Location: files.Path("server")}, TrustStore: tlsconf.Store{Location: files.Path("ca")},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.TLS, o.SecureAddr = cfg, "127.0.0.1:0"
	}))
	secure := srv.SecureAddr().String()
	const subject = "CN=java,O=zkgo"

	stores := []struct{ typ, key, trust, password string }{{"PEM", files.Path("java"), files.Path("ca"), ""}}
	if keytool, err := exec.LookPath("keytool"); err == nil {
		stores = append(stores, jksStores(t, keytool, files, dir))
	} else {
		t.Log("keytool not installed: JKS stores not tried")
	}
	for _, st := range stores {
		path := fmt.Sprintf("/tls-java-%s", st.typ)
		curator.RunTLSCheck(t, secure, path, st.key, st.trust, st.typ, st.password, subject)

		// The node is the Java client's certificate's alone: the Go
		// client with the same certificate reads it, one without none.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		anon, err := zk.Connect(ctx, srv.Addr())
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		_, _, err = anon.Get(ctx, path)
		anon.Close()
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s: a client without the certificate reads %s: %v", st.typ, path, err)
		}
		tc, err := tlsconf.ClientConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: files.Path("java")},
			TrustStore: tlsconf.Store{Location: files.Path("ca")}, HostnameVerification: true}, "")
		if err != nil {
			t.Fatal(err)
		}
		same, err := zk.Connect(ctx, secure, zk.WithTLS(tc))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		acl, _, err := same.GetACL(ctx, path)
		same.Close()
		cancel()
		if err != nil || len(acl) != 1 || acl[0].ID != (zk.Id{Scheme: "x509", ID: subject}) {
			t.Fatalf("%s: ACL %+v, %v", st.typ, acl, err)
		}
	}
}

// jksStores converts the PEM key store of "java" and the CA into JKS
// stores with keytool, the way Java users make them.
func jksStores(t *testing.T, keytool string, files *tlstest.Files, dir string) struct{ typ, key, trust, password string } {
	t.Helper()
	cert, err := tlsconf.LoadKeyStore(tlsconf.Store{Location: files.Path("java")})
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	p12 := filepath.Join(dir, "java.p12")
	data, err := encodePKCS12(cert.PrivateKey, leaf, files.CA.Cert, "secret")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p12, data, 0o600)
	run := func(args ...string) {
		if out, err := exec.Command(keytool, args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %v: %v\n%s", args, err, out)
		}
	}
	jks := filepath.Join(dir, "java.jks")
	trust := filepath.Join(dir, "trust.jks")
	run("-importkeystore", "-srckeystore", p12, "-srcstoretype", "PKCS12", "-srcstorepass", "secret",
		"-destkeystore", jks, "-deststoretype", "JKS", "-deststorepass", "secret", "-noprompt")
	run("-importcert", "-noprompt", "-alias", "ca", "-file", files.Path("ca"), "-keystore", trust, "-storetype", "JKS", "-storepass", "secret")
	return struct{ typ, key, trust, password string }{"JKS", jks, trust, "secret"}
}

// TestZkCliOverTLS: Apache's zkCli.sh, configured for TLS as the
// ZooKeeper SSL guide says (zookeeper.client.secure, the Netty socket,
// zookeeper.ssl.* stores; on Debian the Netty jars added to the class
// path), creates and reads a node on zkgo's TLS port as its x509 user.
func TestZkCliOverTLS(t *testing.T) {
	const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"
	if _, err := os.Stat(zkCli); err != nil {
		t.Skipf("%s not installed (apt-get install zookeeper)", zkCli)
	}
	cp := []string{"/etc/zookeeper/conf", filepath.Join(curator.JavaDir, "zookeeper.jar")}
	for _, j := range append([]string{"zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar"}, curator.NettyJars...) {
		p := filepath.Join(curator.JavaDir, j)
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s missing", p)
		}
		cp = append(cp, p)
	}
	dir := t.TempDir()
	files := tlstest.WriteFiles(t, dir, "server", "zkcli")
	cfg, err := tlsconf.ServerConfig(tlsconf.Options{
		KeyStore: tlsconf.Store{Location: files.Path("server")}, TrustStore: tlsconf.Store{Location: files.Path("ca")},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.TLS, o.SecureAddr = cfg, "127.0.0.1:0" }))
	flags := strings.Join([]string{
		"-cp", strings.Join(cp, ":"),
		"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.client.secure=true",
		"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"-Dzookeeper.ssl.keyStore.location=" + files.Path("zkcli"), "-Dzookeeper.ssl.keyStore.type=PEM",
		"-Dzookeeper.ssl.trustStore.location=" + files.Path("ca"), "-Dzookeeper.ssl.trustStore.type=PEM",
	}, " ")
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", append([]string{zkCli, "-server", srv.SecureAddr().String()}, args...)...)
		cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS="+flags, "ZOO_LOG_DIR="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("zkCli.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("create", "/zkcli-tls", "hello")
	if out := run("get", "/zkcli-tls"); !strings.Contains(out, "hello") {
		t.Fatalf("get over TLS:\n%s", out)
	}
	if out := run("getAcl", "/zkcli-tls"); !strings.Contains(out, "world") {
		t.Fatalf("getAcl over TLS:\n%s", out)
	}
	if out := run("whoami"); !strings.Contains(out, "x509") || !strings.Contains(out, "CN=zkcli,O=zkgo") {
		t.Fatalf("whoami over TLS:\n%s", out)
	}
}
