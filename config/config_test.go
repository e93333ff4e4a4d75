package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
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
		TickTime:                    2 * time.Second,
		DataDir:                     "./zkgo-data",
		DataLogDir:                  "./zkgo-data",
		ClientPort:                  2181,
		MaxClientCnxns:              60,
		MinSessionTimeout:           4 * time.Second,
		MaxSessionTimeout:           40 * time.Second,
		FourLetterWords:             words("srvr"),
		DigestAuthEnabled:           true,
		StandaloneEnabled:           true,
		MyID:                        NoID,
		SnapCount:                   100000,
		DigestEnabled:               true,
		AutopurgeSnapRetainCount:    3,
		ContainerCheckInterval:      time.Minute,
		MaxBuffer:                   0xfffff,
		GlobalOutstandingLimit:      1000,
		ForceSync:                   true,
		WALPrefill:                  true,
		ExistsCheckRead:             true,
		SSL:                         TLS{HostnameVerification: true},
		ConnectionThrottleFillTime:  time.Millisecond,
		ConnectionThrottleFillCount: 1,
		SSLQuorumStores:             TLS{HostnameVerification: true},
		SASLSection:                 "Server",
		QuorumAuth:                  QuorumAuth{LearnerSection: "QuorumLearner", ServerSection: "QuorumServer", ServicePrincipal: "zkquorum/localhost"},
		Metrics:                     Metrics{HTTPHost: "0.0.0.0", HTTPPort: 7000},
		Admin:                       Admin{Enabled: true, ServerAddress: "0.0.0.0", ServerPort: 8080, CommandURL: "/commands", IdleTimeout: 30 * time.Second, Console: true, Snapshot: true, Restore: true, RateLimit: 5 * time.Minute},
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
	if !strings.HasPrefix(c.Text, "# The number of milliseconds") && !strings.Contains(c.Text, "tickTime=2000") {
		t.Errorf("Text = %q, want the file's text", c.Text)
	}
	want.Text = c.Text
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
	if !strings.Contains(c.Text, "server.3=zoo3:2888:3888") {
		t.Errorf("Text = %q, want the file's text", c.Text)
	}
	want.Text = c.Text
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
	if c, w, err := Load(cfg); err != nil || c.SASLUsers != nil || !strings.Contains(strings.Join(w, "\n"), `no JAAS section named "Other" (its sections: Client, Server)`) {
		t.Errorf("missing section: %v %q", err, w)
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

func TestStandaloneEnabled(t *testing.T) {
	for _, tt := range []struct {
		name        string
		text        string
		distributed bool
		warned      bool
		invalid     bool
	}{
		{"one participant", "server.1=127.0.0.1:2888:3888;2181\n", false, true, false},
		{"quorum of one", "standaloneEnabled=false\nserver.1=127.0.0.1:2888:3888;2181\n", true, false, false},
		{"quorum of one with an observer", "standaloneEnabled=false\nserver.1=127.0.0.1:2888:3888;2181\nserver.2=127.0.0.1:2889:3889:observer;2182\n", true, false, false},
		{"one participant with an observer", "server.1=127.0.0.1:2888:3888;2181\nserver.2=127.0.0.1:2889:3889:observer;2182\n", false, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "myid"), []byte("1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "zoo.cfg")
			text := "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=" + filepath.ToSlash(dir) + "\n" + tt.text
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			c, warnings, err := Load(path)
			if tt.invalid {
				if err == nil {
					t.Fatalf("Load accepted %q", tt.text)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Distributed() != tt.distributed {
				t.Errorf("Distributed() = %v, want %v", c.Distributed(), tt.distributed)
			}
			warned := slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "running standalone") })
			if warned != tt.warned {
				t.Errorf("warnings %q: standalone warning %v, want %v", warnings, warned, tt.warned)
			}
		})
	}
}

