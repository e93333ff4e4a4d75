package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parseWithFlags(t *testing.T, text, flags string) (*Config, []string, error) {
	t.Helper()
	var j JVM
	if err := j.AddFlags(flags, "SERVER_JVMFLAGS"); err != nil {
		t.Fatal(err)
	}
	return Parse(strings.NewReader("dataDir=/d\ntickTime=2000\n"+text), "zoo.cfg", WithJVM(&j))
}

func TestSystemPropertiesApplied(t *testing.T) {
	c, w, err := parseWithFlags(t, "", "-Xmx1000m -Dzookeeper.log.dir=/var/log/zk -Dlog4j.configuration=file:/x "+
		"-Djute.maxbuffer=0x200000 -Dreadonlymode.enabled=true -Dznode.container.checkIntervalMs=5000 "+
		"-Dzookeeper.DigestAuthenticationProvider.superDigest=super:abc= -Dzookeeper.extendedTypesEnabled=true "+
		"-Dzookeeper.4lw.commands.whitelist=ruok,mntr -Dzookeeper.admin.serverPort=0 -Dzookeeper.skipACL=yes "+
		"-Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider "+
		"-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory "+
		"-Dzookeeper.ssl.keyStore.location=/k.pem -Dzookeeper.ssl.clientAuth=want "+
		"-Djava.security.auth.login.config=/etc/zk/jaas.conf -Dzookeeper.sasl.serverconfig=ZkServer -Dzookeeper.superUser=admin")
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxBuffer != 0x200000 || !c.ReadOnlyMode || c.ContainerCheckInterval.Milliseconds() != 5000 ||
		c.SuperDigest != "super:abc=" || !c.ExtendedTypesEnabled || !c.FourLetterWords["ruok"] || !c.FourLetterWords["mntr"] ||
		c.Admin.ServerPort != 0 || !c.SkipACL || !c.SASLProvider || c.SSL.KeyStore.Location != "/k.pem" || c.SSL.ClientAuth != "want" ||
		c.JAASConfigFile != "/etc/zk/jaas.conf" || c.SASLSection != "ZkServer" || c.SASLSuperUser != "admin" {
		t.Fatalf("not applied: %+v", c)
	}
	// One summary line for what has no meaning to zkgo, nothing else.
	if len(w) != 1 || !strings.Contains(w[0], "JVM flags: 3 without a meaning for zkgo ignored (-Xmx1000m -Dzookeeper.log.dir -Dlog4j.configuration)") {
		t.Fatalf("warnings %q", w)
	}
	if len(c.SystemProperties) != 15 || c.SystemProperties[0] != "-Djute.maxbuffer (SERVER_JVMFLAGS)" {
		t.Fatalf("SystemProperties %q", c.SystemProperties)
	}
}

// Which side wins, as in ZooKeeper: zoo.cfg over -Dzookeeper.KEY (zoo.cfg
// sets the property after the JVM starts); -D for what ZooKeeper reads
// only as a property.
func TestSystemPropertiesPrecedence(t *testing.T) {
	tests := []struct {
		name, cfg, flags string
		check            func(*Config) bool
		warned           string // substring of a warning; "" none
	}{
		{"zoo.cfg wins", "snapCount=500\n", "-Dzookeeper.snapCount=700", func(c *Config) bool { return c.SnapCount == 500 },
			"SERVER_JVMFLAGS: -Dzookeeper.snapCount: zoo.cfg's snapCount (zoo.cfg:3) wins"},
		{"same value", "snapCount=500\n", "-Dzookeeper.snapCount=500", func(c *Config) bool { return c.SnapCount == 500 }, ""},
		{"property alone", "", "-Dzookeeper.snapCount=700", func(c *Config) bool { return c.SnapCount == 700 }, ""},
		{"property over zkgo spelling", "zookeeper.skipACL=no\n", "-Dzookeeper.skipACL=yes", func(c *Config) bool { return c.SkipACL },
			"overrides zoo.cfg:3 (zookeeper.skipACL in zoo.cfg is a zkgo spelling"},
		{"jute.maxbuffer property wins", "jute.maxbuffer=1000\n", "-Djute.maxbuffer=2000", func(c *Config) bool { return c.MaxBuffer == 2000 },
			"SERVER_JVMFLAGS: -Djute.maxbuffer: overrides zoo.cfg:3 (jute.maxbuffer), as ZooKeeper reads only the system property"},
		{"JAAS property wins", "zkgo.sasl.jaasConfig=a.conf\n", "-Djava.security.auth.login.config==file:/etc/b.conf",
			func(c *Config) bool { return c.JAASConfigFile == "/etc/b.conf" }, "overrides zoo.cfg:3 (zkgo.sasl.jaasConfig)"},
		{"last flag wins", "", "-Dzookeeper.snapCount=10 -Dzookeeper.snapCount=20", func(c *Config) bool { return c.SnapCount == 20 },
			"given again in SERVER_JVMFLAGS with another value"},
		{"zoo.cfg only", "", "-Dzookeeper.clientPort=3000 -Dzookeeper.sslQuorum=true", func(c *Config) bool { return c.ClientPort == 0 && !c.SSLQuorum },
			"-Dzookeeper.clientPort: ZooKeeper reads clientPort only from zoo.cfg"},
		{"multiAddress from property", "", "-Dzookeeper.multiAddress.enabled=true", func(c *Config) bool { return c.MultiAddressEnabled }, ""},
		{"misspelt", "", "-Dzookeeper.jute.maxbuffer=5", func(c *Config) bool { return c.MaxBuffer == DefaultMaxBuffer },
			"ZooKeeper reads -Djute.maxbuffer, without the zookeeper. prefix"},
		{"java server", "", "-Dzookeeper.preAllocSize=1000", func(c *Config) bool { return true },
			"SERVER_JVMFLAGS: -Dzookeeper.preAllocSize: setting of the Java server; ignored"},
		{"unprefixed java server", "", "-Dfollower.nodelay=false", func(c *Config) bool { return true }, "-Dfollower.nodelay: setting of the Java server"},
		{"krb5.conf", "", "-Djava.security.krb5.conf=/etc/krb5.conf", func(c *Config) bool { return c.Kerberos.Krb5Conf == "/etc/krb5.conf" }, ""},
		{"krb5.conf wins", "zkgo.krb5.conf=/a\n", "-Djava.security.krb5.conf=/b", func(c *Config) bool { return c.Kerberos.Krb5Conf == "/b" }, "overrides zoo.cfg:3 (zkgo.krb5.conf)"},
		{"kerberos names", "kerberos.removeRealmFromPrincipal=true\n", "-Dzookeeper.kerberos.removeHostFromPrincipal=TRUE",
			func(c *Config) bool { return c.Kerberos.RemoveHostFromPrincipal && c.Kerberos.RemoveRealmFromPrincipal }, ""},
		{"krb5 realm and kdc", "", "-Djava.security.krb5.realm=EX.COM -Djava.security.krb5.kdc=kdc1", func(c *Config) bool { return c.Kerberos.Realm == "EX.COM" && c.Kerberos.KDC == "kdc1" }, ""},
		{"jvm kerberos debug", "", "-Dsun.security.krb5.debug=true", func(c *Config) bool { return true }, "setting of the Java server; ignored"},
		{"unknown zookeeper property", "", "-Dzookeeper.noSuchThing=1", func(c *Config) bool { return true },
			"-Dzookeeper.noSuchThing: not a ZooKeeper server property zkgo knows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, w, err := parseWithFlags(t, tt.cfg, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("wrong result: %+v", c)
			}
			found := tt.warned == ""
			for _, s := range w {
				found = found || strings.Contains(s, tt.warned)
			}
			if !found || tt.warned == "" && len(w) > 0 {
				t.Errorf("warnings %q, want %q", w, tt.warned)
			}
		})
	}
}

