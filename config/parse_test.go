package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestTLS(t *testing.T) {
	f, err := os.Open("testdata/tls.cfg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, w, err := Parse(f, "tls.cfg")
	if err != nil {
		t.Fatal(err)
	}
	want := TLS{
		KeyStore:             TLSStore{Location: "/path/to/keystore.jks", Password: "password"},
		TrustStore:           TLSStore{Location: "/path/to/truststore.jks", Password: "password"},
		HostnameVerification: true,
	}
	if !reflect.DeepEqual(c.SSL, want) || c.SecureClientPort != 2281 || c.SecureClientAddr() != ":2281" || len(w) != 0 {
		t.Fatalf("SSL %+v, port %d, warnings %v", c.SSL, c.SecureClientPort, w)
	}

	base := "dataDir=/d\nclientPort=2181\nssl.keyStore.location=/k.p12\n"
	pw := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pw, []byte("s3cret\nignored\n"), 0o600)
	for _, tc := range []struct {
		line  string
		check func(*Config) bool
	}{
		{"client.portUnification=true", func(c *Config) bool { return c.ClientPortUnification }},
		{"ssl.clientAuth=WANT", func(c *Config) bool { return c.SSL.ClientAuth == "want" }},
		{"ssl.keyStore.type=pkcs12", func(c *Config) bool { return c.SSL.KeyStore.Type == "PKCS12" }},
		{"ssl.keyStore.passwordPath=" + pw, func(c *Config) bool { return c.SSL.KeyStore.Password == "s3cret" }},
		{"ssl.enabledProtocols=TLSv1.2, TLSv1.3", func(c *Config) bool { return reflect.DeepEqual(c.SSL.EnabledProtocols, []string{"TLSv1.2", "TLSv1.3"}) }},
		{"ssl.ciphersuites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", func(c *Config) bool { return len(c.SSL.CipherSuites) == 1 }},
		{"ssl.hostnameVerification=false", func(c *Config) bool { return !c.SSL.HostnameVerification }},
		{"secureClientPortAddress=127.0.0.1\nsecureClientPort=2281", func(c *Config) bool { return c.SecureClientAddr() == "127.0.0.1:2281" }},
		{"X509AuthenticationProvider.superUser=CN=admin", func(c *Config) bool { return c.X509SuperUser == "CN=admin" }},
		{"authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider", func(c *Config) bool { return true }},
		{"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory", func(c *Config) bool { return true }},
		{"sslQuorum=false", func(c *Config) bool { return true }},
	} {
		c, w, err := parseString(t, base+tc.line+"\n")
		if err != nil || !tc.check(c) || len(w) != 0 {
			t.Errorf("%s: %+v, warnings %v, err %v", tc.line, c, w, err)
		}
	}

	// TLS between members: sslQuorum with its stores.
	q, w, err := parseString(t, base+"sslQuorum=true\nssl.quorum.keyStore.location=/q.p12\nssl.quorum.keyStore.password=pw\nssl.quorum.trustStore.location=/t.p12\nssl.quorum.hostnameVerification=false\n")
	if err != nil || !q.SSLQuorum || q.SSLQuorumStores.KeyStore != (TLSStore{Location: "/q.p12", Password: "pw"}) ||
		q.SSLQuorumStores.TrustStore.Location != "/t.p12" || q.SSLQuorumStores.HostnameVerification || len(w) != 0 {
		t.Fatalf("sslQuorum: %+v %v %v", q, w, err)
	}
	if _, _, err := parseString(t, base+"sslQuorum=true\n"); err == nil {
		t.Error("sslQuorum=true without stores accepted")
	}
	// The rolling switch between plaintext and TLS: portUnification with
	// the stores, sslQuorum not yet on.
	q, w, err = parseString(t, base+"sslQuorum=false\nportUnification=true\nssl.quorum.keyStore.location=/q.pem\nssl.quorum.trustStore.location=/t.pem\n")
	if err != nil || q.SSLQuorum || !q.PortUnification || len(w) != 0 {
		t.Fatalf("portUnification: %+v %v %v", q, w, err)
	}
	if _, _, err := parseString(t, base+"portUnification=true\n"); err == nil || !strings.Contains(err.Error(), "portUnification=true needs ssl.quorum.keyStore.location") {
		t.Errorf("portUnification=true without stores: %v", err)
	}
	for _, cfg := range []string{
		"dataDir=/d\nclientPort=2181\nsecureClientPort=2281\n",             // no key store
		"dataDir=/d\nclientPort=2181\nclient.portUnification=true\n",       // no key store
		base + "ssl.clientAuth=maybe\n",                                    // bad value
		base + "ssl.keyStore.type=BCFKS\n",                                 // unsupported
		base + "ssl.authProvider=ldap\n",                                   // not ours
		base + "ssl.keyStore.passwordPath=/no/such/file\n",                 // unreadable
		"dataDir=/d\nclientPort=2181\nsecureClientPort=2181\n" + base[24:], // same port
	} {
		if _, _, err := parseString(t, cfg); err == nil {
			t.Errorf("accepted:\n%s", cfg)
		}
	}
	// A secure port alone is a valid server.
	c, _, err = parseString(t, "dataDir=/d\nsecureClientPort=2281\nssl.keyStore.location=/k.pem\n")
	if err != nil || c.Validate() != nil {
		t.Errorf("secure port only: %v / %v", err, c.Validate())
	}
}

