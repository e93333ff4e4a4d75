package server_test

import (
	"context"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/console"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// Attacks on the admin port with default settings, each a test: nothing
// read or written there that the ACLs forbid.

// adminBrowser is an HTTP client of srv's admin port whose connections
// come from the loopback address from (127.0.0.1, 127.0.0.2, …: distinct
// addresses for the ip scheme), with its own cookies.
type adminBrowser struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func newAdminBrowser(t *testing.T, srv *server.Server, from string) *adminBrowser {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	jar, _ := cookiejar.New(nil)
	return &adminBrowser{t: t, base: "http://" + srv.AdminAddr().String(), hc: &http.Client{Jar: jar, Transport: tr, Timeout: 30 * time.Second}}
}

func (b *adminBrowser) do(req *http.Request) (int, string) {
	b.t.Helper()
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *adminBrowser) get(p string) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.base+p, nil)
	return b.do(req)
}

func (b *adminBrowser) post(p string, form url.Values) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+p, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

var adminCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login logs in with a digest identity and returns the CSRF token.
func (b *adminBrowser) login(user, password string) string {
	b.t.Helper()
	if code, body := b.post("/login", url.Values{"user": {user}, "password": {password}}); code != http.StatusOK {
		b.t.Fatalf("login %s: %d %.1000s", user, code, body)
	}
	_, body := b.get("/")
	m := adminCSRF.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no CSRF token after logging in as %s:\n%.2000s", user, body)
	}
	return html.UnescapeString(m[1])
}

func consoleServer(t *testing.T, cfg console.Config, opts ...func(*server.Options)) *zktest.Server {
	return zktest.Start(t, zktest.WithSuperDigest(zk.DigestID("super", "secret")), withAdmin(append([]func(*server.Options){func(o *server.Options) {
		o.AdminConsole = console.ForServer(cfg)
	}}, opts...)...))
}

