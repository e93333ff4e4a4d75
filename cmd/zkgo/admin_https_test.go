package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/internal/tlsconf"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
)

// TestAdminHTTPSLikeApache runs zkgo and Apache ZooKeeper 3.8 with the
// same AdminServer TLS keys in zoo.cfg (admin.forceHttps or
// admin.portUnification, and keytool-made ssl.quorum.* stores), and
// checks that both serve /commands/ruok over HTTPS the same way, and
// plain HTTP only on the unified port.
func TestAdminHTTPSLikeApache(t *testing.T) {
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("keytool not installed (Java): no keytool-made stores, and no Apache ZooKeeper to compare with")
	}
	dir := t.TempDir()
	ks, ts := filepath.Join(dir, "admin.keystore.p12"), filepath.Join(dir, "admin.truststore.p12")
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(keytool, args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %v: %v\n%s", args, err, out)
		}
	}
	run("-genkeypair", "-alias", "admin", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=localhost, O=zkgo",
		"-ext", "SAN=dns:localhost,ip:127.0.0.1", "-validity", "2", "-storetype", "PKCS12", "-keystore", ks, "-storepass", "secret123")
	pemPath := filepath.Join(dir, "admin.pem")
	run("-exportcert", "-rfc", "-alias", "admin", "-keystore", ks, "-storepass", "secret123", "-file", pemPath)
	run("-importcert", "-noprompt", "-alias", "admin", "-file", pemPath, "-storetype", "PKCS12", "-keystore", ts, "-storepass", "secret123")
	cert, err := tlsconf.LoadKeyStore(tlsconf.Store{Location: ks, Password: "secret123"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "localhost"}, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	// A bound, not a wait: under the whole suite Apache's first HTTPS
	// answer once took longer than 20 s.
	hc := &http.Client{Transport: tr, Timeout: time.Minute}

	for _, mode := range []string{"forceHttps", "portUnification"} {
		t.Run(mode, func(t *testing.T) {
			keys := map[string]string{
				"admin." + mode:                  "true",
				"ssl.quorum.keyStore.location":   ks,
				"ssl.quorum.keyStore.password":   "secret123",
				"ssl.quorum.trustStore.location": ts,
				"ssl.quorum.trustStore.password": "secret123",
			}
			type result struct{ https, sts, plain string }
			probe := func(t *testing.T, addr string) result {
				var r result
				resp, err := hc.Get("https://" + addr + "/commands/ruok")
				if err != nil {
					r.https = "error: " + err.Error()
				} else {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					r.https = fmt.Sprintf("%d ruok=%v", resp.StatusCode, strings.Contains(string(body), `"ruok"`) && resp.TLS != nil)
					r.sts = resp.Header.Get("Strict-Transport-Security")
				}
				r.plain = plainRuok(t, addr)
				return r
			}

			// zkgo, from a zoo.cfg with the keys.
			zdir := t.TempDir()
			adminPort := freePortT(t)
			var cfg strings.Builder
			fmt.Fprintf(&cfg, "tickTime=200\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=%d\n", zdir, freePortT(t), adminPort)
			for k, v := range keys {
				fmt.Fprintf(&cfg, "%s=%s\n", k, v)
			}
			cfgPath := filepath.Join(zdir, "zoo.cfg")
			os.WriteFile(cfgPath, []byte(cfg.String()), 0o644)
			_, _, logs := startServerLog(t, cfgPath)
			zaddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(adminPort))
			waitListening(t, zaddr, logs)
			zr := probe(t, zaddr)

			// Apache ZooKeeper 3.8, from the same keys.
			zk, err := apachezk.Start(apachezk.Options{AdminServer: true, ExtraConfig: keys})
			apachezk.SkipIfUnavailable(t, err)
			defer zk.Stop()
			ar := probe(t, zk.AdminAddr())
			t.Logf("zkgo:   %+v", zr)
			t.Logf("Apache: %+v", ar)

			if !strings.HasSuffix(zr.https, "ruok=true") || zr.https != ar.https {
				t.Errorf("HTTPS ruok: zkgo %q, Apache %q", zr.https, ar.https)
			}
			if zr.sts != ar.sts {
				t.Errorf("Strict-Transport-Security: zkgo %q, Apache %q", zr.sts, ar.sts)
			}
			servedPlain := func(s string) bool { return strings.HasPrefix(s, "200 ") }
			if want := mode == "portUnification"; servedPlain(zr.plain) != want || servedPlain(ar.plain) != want {
				t.Errorf("plain HTTP (want served: %v): zkgo %q, Apache %q", want, zr.plain, ar.plain)
			}
		})
	}
}

// plainRuok sends GET /commands/ruok in plain HTTP and describes what
// came back: "200 ruok" when the command answered, else the status line
// or how the connection ended.
func plainRuok(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	io.WriteString(c, "GET /commands/ruok HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
	b, err := io.ReadAll(bufio.NewReader(c))
	s := string(b)
	if strings.HasPrefix(s, "HTTP/1.1 200") && strings.Contains(s, `"ruok"`) {
		return "200 ruok"
	}
	if line, _, _ := strings.Cut(s, "\n"); strings.HasPrefix(line, "HTTP/") {
		return strings.TrimSpace(line)
	}
	if err != nil {
		return fmt.Sprintf("no HTTP answer (%d bytes): %v", len(b), err)
	}
	return fmt.Sprintf("no HTTP answer (%d bytes, then closed)", len(b))
}

func freePortT(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitListening waits for addr to accept connections.
func waitListening(t *testing.T, addr string, logs *syncBuf) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen: %v\n%s", addr, err, logs.String())
		}
	}
}