// snapSizeLimitInKb is read as ZooKeeper reads it (Long.getLong: decimal,
// hex or octal); 0 or less means no limit by size, as in ZooKeeper.
func TestSnapSizeLimit(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  int64
		bad   bool
	}{
		{"", 0, false}, // not set: zkgo's default
		{"1024", 1024, false},
		{"0x400", 1024, false},
		{"4194304", 4194304, false},
		{"0", -1, false},
		{"-5", -1, false},
		{"12kb", 0, true},
		{"1_000", 0, true},
	} {
		text := "dataDir=/tmp/x\nclientPort=2181\n"
		if tt.value != "" {
			text += "snapSizeLimitInKb=" + tt.value + "\n"
		}
		c, _, err := parseString(t, text)
		if tt.bad {
			if err == nil {
				t.Errorf("snapSizeLimitInKb=%s: no error", tt.value)
			}
			continue
		}
		if err != nil {
			t.Errorf("snapSizeLimitInKb=%s: %v", tt.value, err)
			continue
		}
		if c.SnapSizeLimitKB != tt.want {
			t.Errorf("snapSizeLimitInKb=%s: %d, want %d", tt.value, c.SnapSizeLimitKB, tt.want)
		}
	}
}

func TestDigestEnabled(t *testing.T) {
	for text, want := range map[string]bool{"": true, "digest.enabled=true\n": true, "digest.enabled=false\n": false} {
		c, _, err := parseString(t, "dataDir=/tmp/x\nclientPort=2181\n"+text)
		if err != nil || c.DigestEnabled != want {
			t.Errorf("%q: DigestEnabled %v, %v; want %v", text, c.DigestEnabled, err, want)
		}
	}
}

func TestWALPrefill(t *testing.T) {
	for text, want := range map[string]bool{"": true, "zkgo.wal.prefill=true\n": true, "zkgo.wal.prefill=false\n": false} {
		c, _, err := parseString(t, "dataDir=/tmp/x\nclientPort=2181\n"+text)
		if err != nil || c.WALPrefill != want {
			t.Errorf("%q: WALPrefill %v, %v; want %v", text, c.WALPrefill, err, want)
		}
	}
}

func TestGroupCommitMaxWait(t *testing.T) {
	for text, want := range map[string]time.Duration{
		"":                                 0,
		"zkgo.groupCommit.maxWaitUs=250\n": 250 * time.Microsecond,
		"zkgo.groupCommit.maxWaitUs=0\n":   -1,
		"zkgo.groupCommit.maxWaitUs=-5\n":  -1,
	} {
		c, _, err := parseString(t, "dataDir=/tmp/x\nclientPort=2181\n"+text)
		if err != nil || c.CommitDelay != want {
			t.Errorf("%q: CommitDelay %v, %v; want %v", text, c.CommitDelay, err, want)
		}
	}
	if _, _, err := parseString(t, "dataDir=/tmp/x\nclientPort=2181\nzkgo.groupCommit.maxWaitUs=soon\n"); err == nil {
		t.Error("zkgo.groupCommit.maxWaitUs=soon: no error")
	}
}

func TestExistsCheckRead(t *testing.T) {
	for text, want := range map[string]bool{"": true, "zkgo.exists.checkRead=true\n": true, "zkgo.exists.checkRead=false\n": false} {
		c, _, err := parseString(t, "dataDir=/tmp/x\nclientPort=2181\n"+text)
		if err != nil || c.ExistsCheckRead != want {
			t.Errorf("%q: ExistsCheckRead %v, %v; want %v", text, c.ExistsCheckRead, err, want)
		}
	}
}

func TestParkAfter(t *testing.T) {
	for text, want := range map[string]time.Duration{
		"":                                   0,
		"zkgo.connection.parkAfterMs=1000\n": time.Second,
		"zkgo.connection.parkAfterMs=0\n":    -1,
		"zkgo.connection.parkAfterMs=-5\n":   -1,
	} {
		c, _, err := parseString(t, "dataDir=/tmp/x\nclientPort=2181\n"+text)
		if err != nil || c.ParkAfter != want {
			t.Errorf("%q: ParkAfter %v, %v; want %v", text, c.ParkAfter, err, want)
		}
	}
	if _, _, err := parseString(t, "dataDir=/tmp/x\nclientPort=2181\nzkgo.connection.parkAfterMs=soon\n"); err == nil {
		t.Error("a non-number parkAfterMs was accepted")
	}
}
