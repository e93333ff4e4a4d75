// Package kazoo_test runs Python's kazoo client (Debian's python3-kazoo)
// against zkgo; the tests skip when it is not installed.
package kazoo_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/internal/tlsconf"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/tlstest"
	"github.com/zkgo/zkgo/zktest"
)

// python returns a Python 3 that can import kazoo, or skips.
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exe, err := exec.LookPath(p); err == nil && exec.Command(exe, "-c", "import kazoo").Run() == nil {
			return exe
		}
	}
	t.Skip("python3 with kazoo is not installed (apt-get install python3-kazoo)")
	return ""
}

const tlsScript = `
import sys
from kazoo.client import KazooClient
from kazoo.security import CREATOR_ALL_ACL
hosts, ca, pem = sys.argv[1], sys.argv[2], sys.argv[3]
zk = KazooClient(hosts=hosts, use_ssl=True, ca=ca, certfile=pem, keyfile=pem, verify_certs=True, timeout=10)
zk.start(timeout=20)
zk.create("/kazoo-tls", b"from kazoo", acl=CREATOR_ALL_ACL)
data, _ = zk.get("/kazoo-tls")
acls, _ = zk.get_acls("/kazoo-tls")
lock = zk.Lock("/kazoo-lock", "kazoo")
if not lock.acquire(timeout=10):
    raise SystemExit("FAIL lock")
lock.release()
zk.stop()
print("PASS", data.decode(), acls[0].id.scheme + ":" + acls[0].id.id)
`

// TestKazooOverTLS: kazoo with use_ssl and a client certificate talks to
// zkgo's TLS port; its certificate is its x509 identity.
func TestKazooOverTLS(t *testing.T) {
	py := python(t)
	files := tlstest.WriteFiles(t, t.TempDir(), "server", "kazoo")
	cfg, err := tlsconf.ServerConfig(tlsconf.Options{
		KeyStore: tlsconf.Store{Location: files.Path("server")}, TrustStore: tlsconf.Store{Location: files.Path("ca")},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.TLS, o.SecureAddr = cfg, "127.0.0.1:0"
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := filepath.Join(t.TempDir(), "tls.py")
	if err := writeFile(script, tlsScript); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, py, script, srv.SecureAddr().String(), files.Path("ca"), files.Path("kazoo")).CombinedOutput()
	got := strings.TrimSpace(string(out))
	if err != nil || !strings.HasSuffix(got, "PASS from kazoo x509:CN=kazoo,O=zkgo") {
		t.Fatalf("kazoo over TLS: %v\n%s", err, out)
	}
}

const reconfigScript = `
import sys, time
from kazoo.client import KazooClient
from kazoo.exceptions import NewConfigNoQuorumError, BadVersionError, ReconfigInProcessError, ConnectionLoss
hosts, line4, members = sys.argv[1], sys.argv[2], sys.argv[3]
zk = KazooClient(hosts=hosts, timeout=10)
zk.start(timeout=20)
try:
    zk.reconfig(joining=line4, leaving=None, new_members=None, from_config=0x7777)
    raise SystemExit("FAIL stale version accepted")
except BadVersionError:
    pass
deadline = time.time() + 60
while True:
    try:
        data, _ = zk.reconfig(joining=line4, leaving=None, new_members=None)
        break
    except (NewConfigNoQuorumError, ReconfigInProcessError):
        if time.time() > deadline:
            raise
        time.sleep(0.05)
if b"server.4=" not in data:
    raise SystemExit("FAIL added: %r" % data)
while True:
    t0 = time.time()
    try:
        data, _ = zk.reconfig(joining=None, leaving="4", new_members=None)
        break
    except ReconfigInProcessError:
        if time.time() > deadline:
            raise
        time.sleep(0.05)
    except ConnectionLoss:
        # The outcome is unknown (a connection lost while the reconfig was
        # in flight: kazoo drops a connection whose ping goes unanswered,
        # and the ping is answered after the reconfig, in order). Look.
        print("leave: connection lost after %.2f s" % (time.time() - t0))
        data = None
        while data is None:
            try:
                data, _ = zk.get("/zookeeper/config")
            except ConnectionLoss:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        if b"server.4=" not in data:
            break
if b"server.4=" in data:
    raise SystemExit("FAIL removed: %r" % data)
zk.stop()
print("PASS")
`

// TestKazooReconfig: kazoo's client.reconfig adds a fourth server to a
// zkgo ensemble and removes it; a stale from_config is BadVersionError.
func TestKazooReconfig(t *testing.T) {
	py := python(t)
	// The script's session asks for 10 s; the default bound (20 ticks of
	// 100 ms) would make it 2 s, and kazoo drops a connection that is
	// silent for a third of that after its ping: a reconfig in flight on
	// the connection (its ping is answered after it, in order, as on
	// ZooKeeper) took that long once under CI's load.
	e := zktest.StartEnsemble(t, 4, 3, func(o *server.Options) {
		o.ReconfigEnabled, o.SkipACL, o.MaxSessionTimeout = true, true, 20*time.Second
	})
	e.Start(3, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := filepath.Join(t.TempDir(), "reconfig.py")
	if err := writeFile(script, reconfigScript); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, py, script, strings.Join(e.ClientAddrs[:3], ","), e.Line(3), "").CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "PASS") {
		t.Fatalf("kazoo reconfig: %v\n%s", err, out)
	}
	t.Logf("kazoo reconfig:\n%s", out)
}
