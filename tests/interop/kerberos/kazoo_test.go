package kerberos_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kazooScript authenticates with GSSAPI through kazoo and pure-sasl
// (python3-kerberos: MIT's GSS-API library, the initiator's credentials
// from the client keytab KRB5_CLIENT_KTNAME), creates a node with the ACL
// sasl:<principal> and reads it back.
const kazooScript = `
import sys
from kazoo.client import KazooClient
from kazoo.security import make_acl
hosts, principal, path = sys.argv[1:4]
zk = KazooClient(hosts=hosts, sasl_options={"mechanism": "GSSAPI", "service": "zookeeper", "principal": principal})
zk.start(timeout=20)
zk.create(path, b"kazoo", acl=[make_acl("sasl", principal, all=True)])
data, _ = zk.get(path)
acl, _ = zk.get_acls(path)
zk.delete(path)
zk.stop()
print("PASS", data.decode(), acl[0].id.scheme + ":" + acl[0].id.id)
`

func runKazoo(t *testing.T, addr string) string {
	t.Helper()
	// Debian's python3, where python3-kazoo and friends live, before
	// any other in PATH.
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		if python, err = exec.LookPath("python3"); err != nil {
			t.Skip("skipping: python3 not installed")
		}
	}
	check := exec.Command(python, "-c", "import kazoo, puresasl, kerberos")
	if out, err := check.CombinedOutput(); err != nil {
		t.Skipf("skipping: kazoo with GSSAPI needs python3-kazoo, python3-puresasl and python3-kerberos: %s", out)
	}
	_, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	script := filepath.Join(dir, "kazoo_gssapi.py")
	os.WriteFile(script, []byte(kazooScript), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// "localhost": the service principal is zookeeper/<the name kazoo
	// connects to>.
	cmd := exec.CommandContext(ctx, python, script, "localhost:"+port, clientPrincipal, fmt.Sprintf("/kazoo-%d", time.Now().UnixNano()))
	cmd.Env = append(os.Environ(), "KRB5_CONFIG="+kdc.Krb5Conf, "KRB5_CLIENT_KTNAME="+clientKT,
		"KRB5CCNAME=FILE:"+filepath.Join(dir, "ccache"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("kazoo GSSAPI to %s: %v\n%s", addr, err, out)
	}
	line := strings.TrimSpace(string(out))
	line = line[strings.LastIndex(line, "PASS"):]
	t.Log(line)
	return line
}

// TestKazoo: kazoo authenticates with GSSAPI to zkgo and to Apache
// ZooKeeper, with the same result.
func TestKazoo(t *testing.T) {
	sameOnBoth(t, "kazoo", runKazoo)
}
