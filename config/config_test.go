package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

func parseString(t *testing.T, text string) (*Config, []string, error) {
	t.Helper()
	return Parse(strings.NewReader(text), "zoo.cfg")
}

func mustParse(t *testing.T, text string) (*Config, []string) {
	t.Helper()
	c, w, err := parseString(t, text)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c, w
}

func words(ws ...string) map[string]bool {
	m := map[string]bool{}
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// noMyID tells install to write no myid file.
const noMyID = "<none>"

// install copies testdata files into a temporary directory, pointing
// dataDir at a fresh directory holding myid (unless myid is noMyID), and
// returns the path of the first file.
func install(t *testing.T, myid string, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if myid != noMyID {
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(myid), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dataDirLine := regexp.MustCompile(`(?m)^dataDir=.*$`)
	var first string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		b = dataDirLine.ReplaceAll(b, []byte("dataDir="+filepath.ToSlash(data)))
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = p
		}
	}
	return first
}

func TestDefault(t *testing.T) {
	c := Default()
	want := &Config{
		TickTime:                 2 * time.Second,
		DataDir:                  "./zkgo-data",
		DataLogDir:               "./zkgo-data",
		ClientPort:               2181,
		MaxClientCnxns:           60,
		MinSessionTimeout:        4 * time.Second,
		MaxSessionTimeout:        40 * time.Second,
		FourLetterWords:          words("srvr"),
		DigestAuthEnabled:        true,
		MyID:                     NoID,
		SnapCount:                100000,
		AutopurgeSnapRetainCount: 3,
		ContainerCheckInterval:   time.Minute,
		MaxBuffer:                0xfffff,
		GlobalOutstandingLimit:   1000,
		ForceSync:                true,
		SASLSection:              "Server",
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Default() =\n%+v\nwant\n%+v", c, want)
	}
	if got := c.ClientAddr(); got != ":2181" {
		t.Errorf("ClientAddr = %q", got)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if Default().FourLetterWords["stat"] = true; Default().FourLetterWords["stat"] {
		t.Error("Default shares its FourLetterWords map")
	}
}

func TestParseDebian(t *testing.T) {
	f, err := os.Open("testdata/debian.cfg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, warnings, err := Parse(f, "debian.cfg")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	want := base()
	want.TickTime = 2 * time.Second
	want.InitLimit = 10
	want.SyncLimit = 5
	want.DataDir = "/tmp/zookeeper"
	want.DataLogDir = "/tmp/zookeeper"
	want.ClientPort = 2181
	want.MinSessionTimeout = 4 * time.Second
	want.MaxSessionTimeout = 40 * time.Second
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Parse =\n%+v\nwant\n%+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if c.Distributed() {
		t.Error("Distributed")
	}

	// Loaded with a dataDir that has no myid, it is a standalone server.
	lc, lw, err := Load(install(t, noMyID, "debian.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if len(lw) != 0 || lc.MyID != NoID || lc.ClientAddr() != ":2181" {
		t.Errorf("Load: warnings %q, MyID %d, ClientAddr %q", lw, lc.MyID, lc.ClientAddr())
	}
}

func TestLoadEnsemble(t *testing.T) {
	path := install(t, "2\n", "ensemble.cfg")
	c, warnings, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	data := filepath.Join(filepath.Dir(path), "data")
	want := base()
	want.TickTime = 2 * time.Second
	want.DataDir, want.DataLogDir = filepath.ToSlash(data), filepath.ToSlash(data)
	want.ClientPort = 2181
	want.InitLimit, want.SyncLimit = 5, 2
	want.MaxClientCnxns = 0
	want.MinSessionTimeout = 6 * time.Second
	want.MaxSessionTimeout = 40 * time.Second
	want.AutopurgeSnapRetainCount = 5
	want.AutopurgePurgeInterval = 24 * time.Hour
	want.FourLetterWords = words("srvr", "stat", "ruok", "conf", "isro")
	want.ExtendedTypesEnabled = true
	want.SuperDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
	want.SnapCount = 50000
	want.GlobalOutstandingLimit = 0x800
	want.MaxBuffer = 4194304
	want.ContainerCheckInterval = 30 * time.Second
	want.ForceSync = false
	want.MyID = 2
	for i, h := range []string{"zoo1", "zoo2", "zoo3"} {
		want.Servers = append(want.Servers, Server{
			ID: int64(i + 1), Addrs: []Address{{h, 2888, 3888}},
			Host: h, PeerPort: 2888, ElectionPort: 3888,
		})
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", c, want)
	}
	if !c.Distributed() {
		t.Error("not Distributed")
	}
	if !c.FourLetterWordEnabled("ruok") || c.FourLetterWordEnabled("dump") {
		t.Error("FourLetterWordEnabled")
	}
}

func TestLoadObserver(t *testing.T) {
	c, warnings, err := Load(install(t, "4", "observer.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	if c.PeerType != Observer || c.ClientPort != 2181 || c.ClientPortAddress != "0.0.0.0" || c.ClientAddr() != "0.0.0.0:2181" {
		t.Errorf("PeerType %v, client %q", c.PeerType, c.ClientAddr())
	}
	want := []Server{
		{ID: 1, Addrs: []Address{{"10.0.0.1", 2888, 3888}}, Host: "10.0.0.1", PeerPort: 2888, ElectionPort: 3888, ClientPort: 2181},
		{ID: 2, Addrs: []Address{{"10.0.0.2", 2888, 3888}}, Host: "10.0.0.2", PeerPort: 2888, ElectionPort: 3888, ClientAddr: "10.0.0.2", ClientPort: 2181},
		{ID: 3, Addrs: []Address{{"2001:db8::3", 2888, 3888}}, Host: "2001:db8::3", PeerPort: 2888, ElectionPort: 3888, ClientAddr: "2001:db8::3", ClientPort: 2181},
		{ID: 4, Addrs: []Address{{"10.0.0.4", 2888, 3888}}, Host: "10.0.0.4", PeerPort: 2888, ElectionPort: 3888, Role: Observer, ClientAddr: "0.0.0.0", ClientPort: 2181},
	}
	if !reflect.DeepEqual(c.Servers, want) {
		t.Errorf("Servers =\n%+v\nwant\n%+v", c.Servers, want)
	}

	// Server 3 listens on its IPv6 address; peerType=observer is
	// overridden by its role in the list, with a warning.
	c, warnings, err = Load(install(t, "3", "observer.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if c.PeerType != Participant || c.ClientAddr() != "[2001:db8::3]:2181" {
		t.Errorf("PeerType %v, client %q", c.PeerType, c.ClientAddr())
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "peerType: observer does not match") {
		t.Errorf("warnings: %q", warnings)
	}
}

func TestLoadDynamic(t *testing.T) {
	path := install(t, "4", "dynamic.cfg", "dynamic-servers.cfg")
	c, warnings, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 4 || c.Servers[3].Role != Observer || c.Servers[1].PeerPort != 2889 {
		t.Errorf("Servers: %+v", c.Servers)
	}
	if c.Version != 0 || c.PeerType != Observer || c.ClientAddr() != "127.0.0.1:2184" || c.DynamicConfigFile != "dynamic-servers.cfg" {
		t.Errorf("Version %x, PeerType %v, ClientAddr %q, DynamicConfigFile %q", c.Version, c.PeerType, c.ClientAddr(), c.DynamicConfigFile)
	}
	// Server 4 is an observer but peerType is not set: ZooKeeper warns too.
	wantKeys(t, warnings, "reconfigEnabled", "standaloneEnabled", "peerType")

	// The version is the hexadecimal suffix of the dynamic file's name.
	dir := filepath.Dir(path)
	if err := os.Rename(filepath.Join(dir, "dynamic-servers.cfg"), filepath.Join(dir, "zoo.cfg.dynamic.100000000")); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(path)
	abs := filepath.ToSlash(filepath.Join(dir, "zoo.cfg.dynamic.100000000"))
	cfg = []byte(strings.Replace(string(cfg), "dynamicConfigFile=dynamic-servers.cfg", "dynamicConfigFile="+abs, 1))
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, _, err = Load(path); err != nil {
		t.Fatal(err)
	}
	if c.Version != 0x100000000 || len(c.Servers) != 4 {
		t.Errorf("Version %x, %d servers", c.Version, len(c.Servers))
	}

	for _, tc := range []struct{ name, dyn, want string }{
		{"version inside", "version=100000000\nserver.1=a:1:2\n", "version"},
		{"unknown key", "server.1=a:1:2\ntickTime=2000\n", "tickTime"},
		{"hierarchical", "server.1=a:1:2\ngroup.1=1\n", "group.1"},
		{"bad server", "server.1=a:1\n", "server.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(abs, []byte(tc.dyn), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load error %v, want mention of %q", err, tc.want)
			}
		})
	}

	if _, _, err := parseString(t, "dataDir=/d\ndynamicConfigFile=x\nserver.1=a:1:2\n"); err == nil || !strings.Contains(err.Error(), "zoo.cfg:3: server.1") {
		t.Errorf("server.N next to dynamicConfigFile: %v", err)
	}
	if _, _, err := Load(install(t, "1", "dynamic.cfg")); err == nil {
		t.Error("missing dynamic file: no error")
	}
}

// wantKeys checks that each key has exactly one warning and that no other
// warnings were given.
func wantKeys(t *testing.T, warnings []string, keys ...string) {
	t.Helper()
	var got []string
	for _, w := range warnings {
		// "name:line: key: message"
		f := strings.SplitN(w, ": ", 3)
		if len(f) < 3 {
			t.Errorf("malformed warning %q", w)
			continue
		}
		got = append(got, f[1])
	}
	sort.Strings(got)
	want := append([]string{}, keys...)
	sort.Strings(want)
	if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
		t.Errorf("warned keys %q, want %q\nwarnings: %q", got, want, warnings)
	}
}

func TestTLSRefused(t *testing.T) {
	f, err := os.Open("testdata/tls.cfg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _, err = Parse(f, "tls.cfg")
	if !errors.Is(err, ErrTLSNotImplemented) {
		t.Fatalf("err = %v, want ErrTLSNotImplemented", err)
	}
	const msg = "tls.cfg:5: TLS is not implemented yet; refusing to serve plaintext where TLS was configured: key secureClientPort"
	if err.Error() != msg {
		t.Errorf("err = %q\nwant  %q", err, msg)
	}

	base := "dataDir=/d\nclientPort=2181\n"
	tt := []struct {
		line    string
		refused bool
	}{
		{"secureClientPort=2281", true},
		{"secureClientPortAddress=0.0.0.0", true},
		{"ssl.keyStore.location=/k.jks", true},
		{"ssl.quorum.keyStore.location=/k.jks", true},
		{"ssl.clientAuth=none", true},
		{"client.secure=true", true},
		{"client.secure=false", false},
		{"sslQuorum=true", true},
		{"sslQuorum=false", false},
		{"portUnification=TRUE", true},
		{"client.portUnification=true", true},
		{"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory", false},
		{"serverCnxnFactory=org.apache.zookeeper.server.NIOServerCnxnFactory", false},
	}
	for _, tc := range tt {
		c, w, err := parseString(t, base+tc.line+"\n")
		key, _, _ := strings.Cut(tc.line, "=")
		if tc.refused {
			if !errors.Is(err, ErrTLSNotImplemented) || !strings.Contains(err.Error(), "zoo.cfg:3:") || !strings.HasSuffix(err.Error(), "key "+key) {
				t.Errorf("%s: err = %v", tc.line, err)
			}
			continue
		}
		if err != nil || c == nil {
			t.Errorf("%s: err = %v", tc.line, err)
			continue
		}
		wantKeys(t, w, key)
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
		{"sasl without users", "sessionRequireClientSASLAuth=true\n", nil, "zoo.cfg:3: sessionRequireClientSASLAuth: sasl authentication is enforced but no SASL users are configured: set zkgo.sasl.jaasConfig", nil},
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

func TestLoadSASLUsers(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("jaas.conf", `
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="adminsecret"
    user_bob="bobsecret";
};
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="bob" password="bobsecret";
};
`)
	base := "tickTime=2000\nclientPort=2181\ndataDir=" + filepath.ToSlash(data) + "\n"
	cfg := write("zoo.cfg", base+"zkgo.sasl.jaasConfig=jaas.conf\nsessionRequireClientSASLAuth=true\n")
	c, _, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"super": "adminsecret", "bob": "bobsecret"}; !reflect.DeepEqual(c.SASLUsers, want) {
		t.Errorf("SASLUsers = %v, want %v", c.SASLUsers, want)
	}
	if !reflect.DeepEqual(c.EnforceAuthSchemes, []string{"sasl"}) {
		t.Errorf("EnforceAuthSchemes = %v", c.EnforceAuthSchemes)
	}

	cfg = write("zoo2.cfg", base+"zkgo.sasl.jaasConfig=jaas.conf\nsasl.serverconfig=Other\n")
	if _, _, err := Load(cfg); err == nil || !strings.Contains(err.Error(), `no JAAS section named "Other" (sections: Client, Server)`) {
		t.Errorf("missing section: %v", err)
	}
	cfg = write("zoo3.cfg", base+"zkgo.sasl.jaasConfig=missing.conf\n")
	if _, _, err := Load(cfg); err == nil || !strings.Contains(err.Error(), "zkgo.sasl.jaasConfig") {
		t.Errorf("missing file: %v", err)
	}
	write("bad.conf", "Server { x required a=; };")
	cfg = write("zoo4.cfg", base+"zkgo.sasl.jaasConfig="+filepath.ToSlash(filepath.Join(dir, "bad.conf"))+"\n")
	if _, _, err := Load(cfg); err == nil || !strings.Contains(err.Error(), "bad.conf:1:") {
		t.Errorf("bad file: %v", err)
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
		"admin.enableServer", "admin.serverPort",
		"metricsProvider.className", "metricsProvider.httpPort", "standaloneEnabled",
		"reconfigEnabled", "quorumListenOnAllIPs", "electionAlg", "syncEnabled",
		"localSessionsEnabled", "audit.enable", "serverCnxnFactory", "someFutureSetting")
	for _, w := range warnings {
		if !strings.HasPrefix(w, "javaonly.cfg:") {
			t.Errorf("warning without location: %q", w)
		}
	}
	if w := warnings[len(warnings)-1]; w != "javaonly.cfg:17: someFutureSetting: unknown key; ignored" {
		t.Errorf("last warning %q", w)
	}
	if w := warnings[0]; w != "javaonly.cfg:4: admin.enableServer: setting of the Java server; ignored" {
		t.Errorf("first warning %q", w)
	}
	if c.ClientPort != 2181 || c.TickTime != 2*time.Second {
		t.Errorf("honoured keys lost: %+v", c)
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

func TestPropertiesSyntax(t *testing.T) {
	tt := []struct {
		name string
		text string
		want []property
	}{
		{"basic", "a=1\nb = 2 \n  c:3\nd 4\ne\t=\t5\nf\n", []property{
			{"a", "1", 1}, {"b", "2 ", 2}, {"c", "3", 3}, {"d", "4", 4}, {"e", "5", 5}, {"f", "", 6}}},
		{"comments", "# c\n! c\n   # indented\n\na=1 # not a comment\n", []property{{"a", "1 # not a comment", 5}}},
		{"line endings", "a=1\r\nb=2\rc=3", []property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"continuation", "a=one \\\n    two\\\n  three\nb=4", []property{{"a", "one twothree", 1}, {"b", "4", 4}}},
		{"even backslashes", "a=x\\\\\nb=y", []property{{"a", `x\`, 1}, {"b", "y", 2}}},
		{"comment not continued", "# c \\\na=1", []property{{"a", "1", 2}}},
		{"continued line starting with #", "a=1\\\n#2", []property{{"a", "1#2", 1}}},
		{"continuation at end", "a=1\\", []property{{"a", "1", 1}}},
		{"escapes", `k\:e\=y\ x=v\tw\nx\\y\u0041\q`, []property{{"k:e=y x", "v\tw\nx" + `\yAq`, 1}}},
		{"surrogates", `a=\uD83D\uDE00`, []property{{"a", "\U0001F600", 1}}},
		{"second separator kept", "a==b\nc :=d", []property{{"a", "=b", 1}, {"c", "=d", 2}}},
		{"empty key", "=v", []property{{"", "v", 1}}},
		{"server line", "server.1=zoo1:2888:3888;2181", []property{{"server.1", "zoo1:2888:3888;2181", 1}}},
	}
	for _, tc := range tt {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readProperties(tc.text, "p")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	for _, bad := range []string{`a=\u12`, `a=\u12g4`, "x=1\n\\uzzzz=2"} {
		if _, err := readProperties(bad, "p"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, _, err := parseString(t, "a=1\nb=\\u00"); err == nil || !strings.HasPrefix(err.Error(), "zoo.cfg:2:") {
		t.Errorf("error %v, want line 2", err)
	}
}

func TestParseServer(t *testing.T) {
	a := func(h string, p, e int) Address { return Address{h, p, e} }
	tt := []struct {
		value string
		multi bool
		want  *Server // nil: error
	}{
		{"zoo1:2888:3888", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}}},
		{"zoo1:2888:3888:participant", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}}},
		{"zoo1:2888:3888:Observer", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}, Role: Observer}},
		{"zoo1:2888:3888;2181", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}, ClientPort: 2181}},
		{"zoo1:2888:3888:observer;10.1.1.1:2181", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}, Role: Observer, ClientAddr: "10.1.1.1", ClientPort: 2181}},
		{"zoo1:2888:3888;", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}}},
		{"zoo1:2888:3888:", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}}},
		{"[::1]:2888:3888;[::1]:2181", false, &Server{Addrs: []Address{a("::1", 2888, 3888)}, ClientAddr: "::1", ClientPort: 2181}},
		{"[fe80::1]:2888:3888:observer", false, &Server{Addrs: []Address{a("fe80::1", 2888, 3888)}, Role: Observer}},
		{"a:1:2|b:3:4", true, &Server{Addrs: []Address{a("a", 1, 2), a("b", 3, 4)}}},
		{"a:1:2:observer|b:3:4", true, &Server{Addrs: []Address{a("a", 1, 2), a("b", 3, 4)}, Role: Observer}},
		{"a:1:2|b:3:4", false, nil},
		{"a:1:2:observer|b:3:4:participant", true, nil},
		{"zoo1:2888", false, nil},
		{"zoo1", false, nil},
		{"", false, nil},
		{"zoo1:2888:3888:leader", false, nil},
		{"zoo1:2888:3888:observer:x", false, nil},
		{"zoo1:2888:2888", false, nil},
		{"zoo1:x:3888", false, nil},
		{"zoo1:2888:70000", false, nil},
		{":2888:3888", false, nil},
		{"zoo1:2888:3888;a:b:2181", false, nil},
		{"zoo1:2888:3888;2181;x", false, nil},
		{"zoo1:2888:3888;port", false, nil},
		{"[::1:2888:3888", false, nil},
		{"[::1]:", false, nil},
		{"::1:2888:3888", false, nil},
	}
	for _, tc := range tt {
		got, err := parseServer(7, tc.value, tc.multi)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q: no error, got %+v", tc.value, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.value, err)
			continue
		}
		want := *tc.want
		want.ID = 7
		want.Host, want.PeerPort, want.ElectionPort = want.Addrs[0].Host, want.Addrs[0].PeerPort, want.Addrs[0].ElectionPort
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v, want %+v", tc.value, got, want)
		}
	}

	// Through Parse: ids, ordering, duplicates, and multiAddress.enabled.
	c, _ := mustParse(t, "server.3=c:1:2\nserver.1=a:1:2\nmultiAddress.enabled=true\nserver.2=b:1:2|b2:1:2\n")
	if len(c.Servers) != 3 || c.Servers[0].ID != 1 || c.Servers[2].ID != 3 || len(c.Servers[1].Addrs) != 2 {
		t.Errorf("Servers: %+v", c.Servers)
	}
	for _, cfg := range []string{
		"server.x=a:1:2",
		"server.1=a:1:2\nserver.+1=b:1:2",
		"server.1=a:1:2|b:1:2",
		"group.1=1:2:3",
		"weight.1=1",
		"version=xyz\nserver.1=a:1:2",
	} {
		if _, _, err := parseString(t, cfg); err == nil {
			t.Errorf("%q: no error", cfg)
		}
	}
}

func TestMyID(t *testing.T) {
	tt := []struct {
		myid string
		want int64
		ok   bool
	}{
		{"1", 1, true},
		{"2\n", 2, true},
		{" 3 \r\nsecond line", 3, true},
		{"255", 255, true},
		{"", 0, false},
		{"one", 0, false},
		{"1.0", 0, false},
		// Debian's placeholder /etc/zookeeper/conf/myid.
		{"replace this text with the cluster-unique zookeeper's instance id (1-255)\n", 0, false},
	}
	for _, tc := range tt {
		c, _, err := Load(install(t, tc.myid, "debian.cfg"))
		if !tc.ok {
			if err == nil || !strings.Contains(err.Error(), "is not a number") {
				t.Errorf("myid %q: err = %v", tc.myid, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("myid %q: %v", tc.myid, err)
			continue
		}
		if c.MyID != tc.want {
			t.Errorf("myid %q: MyID = %d", tc.myid, c.MyID)
		}
	}
}

func TestClientAddressFromServers(t *testing.T) {
	servers := "initLimit=5\nsyncLimit=2\nserver.1=10.0.0.1:2888:3888;10.0.0.1:2181\nserver.2=10.0.0.2:2888:3888;2182\nserver.3=10.0.0.3:2888:3888\n"
	tt := []struct {
		name   string
		myid   string
		static string
		want   string // "" means an error
	}{
		{"from servers", "1", "", "10.0.0.1:2181"},
		{"port only", "2", "", ":2182"},
		{"static only", "3", "clientPort=2181\n", ":2181"},
		{"none", "3", "", ""},
		{"same port, wildcard", "1", "clientPort=2181\n", "10.0.0.1:2181"},
		{"different port, wildcard", "1", "clientPort=2182\n", ""},
		{"same address", "1", "clientPort=2181\nclientPortAddress=10.0.0.1\n", "10.0.0.1:2181"},
		{"different address", "1", "clientPort=2181\nclientPortAddress=10.0.0.9\n", ""},
		{"myid not listed", "9", "clientPort=2181\n", ""},
	}
	for _, tc := range tt {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "myid"), []byte(tc.myid), 0o644); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "zoo.cfg")
			text := "dataDir=" + filepath.ToSlash(dir) + "\n" + tc.static + servers
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			c, _, err := Load(p)
			if tc.want == "" {
				if err == nil {
					t.Errorf("no error; ClientAddr %q", c.ClientAddr())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.ClientAddr(); got != tc.want {
				t.Errorf("ClientAddr = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ensemble := func() *Config {
		c := Default()
		c.InitLimit, c.SyncLimit, c.MyID = 10, 5, 1
		c.Servers = []Server{{ID: 1}, {ID: 2}, {ID: 3}}
		return c
	}
	tt := []struct {
		name   string
		mutate func(*Config)
		base   func() *Config
		want   string // "" means valid
	}{
		{"default", func(*Config) {}, Default, ""},
		{"ensemble", func(*Config) {}, ensemble, ""},
		{"zero tick", func(c *Config) { c.TickTime = 0 }, Default, "tickTime"},
		{"negative tick", func(c *Config) { c.TickTime = -time.Second }, Default, "tickTime"},
		{"no dataDir", func(c *Config) { c.DataDir = "" }, Default, "dataDir"},
		{"no client port", func(c *Config) { c.ClientPort = 0 }, Default, "client port"},
		{"client port range", func(c *Config) { c.ClientPort = 70000 }, Default, "out of range"},
		{"min > max", func(c *Config) { c.MinSessionTimeout = time.Hour }, Default, "minSessionTimeout"},
		{"min = max", func(c *Config) { c.MinSessionTimeout = c.MaxSessionTimeout }, Default, ""},
		{"negative min", func(c *Config) { c.MinSessionTimeout = -1 }, Default, "negative"},
		{"maxbuffer", func(c *Config) { c.MaxBuffer = 0 }, Default, "jute.maxbuffer"},
		{"container interval", func(c *Config) { c.ContainerCheckInterval = 0 }, Default, "checkIntervalMs"},
		{"no initLimit", func(c *Config) { c.InitLimit = 0 }, ensemble, "initLimit"},
		{"no syncLimit", func(c *Config) { c.SyncLimit = 0 }, ensemble, "syncLimit"},
		{"no myid", func(c *Config) { c.MyID = NoID }, ensemble, "myid"},
		{"myid not listed", func(c *Config) { c.MyID = 4 }, ensemble, "not among"},
		{"single server needs no limits", func(c *Config) { c.Servers = []Server{{ID: 1}} }, Default, ""},
		{"observers only", func(c *Config) { c.Servers = []Server{{ID: 1, Role: Observer}} }, Default, "observers"},
		{"one participant and observers", func(c *Config) {
			c.Servers = []Server{{ID: 1}, {ID: 2, Role: Observer}}
		}, Default, "observers"},
	}
	for _, tc := range tt {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.base()
			tc.mutate(c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Errorf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want mention of %q", err, tc.want)
			}
		})
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