func TestAuthEnforcement(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string // EnforceAuthSchemes
		err        string   // substring of the error
		warned     []string // keys with warnings
	}{
		{"off", "enforce.auth.enabled=false\nenforce.auth.schemes=digest\n", nil, "", nil},
		{"schemes alone", "enforce.auth.schemes=sasl\n", nil, "", nil},
		{"digest", "enforce.auth.enabled=true\nenforce.auth.schemes=digest\n", []string{"digest"}, "", nil},
		{"upper-case true", "enforce.auth.enabled=TRUE\nenforce.auth.schemes=ip\n", []string{"ip"}, "", nil},
		{"list", "zkgo.sasl.jaasConfig=jaas.conf\nenforce.auth.enabled=true\nenforce.auth.schemes= sasl , digest,\n",
			[]string{"sasl", "digest"}, "", nil},
		{"require sasl", "zkgo.sasl.jaasConfig=jaas.conf\nsessionRequireClientSASLAuth=true\nenforce.auth.enabled=true\nenforce.auth.schemes=digest\n",
			[]string{"sasl"}, "", nil},
		{"yes is false", "enforce.auth.enabled=yes\nenforce.auth.schemes=digest\n", nil, "", []string{"enforce.auth.enabled"}},
		{"no schemes", "enforce.auth.enabled=true\n", nil, "zoo.cfg:3: enforce.auth.enabled: enforce.auth.enabled is true, so enforce.auth.schemes", nil},
		{"empty schemes", "enforce.auth.enabled=true\nenforce.auth.schemes= , \n", nil, "zoo.cfg:4: enforce.auth.schemes:", nil},
		{"sasl without users", "sessionRequireClientSASLAuth=true\n", []string{"sasl"}, "", nil}, // Load warns (TestLoadSASLEnforcedWithoutUsers)
		{"unknown scheme", "enforce.auth.enabled=true\nenforce.auth.schemes=x509\n", nil, `scheme "x509" is not available`, nil},
		{"digest disabled", "DigestAuthenticationProvider.enabled=false\nenforce.auth.enabled=true\nenforce.auth.schemes=digest\n", nil, "DigestAuthenticationProvider.enabled is false", nil},
		{"requireClientAuthScheme", "requireClientAuthScheme=sasl\n", nil, "zoo.cfg:3: requireClientAuthScheme", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, w, err := parseString(t, "dataDir=/d\ntickTime=2000\n"+tt.text)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.EnforceAuthSchemes, tt.want) {
				t.Errorf("EnforceAuthSchemes = %q, want %q", c.EnforceAuthSchemes, tt.want)
			}
			wantKeys(t, w, tt.warned...)
		})
	}
}

