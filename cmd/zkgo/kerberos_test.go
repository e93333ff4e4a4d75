package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/testkdc"
	"github.com/zkgo/zkgo/zk"
)

// Kerberos configured the Java way: the JAAS file and krb5.conf in
// SERVER_JVMFLAGS, kerberos.removeRealmFromPrincipal in zoo.cfg. The Go
// client authenticates as sasl:client and a stale keytab is refused; a
// Server section whose keytab cannot be read stops the server, as
// ZooKeeper's failed login does.
func TestServerKerberosFromJVMFlags(t *testing.T) {
	k := testkdc.New(t)
	skt := k.Keytab(t, "zookeeper/localhost")
	ckt := k.Keytab(t, "client")
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas.conf")
	os.WriteFile(jaas, []byte(`Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true keyTab="`+skt+`" storeKey=true useTicketCache=false
  principal="zookeeper/localhost@`+testkdc.Realm+`";
};
`), 0o600)
	cfg := dropinConfig(t, dir, "kerberos.removeRealmFromPrincipal=true\nsuperUser=client\n")
	flags := "-Djava.security.auth.login.config=" + jaas + " -Djava.security.krb5.conf=" + k.Krb5Conf +
		" -Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider -Dsun.security.krb5.debug=true"
	cmd := exec.Command(binary, "server", cfg)
	cmd.Env = serverEnv("SERVER_JVMFLAGS=" + flags)
	_, addr, logs := startServerCmd(t, cmd)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := zk.Connect(ctx, addr, zk.WithKerberos(zk.Kerberos{Keytab: ckt, Principal: "client", Krb5Conf: k.Krb5Conf}))
	if err != nil {
		t.Fatalf("Kerberos client: %v\n%s", err, logs.String())
	}
	defer c.Close()
	who, err := c.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ci := range who {
		ids = append(ids, ci.AuthScheme+":"+ci.User)
	}
	if got := strings.Join(ids, " "); !strings.Contains(got, "sasl:client") || strings.Contains(got, "@") || !strings.Contains(got, "super:") {
		t.Errorf("whoAmI: %s", got)
	}
	if !strings.Contains(logs.String(), "SASL GSSAPI (Kerberos) authentication enabled") {
		t.Errorf("no start message in the log:\n%s", logs.String())
	}

	if err := k.RandKey("client"); err != nil {
		t.Fatal(err)
	}
	if _, err := zk.Connect(ctx, addr, zk.WithKerberos(zk.Kerberos{Keytab: ckt, Principal: "client", Krb5Conf: k.Krb5Conf})); !errors.Is(err, zk.ErrAuthFailed) {
		t.Errorf("stale keytab: %v", err)
	}

	// A keytab the server cannot read: it does not start.
	os.WriteFile(jaas, []byte(strings.ReplaceAll(mustRead(t, jaas), skt, filepath.Join(dir, "missing.keytab"))), 0o600)
	bad := exec.CommandContext(ctx, binary, "server", dropinConfig(t, t.TempDir(), ""))
	bad.Env = serverEnv("SERVER_JVMFLAGS=" + flags)
	out, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "zkgo server: Kerberos:") || !strings.Contains(string(out), "missing.keytab") {
		t.Errorf("server with a missing keytab: %v\n%s", err, out)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