// A bad value gets the zoo.cfg key's error, naming the flag instead of the
// line.
func TestSystemPropertiesErrors(t *testing.T) {
	for _, tt := range []struct{ key, value string }{
		{"jute.maxbuffer", "lots"},
		{"zookeeper.admin.serverPort", "70000"},
		{"zookeeper.ssl.clientAuth", "maybe"},
		{"zookeeper.DigestAuthenticationProvider.digestAlg", "MD5"},
	} {
		cfgKey, _ := classifySystemProperty(tt.key)
		_, _, fileErr := Parse(strings.NewReader("dataDir=/d\n"+cfgKey+"="+tt.value+"\n"), "zoo.cfg")
		_, _, flagErr := parseWithFlags(t, "", "-D"+tt.key+"="+tt.value)
		if fileErr == nil || flagErr == nil {
			t.Fatalf("%s: no error: %v / %v", tt.key, fileErr, flagErr)
		}
		want := strings.Replace(fileErr.Error(), "zoo.cfg:2: "+cfgKey, "SERVER_JVMFLAGS: -D"+tt.key, 1)
		if flagErr.Error() != want {
			t.Errorf("error %q, want %q", flagErr, want)
		}
	}
}

// Load reads the users of a JAAS file named by the property, relative to
// the working directory as in Java, and names the property when it fails.
func TestSystemPropertyJAASLoad(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "jaas.conf"), []byte("Server {\n org.apache.zookeeper.server.auth.DigestLoginModule required\n user_bob=\"pw\";\n};\n"), 0o600)
	cfg := filepath.Join(dir, "zoo.cfg")
	os.WriteFile(cfg, []byte("dataDir="+dir+"\nclientPort=2181\nsessionRequireClientSASLAuth=true\n"), 0o644)
	jvm := func(flags string) *JVM {
		var j JVM
		if err := j.AddFlags(flags, "SERVER_JVMFLAGS"); err != nil {
			t.Fatal(err)
		}
		return &j
	}
	c, _, err := Load(cfg, WithJVM(jvm("-Djava.security.auth.login.config="+filepath.Join(dir, "jaas.conf"))))
	if err != nil || c.SASLUsers["bob"] != "pw" || len(c.EnforceAuthSchemes) != 1 {
		t.Fatalf("%v %+v", err, c)
	}
	_, _, err = Load(cfg, WithJVM(jvm("-Djava.security.auth.login.config="+filepath.Join(dir, "missing.conf"))))
	if err == nil || !strings.HasPrefix(err.Error(), "SERVER_JVMFLAGS: -Djava.security.auth.login.config: open ") {
		t.Fatalf("missing JAAS file: %v", err)
	}
	if c, w, err := Load(cfg); err != nil || c.SASLUsers != nil || !strings.Contains(strings.Join(w, "\n"), "no JAAS file is given (-Djava.security.auth.login.config") {
		t.Fatalf("enforced sasl without a JAAS file: %v %q", err, w)
	}
}