func TestSASLKeys(t *testing.T) {
	c, w := mustParse(t, "dataDir=/d\n"+
		"zkgo.sasl.jaasConfig=conf/jaas.conf\n"+
		"sasl.serverconfig=ZkServer\n"+
		"superUser=admin\n"+
		"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"+
		"authProvider.2=com.example.CustomAuthenticationProvider\n")
	if c.JAASConfigFile != "conf/jaas.conf" || c.SASLSection != "ZkServer" || c.SASLSuperUser != "admin" {
		t.Errorf("config %+v", c)
	}
	if c.SASLUsers != nil {
		t.Errorf("Parse read the JAAS file: %v", c.SASLUsers)
	}
	wantKeys(t, w, "authProvider.2")
	if _, _, err := parseString(t, "dataDir=/d\nsasl.serverconfig=\n"); err == nil {
		t.Error("empty sasl.serverconfig accepted")
	}
}

func TestJavaOnlyWarnings(t *testing.T) {
	f, err := os.Open("testdata/javaonly.cfg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, warnings, err := Parse(f, "javaonly.cfg")
	if err != nil {
		t.Fatal(err)
	}
	wantKeys(t, warnings,
		"electionAlg", "syncEnabled",
		"localSessionsEnabled", "commitLogCount", "someFutureSetting")
	for _, w := range warnings {
		if !strings.HasPrefix(w, "javaonly.cfg:") {
			t.Errorf("warning without location: %q", w)
		}
	}
	if w := warnings[len(warnings)-1]; w != "javaonly.cfg:17: someFutureSetting: unknown key; ignored" {
		t.Errorf("last warning %q", w)
	}
	if w := warnings[0]; w != "javaonly.cfg:12: electionAlg: setting of the Java server; ignored" {
		t.Errorf("first warning %q", w)
	}
	if c.Admin.Enabled || c.Admin.ServerPort != 8080 {
		t.Errorf("admin.* keys not honoured: %+v", c.Admin)
	}
	if c.ClientPort != 2181 || c.TickTime != 2*time.Second || c.ReconfigEnabled || c.QuorumListenOnAllIPs {
		t.Errorf("honoured keys lost: %+v", c)
	}
}

func TestReconfigKeys(t *testing.T) {
	c, warnings, err := Parse(strings.NewReader("reconfigEnabled=true\nskipACL=yes\n"), "zoo.cfg")
	if err != nil || len(warnings) > 0 || !c.ReconfigEnabled || !c.SkipACL {
		t.Fatalf("%+v %v %v", c, warnings, err)
	}
	s, err := ParseServerLine("server.4=127.0.0.1:2891:3891:observer;127.0.0.1:2184")
	if err != nil || s.ID != 4 || s.Role != Observer || s.PeerPort != 2891 || s.ClientPort != 2184 {
		t.Fatalf("%+v %v", s, err)
	}
	// ZooKeeper trims around the '=' of a reconfig's server line.
	if s, err := ParseServerLine(" server.4 = 127.0.0.1:2891:3891;2184 "); err != nil || s.ID != 4 || s.ClientPort != 2184 {
		t.Fatalf("with blanks: %+v %v", s, err)
	}
	// Server ids from 0, as ZooKeeper allows them; a multiAddress line.
	if s, err := ParseServerLine("server.0=h:1:2;2181"); err != nil || s.ID != 0 {
		t.Fatalf("server.0: %+v %v", s, err)
	}
	if _, err := ParseServerLine("server.5=a:1:2|b:3:4;2181"); err == nil {
		t.Fatal("multiAddress line read with the feature off")
	}
	if s, err := ParseServerLineMulti("server.5=a:1:2|b:3:4;2181", true); err != nil || len(s.Addrs) != 2 || s.Addrs[1].Host != "b" {
		t.Fatalf("multiAddress: %+v %v", s, err)
	}
	for _, bad := range []string{"server.-1=h:1:2", "server.255=h:1:2", "4=h:1:2", "server.x=h:1:2", "server.4=", "server.4=h"} {
		if _, err := ParseServerLine(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestBadNumbers(t *testing.T) {
	f, err := os.Open("testdata/badnumber.cfg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _, err = Parse(f, "badnumber.cfg")
	if err == nil || err.Error() != `badnumber.cfg:5: tickTime: invalid integer "2s"` {
		t.Errorf("err = %v", err)
	}

	tt := []string{
		"clientPort=21a1",
		"clientPort=65536",
		"clientPort=-1",
		"tickTime=",
		"tickTime=2000.0",
		"tickTime=0x7d0", // parseInt, not decode
		"maxClientCnxns=sixty",
		"minSessionTimeout=4s",
		"maxSessionTimeout=99999999999",
		"initLimit=ten",
		"syncLimit=5 ticks",
		"autopurge.snapRetainCount=x",
		"autopurge.purgeInterval=1h",
		"snapCount=1e5",
		"globalOutstandingLimit=0x",
		"jute.maxbuffer=1M",
		"znode.container.checkIntervalMs=08",
		"multiAddress.enabled=yes",
		"peerType=leader",
		"DigestAuthenticationProvider.digestAlg=SHA-256",
	}
	for _, line := range tt {
		key, _, _ := strings.Cut(line, "=")
		_, _, err := parseString(t, "dataDir=/d\n\n"+line+"\n")
		if err == nil || !strings.HasPrefix(err.Error(), "zoo.cfg:3: "+key+": ") {
			t.Errorf("%s: err = %v", line, err)
		}
	}
}

func TestDerivedDefaults(t *testing.T) {
	tt := []struct {
		name     string
		cfg      string
		check    func(*Config) bool
		warnKeys []string
	}{
		{"no tickTime is ZooKeeper's 3000ms", "dataDir=/d",
			func(c *Config) bool {
				return c.TickTime == 3*time.Second && c.MinSessionTimeout == 6*time.Second &&
					c.MaxSessionTimeout == time.Minute && c.ClientPort == 0 && c.DataLogDir == "/d"
			}, nil},
		{"timeouts from tickTime", "tickTime=1000",
			func(c *Config) bool {
				return c.MinSessionTimeout == 2*time.Second && c.MaxSessionTimeout == 20*time.Second
			}, nil},
		{"explicit -1", "tickTime=1000\nminSessionTimeout=-1\nmaxSessionTimeout=-1",
			func(c *Config) bool {
				return c.MinSessionTimeout == 2*time.Second && c.MaxSessionTimeout == 20*time.Second
			}, nil},
		{"explicit timeouts", "minSessionTimeout=1000\nmaxSessionTimeout=300000",
			func(c *Config) bool {
				return c.MinSessionTimeout == time.Second && c.MaxSessionTimeout == 5*time.Minute
			}, nil},
		{"maxCnxns", "maxCnxns=500\nmaxClientCnxns=7",
			func(c *Config) bool { return c.MaxCnxns == 500 && c.MaxClientCnxns == 7 }, nil},
		{"connection throttle", "connection_throttle_tokens=100\nzookeeper.connection_throttle_fill_time=10\nconnection_throttle_fill_count=5",
			func(c *Config) bool {
				return c.ConnectionThrottleTokens == 100 && c.ConnectionThrottleFillTime == 10*time.Millisecond && c.ConnectionThrottleFillCount == 5
			}, nil},
		{"connection throttle default off", "tickTime=2000",
			func(c *Config) bool { return c.ConnectionThrottleTokens == 0 }, nil},
		{"dataLogDir", "dataDir=/d\ndataLogDir=/l",
			func(c *Config) bool { return c.DataDir == "/d" && c.DataLogDir == "/l" }, nil},
		{"snapRetainCount at least 3", "autopurge.snapRetainCount=1",
			func(c *Config) bool { return c.AutopurgeSnapRetainCount == 3 }, []string{"autopurge.snapRetainCount"}},
		{"snapCount at least 2", "snapCount=1",
			func(c *Config) bool { return c.SnapCount == 2 }, []string{"snapCount"}},
		{"decoded numbers", "snapCount=#10\njute.maxbuffer=010\nglobalOutstandingLimit=-0x10",
			func(c *Config) bool { return c.SnapCount == 16 && c.MaxBuffer == 8 && c.GlobalOutstandingLimit == -16 }, nil},
		{"4lw star", "4lw.commands.whitelist=*",
			func(c *Config) bool {
				return len(c.FourLetterWords) == len(FourLetterWordsKnown) && c.FourLetterWords["mntr"]
			}, nil},
		{"4lw list", "4lw.commands.whitelist=ruok stat,, mntr ,",
			func(c *Config) bool {
				return reflect.DeepEqual(c.FourLetterWords, words("srvr", "ruok", "stat", "mntr"))
			}, nil},
		{"4lw empty", "4lw.commands.whitelist=",
			func(c *Config) bool { return reflect.DeepEqual(c.FourLetterWords, words("srvr")) }, nil},
		{"read-only mode enables isro", "readonlymode.enabled=true",
			func(c *Config) bool {
				return c.ReadOnlyMode && reflect.DeepEqual(c.FourLetterWords, words("srvr", "isro"))
			}, nil},
		{"booleans", "extendedTypesEnabled=TRUE\nDigestAuthenticationProvider.enabled=false",
			func(c *Config) bool { return c.ExtendedTypesEnabled && !c.DigestAuthEnabled }, nil},
		{"non-boolean reads as false", "zookeeper.extendedTypesEnabled=yes",
			func(c *Config) bool { return !c.ExtendedTypesEnabled }, []string{"zookeeper.extendedTypesEnabled"}},
		{"prefixed superDigest", "zookeeper.DigestAuthenticationProvider.superDigest=super:x",
			func(c *Config) bool { return c.SuperDigest == "super:x" }, nil},
		{"digestAlg SHA1", "DigestAuthenticationProvider.digestAlg=SHA1",
			func(c *Config) bool { return true }, nil},
		{"forceSync yes", "forceSync=yes", func(c *Config) bool { return c.ForceSync }, nil},
		{"forceSync false means yes", "forceSync=false", func(c *Config) bool { return c.ForceSync }, []string{"forceSync"}},
		{"forceSync no", "forceSync=no", func(c *Config) bool { return !c.ForceSync }, nil},
		{"client address", "clientPort=2181\nclientPortAddress=[::1]",
			func(c *Config) bool { return c.ClientAddr() == "[::1]:2181" }, nil},
		{"container interval", "znode.container.checkIntervalMs=100",
			func(c *Config) bool { return c.ContainerCheckInterval == 100*time.Millisecond }, nil},
		{"peerType any case", "peerType=OBSERVER", func(c *Config) bool { return c.PeerType == Observer }, nil},
		{"repeated key", "clientPort=1\nclientPort=2",
			func(c *Config) bool { return c.ClientPort == 2 }, []string{"clientPort"}},
		{"static version with servers", "version=1a\nserver.1=a:1:2\nserver.2=b:1:2",
			func(c *Config) bool { return c.Version == 0x1a && len(c.Servers) == 2 }, nil},
	}
	for _, tc := range tt {
		t.Run(tc.name, func(t *testing.T) {
			c, w := mustParse(t, tc.cfg)
			if !tc.check(c) {
				t.Errorf("unexpected config %+v", c)
			}
			wantKeys(t, w, tc.warnKeys...)
		})
	}

	for _, cfg := range []string{"tickTime=0", "clientPortAddress=127.0.0.1"} {
		if _, _, err := parseString(t, cfg); err == nil {
			t.Errorf("%q: no error", cfg)
		}
	}
}

func TestJavaNumbers(t *testing.T) {
	tt := []struct {
		s        string
		parse    int32
		parseOK  bool
		decode   int32
		decodeOK bool
	}{
		{"0", 0, true, 0, true},
		{"42", 42, true, 42, true},
		{"+42", 42, true, 42, true},
		{"-42", -42, true, -42, true},
		{"010", 10, true, 8, true},
		{"0x10", 0, false, 16, true},
		{"0X10", 0, false, 16, true},
		{"#10", 0, false, 16, true},
		{"-0x10", 0, false, -16, true},
		{"08", 8, true, 0, false},
		{"0x", 0, false, 0, false},
		{"0x-1", 0, false, 0, false},
		{"2147483647", 2147483647, true, 2147483647, true},
		{"-2147483648", -2147483648, true, -2147483648, true},
		{"2147483648", 0, false, 0, false},
		{"", 0, false, 0, false},
		{"-", 0, false, 0, false},
		{" 1", 0, false, 0, false},
		{"1_000", 0, false, 0, false},
		{"0b1", 0, false, 0, false},
	}
	for _, tc := range tt {
		if got, ok := javaParseInt(tc.s); got != tc.parse || ok != tc.parseOK {
			t.Errorf("javaParseInt(%q) = %d, %v", tc.s, got, ok)
		}
		if got, ok := javaDecode(tc.s); got != tc.decode || ok != tc.decodeOK {
			t.Errorf("javaDecode(%q) = %d, %v", tc.s, got, ok)
		}
	}
}

func TestMetricsProviderKeys(t *testing.T) {
	const prom = "metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider\n"
	tests := []struct {
		name     string
		cfg      string
		want     Metrics
		warnKeys []string
		wantErr  string
	}{
		{name: "absent", cfg: "",
			want: Metrics{HTTPHost: "0.0.0.0", HTTPPort: 7000}},
		{name: "prometheus defaults", cfg: prom,
			want: Metrics{Enabled: true, HTTPHost: "0.0.0.0", HTTPPort: 7000}},
		{name: "host and port", cfg: prom + "metricsProvider.httpHost=127.0.0.1\nmetricsProvider.httpPort=7070\n",
			want: Metrics{Enabled: true, HTTPHost: "127.0.0.1", HTTPPort: 7070}},
		{name: "ipv6 host", cfg: prom + "metricsProvider.httpHost=[::1]\n",
			want: Metrics{Enabled: true, HTTPHost: "::1", HTTPPort: 7000}},
		{name: "port 0", cfg: prom + "metricsProvider.httpPort=0\n",
			want: Metrics{Enabled: true, HTTPHost: "0.0.0.0", HTTPPort: 0}},
		{name: "jvm info and workers", cfg: prom + "metricsProvider.exportJvmInfo=false\nmetricsProvider.numWorkerThreads=4\nmetricsProvider.someday=1\n",
			want:     Metrics{Enabled: true, HTTPHost: "0.0.0.0", HTTPPort: 7000},
			warnKeys: []string{"metricsProvider.exportJvmInfo", "metricsProvider.numWorkerThreads", "metricsProvider.someday"}},
		{name: "default provider", cfg: "metricsProvider.className=org.apache.zookeeper.metrics.impl.DefaultMetricsProvider\nmetricsProvider.httpPort=7001\n",
			want: Metrics{HTTPHost: "0.0.0.0", HTTPPort: 7001}},
		{name: "unknown class", cfg: "metricsProvider.className=com.example.StatsdProvider\n",
			wantErr: "zoo.cfg:1: metricsProvider.className: metrics provider \"com.example.StatsdProvider\" is not available"},
		{name: "bad port", cfg: prom + "metricsProvider.httpPort=seven\n",
			wantErr: "zoo.cfg:2: metricsProvider.httpPort: invalid integer \"seven\""},
		{name: "port out of range", cfg: prom + "metricsProvider.httpPort=70000\n",
			wantErr: "zoo.cfg:2: metricsProvider.httpPort: port 70000 out of range"},
		{name: "empty host", cfg: prom + "metricsProvider.httpHost=\n",
			wantErr: "zoo.cfg:2: metricsProvider.httpHost: empty host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, w, err := Parse(strings.NewReader(tt.cfg), "zoo.cfg")
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Metrics != tt.want {
				t.Errorf("Metrics %+v, want %+v", c.Metrics, tt.want)
			}
			wantKeys(t, w, tt.warnKeys...)
		})
	}
	if got := (Metrics{HTTPHost: "::1", HTTPPort: 7000}).Addr(); got != "[::1]:7000" {
		t.Errorf("Addr %q", got)
	}
}