// Attack 1: the console's sessions came from 127.0.0.1 (it dialled the
// member's client port on loopback), so a znode whose ACL is
// ip:127.0.0.1 was read and written through the console from anywhere.
// The console's sessions now carry the HTTP user's address (a logged-in
// user's) or none that an ip ACL can match (the shared anonymous one).
func TestConsoleIPACLIsTheHTTPClients(t *testing.T) {
	zs := consoleServer(t, console.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zk.Connect(ctx, zs.Addr()) // from 127.0.0.1
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	local := []zk.ACL{{Perms: zk.PermAll, ID: zk.Id{Scheme: "ip", ID: "127.0.0.1"}}}
	if _, err := c.Create(ctx, "/secret", []byte("s3cret-data"), local, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/secret/kid", nil, local, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}

	far := newAdminBrowser(t, zs.Server, "127.0.0.2")
	code, body := far.get("/tree?path=/secret")
	if strings.Contains(body, "s3cret-data") {
		t.Fatalf("the console showed ip:127.0.0.1's data to 127.0.0.2 (%d):\n%.3000s", code, body)
	}
	if strings.Contains(body, ">kid<") {
		t.Fatalf("the console listed ip:127.0.0.1's children to 127.0.0.2:\n%.3000s", body)
	}
	csrf := far.login("alice", "pw")
	far.post("/write", url.Values{"csrf": {csrf}, "action": {"set"}, "path": {"/secret"}, "data": {"pwned"}, "version": {"-1"}})
	far.post("/write", url.Values{"csrf": {csrf}, "action": {"delete"}, "path": {"/secret/kid"}, "version": {"-1"}})
	if data, _, err := c.Get(ctx, "/secret"); err != nil || string(data) != "s3cret-data" {
		t.Fatalf("127.0.0.2 wrote ip:127.0.0.1's node through the console: %q %v", data, err)
	}
	if st, err := c.Exists(ctx, "/secret/kid"); err != nil || st == nil {
		t.Fatalf("127.0.0.2 deleted ip:127.0.0.1's node through the console: %v %v", st, err)
	}

	// A user at 127.0.0.1 is that address for the ip scheme.
	near := newAdminBrowser(t, zs.Server, "127.0.0.1")
	csrf = near.login("bob", "pw")
	near.post("/write", url.Values{"csrf": {csrf}, "action": {"set"}, "path": {"/secret"}, "data": {"from-loopback"}, "version": {"-1"}})
	if data, _, err := c.Get(ctx, "/secret"); err != nil || string(data) != "from-loopback" {
		t.Fatalf("127.0.0.1 could not write its own ip ACL'd node through the console: %q %v", data, err)
	}
}

// Attack 3: the console compared Origin with the request's own Host, and
// nothing checked Host, so a DNS-rebound name reached the console and the
// commands. Only configured and local names are served now.
func TestAdminHostAllowList(t *testing.T) {
	zs := consoleServer(t, console.Config{}, func(o *server.Options) { o.AdminAllowedHosts = []string{"zk.example.org"} })
	addr := zs.Server.AdminAddr().(*net.TCPAddr)
	b := newAdminBrowser(t, zs.Server, "127.0.0.1")
	try := func(host, path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
		req.Host = host
		return b.do(req)
	}
	for _, p := range []string{"/", "/tree?path=/", "/commands/ruok", "/commands/dump", "/commands/snapshot", "/metrics"} {
		if code, body := try("attacker.example:"+itoa(addr.Port), p); code != http.StatusMisdirectedRequest || !strings.Contains(body, "zkgo.admin.allowedHosts") {
			t.Errorf("Host attacker.example %s: %d %.300s", p, code, body)
		}
	}
	for _, h := range []string{"127.0.0.1:" + itoa(addr.Port), "localhost:" + itoa(addr.Port), "localhost", "zk.example.org:" + itoa(addr.Port), "ZK.example.org"} {
		if code, body := try(h, "/commands/ruok"); code != http.StatusOK {
			t.Errorf("Host %s: %d %.300s", h, code, body)
		}
	}
	// A rebound login form post: Origin equal to Host, both foreign.
	req, _ := http.NewRequest(http.MethodPost, b.base+"/login", strings.NewReader("user=a&password=b"))
	req.Host = "attacker.example"
	req.Header.Set("Origin", "http://attacker.example")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if code, _ := b.do(req); code != http.StatusMisdirectedRequest {
		t.Errorf("rebound login post: %d", code)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// Attack 4: /sessions showed every session's digest:user:<hash> to
// anonymous visitors. No page shows a digest hash.
func TestConsoleSessionsHideDigestHashes(t *testing.T) {
	zs := consoleServer(t, console.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zk.Connect(ctx, zs.Addr(), zk.WithAuth("digest", []byte("carol:hunter2")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := zk.DigestID("carol", "hunter2")
	hash := id[strings.IndexByte(id, ':')+1:]
	b := newAdminBrowser(t, zs.Server, "127.0.0.2")
	sid := "0x" + strconv.FormatUint(uint64(c.SessionID()), 16)
	for _, p := range []string{"/sessions", "/sessions?id=" + sid} {
		code, body := b.get(p)
		if code != http.StatusOK || !strings.Contains(body, "digest:carol") {
			t.Fatalf("%s: %d, no digest:carol:\n%.3000s", p, code, body)
		}
		if strings.Contains(html.UnescapeString(body), hash) {
			t.Fatalf("%s shows carol's digest hash %s:\n%.3000s", p, hash, body)
		}
	}
}

// Attack 6: the snapshot command let made-up digest credentials through
// when / had the default world:anyone ACL (every identity matches it), so
// anyone got the whole tree, ACL-protected data included. It needs the
// super user or an identity granted every permission on / by an entry
// that is not world:anyone.
func TestAdminSnapshotNotForAnyone(t *testing.T) {
	zs := consoleServer(t, console.Config{}, func(o *server.Options) { o.AdminSnapshot, o.AdminRateLimit = true, time.Nanosecond })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zk.Connect(ctx, zs.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create(ctx, "/private", []byte("private-data"), []zk.ACL{{Perms: zk.PermAll, ID: zk.Id{Scheme: "digest", ID: zk.DigestID("owner", "pw")}}}, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	for _, auth := range []string{"digest made:up", "digest anyone:anything"} {
		resp, body := snapshotGet(t, zs.Server, "?streaming=true", auth)
		if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), "private-data") {
			t.Fatalf("%s with world:anyone on /: %s, %d bytes", auth, resp.Status, len(body))
		}
	}
	if resp, body := snapshotGet(t, zs.Server, "?streaming=true", "digest super:secret"); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "private-data") {
		t.Fatalf("super: %s %.200s", resp.Status, body)
	}
}
