package main

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// fullVersionRE is how tools read srvr's "Zookeeper version:" (go-
// zookeeper's FLWSrvr: the part before the comma, then a date it parses
// as "01/02/2006 15:04 MST").
var fullVersionRE = regexp.MustCompile(`^3\.8\.0-zkgo-([A-Za-z0-9\.\-]+), built on (\d\d/\d\d/\d\d\d\d \d\d:\d\d [A-Za-z0-9:\+\-]+)$`)

// gitHead is the commit the test runs in, or "" outside a repository.
func gitHead(t *testing.T) string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// versionField is the value of "key:" in zkgo version's output.
func versionField(out, key string) string {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestVersionCommand: zkgo version prints the commit Go stamped into the
// binary, and the version string it reports is the one srvr prints.
func TestVersionCommand(t *testing.T) {
	out, err := exec.Command(binary, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("zkgo version: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.HasPrefix(text, "zkgo ") {
		t.Fatalf("zkgo version:\n%s", text)
	}
	reports := versionField(text, "reports")
	if !fullVersionRE.MatchString(reports) {
		t.Fatalf("reports %q: not ZooKeeper's shape", reports)
	}
	// The commit go build stamped (HEAD may have moved since TestMain).
	if head := stampedRev; vcsStamped && head != "" {
		if rev := versionField(text, "revision"); rev != head {
			t.Errorf("revision %q, want HEAD %s\n%s", rev, head, text)
		}
		if !strings.Contains(reports, "-"+head[:12]) {
			t.Errorf("reports %q without the revision %s", reports, head[:12])
		}
		if versionField(text, "time") == "" {
			t.Errorf("no commit time:\n%s", text)
		}
	} else {
		t.Logf("binary not stamped with a commit (vcs %v, HEAD %q): revision not checked", vcsStamped, head)
	}
	short, err := exec.Command(binary, "version", "-short").Output()
	if err != nil || strings.TrimSpace(string(short)) != strings.TrimPrefix(strings.SplitN(text, "\n", 2)[0], "zkgo ") {
		t.Errorf("version -short: %q %v", short, err)
	}

	_, addr := startServer(t, "-addr", "127.0.0.1:0", "-admin-addr", "off")
	srvr, err := zk.FourLetterWord(t.Context(), addr, "srvr")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(srvr, "Zookeeper version: "+reports+"\n") {
		t.Fatalf("srvr does not report %q:\n%s", reports, srvr)
	}
}

func TestMakeBuildInfo(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260304050607-0123456789ab+dirty"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-03-04T05:06:07Z"}, {Key: "vcs.modified", Value: "true"}}}
	commit := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, tt := range []struct {
		name               string
		bi                 *debug.BuildInfo
		ldVer, ldRev, ldAt string
		want               buildInfo
	}{
		{"nothing known", nil, "", "", "", buildInfo{Version: "dev"}},
		{"go run", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "", "", buildInfo{Version: "dev"}},
		{"stamped by go build", stamped, "", "", "", buildInfo{Version: stamped.Main.Version, Revision: "0123456789abcdef0123456789abcdef01234567", Time: commit, Modified: true}},
		{"release ldflags win", stamped, "v1.2.0", "fedcba9876543210", "2026-05-06T07:08:09+02:00",
			buildInfo{Version: "v1.2.0", Revision: "fedcba9876543210", Time: time.Date(2026, 5, 6, 5, 8, 9, 0, time.UTC)}},
		{"dirty revision", nil, "", "fedcba9876543210-dirty", "", buildInfo{Version: "dev", Revision: "fedcba9876543210", Modified: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := makeBuildInfo(tt.bi, tt.ldVer, tt.ldRev, tt.ldAt)
			if got.Version != tt.want.Version || got.Revision != tt.want.Revision || !got.Time.Equal(tt.want.Time) || got.Modified != tt.want.Modified {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestHealth: zkgo health exits 0 on imok, 1 when ruok is not whitelisted
// or nothing listens.
func TestHealth(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	os.WriteFile(cfg, []byte("tickTime=100\ndataDir="+dir+"\nclientPort=2181\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n"), 0o644)
	_, addr := startServer(t, "-addr", "127.0.0.1:0", cfg)
	_, noRuok := startServer(t, "-addr", "127.0.0.1:0", "-admin-addr", "off") // srvr only
	for _, tt := range []struct {
		name string
		args []string
		want int
		out  string
	}{
		{"imok", []string{"-server", addr}, 0, "imok\n"},
		{"serving", []string{"-server", addr, "-serving"}, 0, "imok (standalone)\n"},
		{"quiet", []string{"-q", "-server", addr}, 0, ""},
		{"ruok not whitelisted", []string{"-server", noRuok}, 1, "whitelist"},
		{"nothing listening", []string{"-server", fmt.Sprintf("127.0.0.1:%d", zktest.FreePort(t)), "-timeout", "2s"}, 1, "zkgo health"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(binary, append([]string{"health"}, tt.args...)...).CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.want || (tt.want == 0 && string(out) != tt.out) || (tt.want != 0 && !strings.Contains(string(out), tt.out)) {
				t.Fatalf("exit %d, want %d; output %q, want %q", code, tt.want, out, tt.out)
			}
		})
	}
}

func TestApplyZooEnv(t *testing.T) {
	const template = "# default\ntickTime=2000\ndataDir=/data\nclientPort=2181\n4lw.commands.whitelist=ruok,srvr\n"
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"nothing set", nil, template},
		{"keys replaced and added", map[string]string{"ZOO_TICK_TIME": "500", "ZOO_INIT_LIMIT": "7", "ZOO_4LW_COMMANDS_WHITELIST": "*"},
			"# default\ntickTime=500\ndataDir=/data\nclientPort=2181\n4lw.commands.whitelist=*\ninitLimit=7\n"},
		{"servers with client ports", map[string]string{"ZOO_SERVERS": "server.1=zoo1:2888:3888;2181  server.2=zoo2:2888:3888;2181\n"},
			"# default\ntickTime=2000\ndataDir=/data\n4lw.commands.whitelist=ruok,srvr\nserver.1=zoo1:2888:3888;2181\nserver.2=zoo2:2888:3888;2181\n"},
		{"servers without client ports (3.4 style)", map[string]string{"ZOO_SERVERS": "server.1=zoo1:2888:3888 server.2=zoo2:2888:3888"},
			"# default\ntickTime=2000\ndataDir=/data\nclientPort=2181\n4lw.commands.whitelist=ruok,srvr\nserver.1=zoo1:2888:3888\nserver.2=zoo2:2888:3888\n"},
		{"extra", map[string]string{"ZOO_CFG_EXTRA": "metricsProvider.httpPort=7001 dataDir=/other"},
			"# default\ntickTime=2000\ndataDir=/other\nclientPort=2181\n4lw.commands.whitelist=ruok,srvr\nmetricsProvider.httpPort=7001\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := applyZooEnv(template, func(k string) string { return tt.env[k] }); got != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// The container's zoo.cfg is written once, with myid; a restart of the
// same container (the file exists) uses it unchanged.
func TestContainerConfigOnce(t *testing.T) {
	dir := t.TempDir()
	template := filepath.Join(dir, "template.cfg")
	os.WriteFile(template, []byte("tickTime=2000\ndataDir=data\nclientPort=2181\n"), 0o644)
	env := map[string]string{"ZOO_CONF_DIR": filepath.Join(dir, "conf"), "ZOO_MY_ID": "2", "ZOO_TICK_TIME": "300"}
	getenv := func(k string) string { return env[k] }
	path, err := containerConfig(template, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "tickTime=300\ndataDir=data\nclientPort=2181\n" {
		t.Fatalf("zoo.cfg:\n%s", b)
	}
	myid := filepath.Join(dir, "conf", "data", "myid") // dataDir relative to the configuration
	if b, _ := os.ReadFile(myid); string(b) != "2\n" {
		t.Fatalf("myid %q", b)
	}
	env["ZOO_TICK_TIME"], env["ZOO_MY_ID"] = "400", "3"
	if _, err := containerConfig(template, getenv); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "tickTime=300\n") {
		t.Fatalf("zoo.cfg rewritten at the second start:\n%s", b)
	}
	if b, _ := os.ReadFile(myid); string(b) != "2\n" {
		t.Fatalf("myid rewritten: %q", b)
	}
	env["ZOO_MY_ID"] = "x"
	if _, err := containerConfig(template, getenv); err == nil {
		t.Fatal("ZOO_MY_ID=x accepted")
	}
}

// TestContainerEnsemble is packaging/compose.yaml without Docker: three
// "zkgo container" processes configured only by the official image's
// variables, from the image's zoo.cfg, form an ensemble that zkgo health
// finds serving.
func TestContainerEnsemble(t *testing.T) {
	const n = 3
	base := t.TempDir()
	template, err := filepath.Abs("../../packaging/zoo.cfg")
	if err != nil {
		t.Fatal(err)
	}
	var servers []string
	for i := 1; i <= n; i++ {
		servers = append(servers, fmt.Sprintf("server.%d=127.0.0.1:%d:%d;127.0.0.1:%d", i, zktest.FreePort(t), zktest.FreePort(t), zktest.FreePort(t)))
	}
	addrs := make([]string, n)
	for i := range n {
		env := []string{
			"ZOO_CONF_DIR=" + filepath.Join(base, fmt.Sprint("conf", i+1)),
			"ZOO_DATA_DIR=" + filepath.Join(base, fmt.Sprint("data", i+1)),
			fmt.Sprint("ZOO_MY_ID=", i+1),
			"ZOO_SERVERS=" + strings.Join(servers, " "),
			"ZOO_TICK_TIME=100",
			"ZOO_ADMINSERVER_ENABLED=false",
			"ZOO_CFG_EXTRA=metricsProvider.httpHost=127.0.0.1 metricsProvider.httpPort=0",
		}
		_, addrs[i], _ = startCommandLog(t, env, "container", "-template", template, "--", "-log-level", "warn")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	modes := map[string]int{}
	for i, addr := range addrs {
		for {
			out, err := exec.CommandContext(ctx, binary, "health", "-serving", "-server", addr).CombinedOutput()
			if err == nil {
				m := strings.TrimSuffix(strings.TrimPrefix(string(out), "imok ("), ")\n")
				modes[m]++
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("member %d never healthy: %s", i+1, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if modes["leader"] != 1 || modes["follower"] != n-1 {
		t.Fatalf("modes %v, want one leader and %d followers", modes, n-1)
	}
	cfg, _ := os.ReadFile(filepath.Join(base, "conf1", "zoo.cfg"))
	if !strings.Contains(string(cfg), servers[2]+"\n") || strings.Contains(string(cfg), "clientPort=") {
		t.Errorf("conf1/zoo.cfg:\n%s", cfg)
	}
	if b, _ := os.ReadFile(filepath.Join(base, "data2", "myid")); string(b) != "2\n" {
		t.Errorf("data2/myid %q", b)
	}
}

// TestReleaseScript runs scripts/release.sh for this machine's platform:
// a static binary whose version, commit and commit time come from the
// linker, listed in SHA256SUMS.
func TestReleaseScript(t *testing.T) {
	if testing.Short() || os.Getenv("ZKGO_TEST_RELEASE") == "" {
		t.Skip("a static -trimpath build of zkgo (minutes on 2 cores, nothing cached): set ZKGO_TEST_RELEASE=1 to run it")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dist := t.TempDir()
	cmd := exec.Command("bash", "../../scripts/release.sh")
	cmd.Env = append(os.Environ(), "TARGETS="+runtime.GOOS+"/"+runtime.GOARCH, "DIST="+dist, "VERSION=v9.8.7-test")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	name := "zkgo-v9.8.7-test-" + runtime.GOOS + "-" + runtime.GOARCH
	bin := filepath.Join(dist, name)
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sums, _ := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if want := fmt.Sprintf("%x  %s\n", sha256.Sum256(data), name); string(sums) != want {
		t.Fatalf("SHA256SUMS %q, want %q", sums, want)
	}
	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the binary has a dynamic loader: not static")
			}
		}
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", name, err, out)
	}
	text := string(out)
	reports := versionField(text, "reports")
	if !strings.HasPrefix(text, "zkgo v9.8.7-test\n") || !fullVersionRE.MatchString(reports) || !strings.HasPrefix(reports, "3.8.0-zkgo-9.8.7-test") {
		t.Fatalf("version:\n%s", text)
	}
	if head := gitHead(t); head != "" {
		if rev := versionField(text, "revision"); rev != head {
			t.Errorf("revision %q, want HEAD %s", rev, head)
		}
		if !strings.HasPrefix(reports, "3.8.0-zkgo-9.8.7-test-"+head[:12]) || versionField(text, "time") == "" {
			t.Errorf("reports %q, time %q: want the commit and its time", reports, versionField(text, "time"))
		}
	}
}
