package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// saslEnv is a directory with a data directory, the JAAS file jaas.conf
// (unless jaas is nil) and zoo.cfg (base settings then extra); load loads
// it as zkServer.sh would run ZooKeeper with SERVER_JVMFLAGS=flags, where
// JAAS in flags stands for the path of jaas.conf.
type saslEnv struct {
	dir, jaas, cfg string
}

func newSASLEnv(t *testing.T, jaas *string, extra string) saslEnv {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	e := saslEnv{dir: dir, jaas: filepath.Join(dir, "jaas.conf"), cfg: filepath.Join(dir, "zoo.cfg")}
	if jaas != nil {
		if err := os.WriteFile(e.jaas, []byte(*jaas), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	text := "tickTime=2000\ndataDir=" + filepath.ToSlash(data) + "\nclientPort=2181\n" + extra
	if err := os.WriteFile(e.cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e saslEnv) load(t *testing.T, flags string) (*Config, []string, error) {
	t.Helper()
	var j JVM
	if err := j.AddFlags(strings.ReplaceAll(flags, "JAAS", e.jaas), "SERVER_JVMFLAGS"); err != nil {
		t.Fatal(err)
	}
	return Load(e.cfg, WithJVM(&j))
}

// saslWarnings are the warnings about SASL or the JAAS file.
func saslWarnings(warnings []string) []string {
	var out []string
	for _, w := range warnings {
		if strings.Contains(w, "SASL") || strings.Contains(w, "sasl") || strings.Contains(w, "JAAS") {
			out = append(out, w)
		}
	}
	return out
}

func ptr(s string) *string { return &s }

// kazoo's test harness (kazoo/testing/common.py) writes this zoo.cfg, an
// empty jaas.conf unless ZOOKEEPER_JAAS_AUTH is set, and runs java with
// these flags (harness.py adds the superDigest one for ZooKeeper 3.5+).
const (
	kazooZooCfg = "maxClientCnxns=0\nadmin.serverPort=0\n" +
		"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n" +
		"4lw.commands.whitelist=*\nreconfigEnabled=true\n"
	kazooFlags = "-Dfile.encoding=UTF-8 -Dreadonlymode.enabled=true -Dzookeeper.log.dir=/tmp/kz/log " +
		"-Dzookeeper.root.logger=INFO,CONSOLE -Dlog4j.configuration=file:/tmp/kz/log4j.properties " +
		"-Djava.awt.headless=true -Djava.security.auth.login.config=JAAS " +
		"-Dzookeeper.DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU="
	kazooDigestJAAS = `
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="super_secret"
    user_jaasuser="jaas_password";
};`
	kazooGSSAPIJAAS = `
Server {
  com.sun.security.auth.module.Krb5LoginModule required
  debug=true
  isInitiator=false
  useKeyTab=true
  keyTab="/kdc/server.keytab"
  storeKey=true
  useTicketCache=false
  principal="zookeeper/127.0.0.1@KAZOOTEST.ORG";
};`
	clientOnlyJAAS = `
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="bob"
    password="bobsecret";
};`
	quorumOnlyJAAS = `
QuorumServer {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_test="test";
};
QuorumLearner {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="test"
    password="test";
};`
)

// A JAAS file without the server's section, as foreign tools and
// deployments pass it, does not stop the server: as in ZooKeeper, server
// SASL is off, with one warning naming the file and its sections. Only a
// file that cannot be read or parsed is an error (ZooKeeper's JAAS
// Configuration fails to load then, and the server with it).
func TestLoadJAASWithoutServerSection(t *testing.T) {
	tests := []struct {
		name  string
		jaas  string
		extra string // zoo.cfg lines
		flags string
		users map[string]string
		warn  []string // substrings of the one SASL warning; none if nil
		err   string
	}{
		{name: "kazoo harness (empty file)", jaas: "", extra: kazooZooCfg, flags: kazooFlags,
			warn: []string{"SERVER_JVMFLAGS: -Djava.security.auth.login.config: ", "jaas.conf has no JAAS sections, so none named \"Server\"", "server SASL is off"}},
		{name: "kazoo harness, digest", jaas: kazooDigestJAAS, extra: kazooZooCfg, flags: kazooFlags,
			users: map[string]string{"super": "super_secret", "jaasuser": "jaas_password"}},
		{name: "kazoo harness, gssapi", jaas: kazooGSSAPIJAAS, extra: kazooZooCfg, flags: kazooFlags,
			warn: nil}, // Kerberos: the keytab is read by zkgo server (internal/krb)
		{name: "comments only", jaas: "// nothing here\n/* nor here */\n", flags: "-Djava.security.auth.login.config=JAAS",
			warn: []string{"jaas.conf has no JAAS sections", "server SASL is off"}},
		{name: "Client only", jaas: clientOnlyJAAS, flags: "-Xmx512m -Djava.security.auth.login.config=JAAS",
			warn: []string{`jaas.conf has no JAAS section named "Server" (its sections: Client)`, "server SASL is off"}},
		{name: "QuorumServer and QuorumLearner only", jaas: quorumOnlyJAAS, flags: "-Djava.security.auth.login.config=JAAS",
			warn: []string{`jaas.conf has no JAAS section named "Server" (its sections: QuorumLearner, QuorumServer)`}},
		{name: "empty Server section", jaas: "Server { };\n" + clientOnlyJAAS, flags: "-Djava.security.auth.login.config=JAAS",
			warn: []string{"jaas.conf: JAAS section Server has no login module entries", "server SASL is off"}},
		{name: "serverconfig names a missing section", jaas: kazooDigestJAAS, flags: "-Djava.security.auth.login.config=JAAS -Dzookeeper.sasl.serverconfig=ZkServer",
			warn: []string{`has no JAAS section named "ZkServer" (its sections: Server)`}},
		{name: "from zoo.cfg", jaas: clientOnlyJAAS, extra: "zkgo.sasl.jaasConfig=jaas.conf\n",
			warn: []string{"zoo.cfg:4: zkgo.sasl.jaasConfig: ", `has no JAAS section named "Server"`}},
		{name: "unparsable", jaas: "Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a= ; };",
			flags: "-Djava.security.auth.login.config=JAAS", err: "jaas.conf:1: expected a value for option user_a"},
		{name: "missing file", flags: "-Djava.security.auth.login.config=JAAS.missing", err: "SERVER_JVMFLAGS: -Djava.security.auth.login.config: open "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSASLEnv(t, ptr(tt.jaas), tt.extra)
			c, w, err := e.load(t, tt.flags)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v (warnings %q)", err, w)
			}
			if !reflect.DeepEqual(c.SASLUsers, tt.users) {
				t.Errorf("SASLUsers = %v, want %v", c.SASLUsers, tt.users)
			}
			sw := saslWarnings(w)
			if tt.warn == nil {
				if len(sw) != 0 {
					t.Errorf("SASL warnings %q, want none", sw)
				}
				return
			}
			if len(sw) != 1 {
				t.Fatalf("SASL warnings %q, want one", sw)
			}
			t.Log(sw[0])
			for _, s := range tt.warn {
				if !strings.Contains(sw[0], s) {
					t.Errorf("warning %q lacks %q", sw[0], s)
				}
			}
			if strings.Contains(tt.flags, "JAAS") && !strings.Contains(sw[0], e.jaas) {
				t.Errorf("warning %q does not name the file %s", sw[0], e.jaas)
			}
		})
	}
}

// Enforcing sasl (sessionRequireClientSASLAuth=true, or enforce.auth with
// the sasl scheme) without any SASL user starts the server, as ZooKeeper
// starts with the sasl provider registered, with one warning that no
// client can authenticate; the server then refuses every session at its
// first request (cmd/zkgo's TestServerRequireSASLWithoutUsers).
func TestLoadSASLEnforcedWithoutUsers(t *testing.T) {
	const provider = "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"
	tests := []struct {
		name    string
		jaas    *string // nil: no file
		extra   string
		flags   string
		schemes []string
		warn    []string // substrings of the one SASL warning
	}{
		{name: "no JAAS file", extra: "sessionRequireClientSASLAuth=true\n" + provider, schemes: []string{"sasl"},
			warn: []string{"zoo.cfg:4: sessionRequireClientSASLAuth: sasl authentication is enforced but no client can authenticate with SASL: no JAAS file is given", "SessionClosedRequireSaslAuth"}},
		{name: "kazoo harness", jaas: ptr(""), extra: kazooZooCfg + "sessionRequireClientSASLAuth=true\n", flags: kazooFlags, schemes: []string{"sasl"},
			warn: []string{"sasl authentication is enforced but no client can authenticate with SASL: ", "jaas.conf has no JAAS sections"}},
		{name: "Client only, as a flag", jaas: ptr(clientOnlyJAAS), extra: provider,
			flags: "-Djava.security.auth.login.config=JAAS -Dzookeeper.sessionRequireClientSASLAuth=true", schemes: []string{"sasl"},
			warn: []string{"SERVER_JVMFLAGS: -Dzookeeper.sessionRequireClientSASLAuth: sasl authentication is enforced", `(its sections: Client)`}},
		{name: "enforce.auth sasl", jaas: ptr(quorumOnlyJAAS), extra: provider + "enforce.auth.enabled=true\nenforce.auth.schemes=sasl\n",
			flags: "-Djava.security.auth.login.config=JAAS", schemes: []string{"sasl"},
			warn: []string{"zoo.cfg:6: enforce.auth.schemes: sasl authentication is enforced", `(its sections: QuorumLearner, QuorumServer)`}},
		{name: "enforce.auth sasl and digest", extra: provider + "enforce.auth.enabled=true\nenforce.auth.schemes=sasl,digest\n",
			schemes: []string{"sasl", "digest"}, warn: []string{"sasl authentication is enforced", "no JAAS file is given", "; a session not authenticated with digest is closed"}},
		{name: "section without users", jaas: ptr("Server { org.example.OtherLoginModule required useKeyTab=true; };"),
			extra: "sessionRequireClientSASLAuth=true\n" + provider, flags: "-Djava.security.auth.login.config=JAAS", schemes: []string{"sasl"},
			warn: []string{"sasl authentication is enforced", "JAAS section Server has no user_NAME"}},
		{name: "without the provider", extra: "sessionRequireClientSASLAuth=true\n", schemes: []string{"sasl"},
			warn: []string{"sasl authentication is enforced", "ZooKeeper 3.8 would not start at all"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSASLEnv(t, tt.jaas, tt.extra)
			c, w, err := e.load(t, tt.flags)
			if err != nil {
				t.Fatalf("Load: %v (warnings %q)", err, w)
			}
			if !reflect.DeepEqual(c.EnforceAuthSchemes, tt.schemes) || len(c.SASLUsers) != 0 || !c.SASLProvider {
				t.Errorf("EnforceAuthSchemes %q, SASLUsers %v, SASLProvider %v", c.EnforceAuthSchemes, c.SASLUsers, c.SASLProvider)
			}
			sw := saslWarnings(w)
			if len(sw) != 1 {
				t.Fatalf("SASL warnings %q, want one", sw)
			}
			t.Log(sw[0])
			for _, s := range tt.warn {
				if !strings.Contains(sw[0], s) {
					t.Errorf("warning %q lacks %q", sw[0], s)
				}
			}
			if named := strings.Contains(tt.extra, "SASLAuthenticationProvider"); named == strings.Contains(sw[0], "would not start") {
				t.Errorf("provider named %v, warning %q", named, sw[0])
			}
			if tt.jaas != nil && !strings.Contains(sw[0], e.jaas) {
				t.Errorf("warning %q does not name the file %s", sw[0], e.jaas)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}
