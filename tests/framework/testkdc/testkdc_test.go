package testkdc

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

var kdc = Shared()

func TestMain(m *testing.M) {
	code := m.Run()
	kdc.Stop()
	os.Exit(code)
}

// A keytab the KDC wrote gets a ticket with MIT's kinit, and a key change
// (RandKey) makes the keytab stale.
func TestKinitWithKeytab(t *testing.T) {
	k := kdc.Get(t)
	kt := k.Keytab(t, "client")
	kinit, err := exec.LookPath("kinit")
	if err != nil {
		t.Skip("skipping: kinit not installed (krb5-user)")
	}
	cmd := exec.Command(kinit, "-k", "-t", kt, Principal("client"))
	cmd.Env = k.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kinit: %v: %s\n%s", err, out, k.LogTail())
	}
	if err := k.RandKey("client"); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(kinit, "-k", "-t", kt, Principal("client"))
	cmd.Env = k.Env()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("kinit with a stale keytab succeeded: %s", out)
	}
	if !strings.Contains(string(out), "kinit") {
		t.Errorf("kinit output: %s", out)
	}
}
