package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe/leader"
	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/zk"
)

func TestTreePage(t *testing.T) {
	e := startEnv(t, func(c *Config) { c.PageSize = 2 })
	zc := e.zconn()
	ctx := ctxT(t)
	for _, p := range []string{"/app", "/app/<img src=x onerror=alert(1)>", "/app/a b&c?d#e", "/app/ünï", "/app/z"} {
		if _, err := zc.Create(ctx, p, nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := zc.Set(ctx, "/app", []byte{0, 0xff, '<', 'b', '>'}, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create(ctx, "/app/z/json", []byte(`{"k":"<v>"}`), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	b := e.browser()

	code, body := b.get("/tree?path=/app")
	if code != http.StatusOK {
		t.Fatalf("tree: %d\n%s", code, body)
	}
	if strings.Contains(body, "<img src=x") || strings.Contains(body, "<b>") {
		t.Errorf("unescaped tree data in the page:\n%s", body)
	}
	// Sorted, two a page: "<img..." < "a b&c?d#e" < "z" < "ünï".
	if !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") || !strings.Contains(body, "a b&amp;c?d#e") || strings.Contains(body, ">z</a>") {
		t.Errorf("first page of children wrong:\n%s", body)
	}
	if !strings.Contains(body, "1–2 of 4") || !strings.Contains(body, `after=a&#43;b%26c%3Fd%23e`) {
		t.Errorf("pager wrong:\n%s", body)
	}
	if !strings.Contains(body, "00000000  00 ff 3c 62 3e") {
		t.Errorf("binary data not shown as hex:\n%s", body)
	}
	code, body = b.get("/tree?path=/app&after=" + url.QueryEscape("a b&c?d#e"))
	if code != http.StatusOK || !strings.Contains(body, ">z</a>") || !strings.Contains(body, ">ünï</a>") || !strings.Contains(body, "3–4 of 4") {
		t.Errorf("second page: %d\n%s", code, body)
	}
	// A child with an odd name, found by its link.
	code, body = b.get("/tree?path=" + url.QueryEscape("/app/a b&c?d#e"))
	if code != http.StatusOK || !strings.Contains(body, "/app/a b&amp;c?d#e") {
		t.Errorf("odd name: %d", code)
	}
	code, body = b.get("/tree?path=/app/z/json")
	if code != http.StatusOK || !strings.Contains(body, "&#34;k&#34;: &#34;&lt;v&gt;&#34;") {
		t.Errorf("json: %d\n%s", code, body)
	}
	for _, bad := range []string{"/tree?path=app", "/tree?path=/a/", "/tree?path=%ff", "/sessions?id=zz"} {
		if code, _ := b.get(bad); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, code)
		}
	}
	if code, _ := b.get("/tree?path=/nope"); code != http.StatusNotFound {
		t.Errorf("missing node: %d", code)
	}
	if code, _ := b.get("/nope"); code != http.StatusNotFound {
		t.Errorf("unknown page: %d", code)
	}
	if code, body := b.get("/static/console.js"); code != http.StatusOK || !strings.Contains(body, "EventSource") {
		t.Errorf("static: %d", code)
	}
}

func TestOverviewLocks(t *testing.T) {
	e := startEnv(t)
	ctx := ctxT(t)
	a, bconn := e.zconn(), e.zconn()
	ma := lock.NewMutex(a, "/locks/orders")
	if _, err := ma.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	mb := lock.NewMutex(bconn, "/locks/orders")
	got := make(chan error, 1)
	go func() { _, err := mb.Lock(ctx); got <- err }()
	l := leader.NewLatch(a, "/election/app", "node-a")
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Await(ctx); err != nil {
		t.Fatal(err)
	}

	br := e.browser()
	var body string
	eventually(t, "overview lists the lock with one waiter", func() bool {
		_, body = br.get("/")
		return strings.Contains(body, `data-path="/locks/orders"`) && strings.Contains(body, `<td class="waiters">1</td>`)
	})
	holder := ma.Grant()
	if !strings.Contains(body, hexID(a.SessionID())) || !strings.Contains(body, fmt.Sprintf("0x%x", holder.Token())) {
		t.Errorf("holder session %s or token %#x missing:\n%s", hexID(a.SessionID()), holder.Token(), body)
	}
	if !strings.Contains(body, `data-path="/election/app"`) || !strings.Contains(body, "node-a") {
		t.Errorf("latch missing:\n%s", body)
	}
	if !strings.Contains(body, "leader") || !strings.Contains(body, "zkgo-test") {
		t.Errorf("member status missing:\n%s", body)
	}
	_, body = br.get("/recipes")
	if !strings.Contains(body, hexID(bconn.SessionID())) || !strings.Contains(body, "waits (lock)") {
		t.Errorf("recipes page lacks the waiter:\n%s", body)
	}

	// The holder lets go: the waiter holds, nobody waits.
	if err := ma.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	eventually(t, "the waiter holds", func() bool {
		_, body = br.get("/")
		return strings.Contains(body, `<td class="waiters">0</td>`) && strings.Contains(body, hexID(bconn.SessionID()))
	})
	mb.Unlock(ctx)
}

func TestSessionsPages(t *testing.T) {
	e := startEnv(t)
	e.status.Update(func(_ *Member, s *[]SessionInfo) {
		for i := range 250 {
			*s = append(*s, SessionInfo{ID: int64(0x1000 + i), ClientAddr: fmt.Sprintf("10.0.0.%d:5000", i%250), Timeout: 30 * time.Second, LastSeen: time.Now()})
		}
		(*s)[3].Ephemerals = []string{"/locks/x/<lock>"}
		(*s)[3].Watches = []Watch{{Path: "/cfg", Kind: "data"}}
	})
	b := e.browser()
	code, body := b.get("/sessions")
	if code != http.StatusOK || !strings.Contains(body, "250 sessions") || !strings.Contains(body, "0x1000") || strings.Contains(body, ">0x10c8<") || !strings.Contains(body, "after=0x10c7") {
		t.Fatalf("sessions: %d\n%s", code, body)
	}
	_, body = b.get("/sessions?after=0x10c7")
	if !strings.Contains(body, "0x10c8") || strings.Contains(body, ">0x1000<") {
		t.Errorf("second page:\n%s", body)
	}
	code, body = b.get("/sessions?id=0x1003")
	if code != http.StatusOK || !strings.Contains(body, "/locks/x/&lt;lock&gt;") || !strings.Contains(body, "/cfg") || !strings.Contains(body, "10.0.0.3:5000") {
		t.Errorf("session detail: %d\n%s", code, body)
	}
	if code, _ := b.get("/sessions?id=0x9"); code != http.StatusNotFound {
		t.Errorf("unknown session: %d", code)
	}
}

func TestAuthFlow(t *testing.T) {
	e := startEnv(t)
	ctx := ctxT(t)
	zc := e.zconn()
	if _, err := zc.Create(ctx, "/secure", []byte("v0"), zk.DigestACL(zk.PermAll, "bob", "pw-bob"), zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create(ctx, "/open", []byte("o"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	set := func(b *browser, csrf, p, data, version string) (int, string) {
		return b.post("/write", url.Values{"csrf": {csrf}, "action": {"set"}, "path": {p}, "data": {data}, "version": {version}})
	}
	anon := e.browser()
	if code, _ := set(anon, "x", "/open", "hacked", "-1"); code != http.StatusUnauthorized {
		t.Errorf("anonymous write: %d, want 401", code)
	}
	if _, body := anon.get("/tree?path=/open"); strings.Contains(body, `id="form-set"`) || !strings.Contains(body, "Read-only") {
		t.Errorf("anonymous page offers a write form")
	}

	alice := e.browser()
	alice.login("alice", "pw-alice")
	csrf := alice.csrf()
	if code, _ := set(alice, "", "/open", "x", "0"); code != http.StatusForbidden {
		t.Errorf("write without CSRF token: %d, want 403", code)
	}
	if code, _ := set(alice, csrf+"x", "/open", "x", "0"); code != http.StatusForbidden {
		t.Errorf("write with a wrong CSRF token: %d, want 403", code)
	}
	req, _ := http.NewRequest("POST", e.hs.URL+"/write", strings.NewReader(url.Values{"csrf": {csrf}, "action": {"set"}, "path": {"/open"}, "data": {"x"}, "version": {"0"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	if resp, err := alice.hc.Do(req); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-origin write: %d, want 403", resp.StatusCode)
		}
	}
	// The ACL decides: alice may not touch /secure, nor see it (exists
	// needs READ, as since ZooKeeper 3.8.4, and getACL READ or ADMIN):
	// the page after the refused write is a 403 that says why.
	code, body := set(alice, csrf, "/secure", "alice was here", "0")
	if code != http.StatusForbidden || !strings.Contains(body, "NoAuth") || !strings.Contains(body, "hides /secure") {
		t.Errorf("alice on /secure: %d\n%s", code, body)
	}
	if d, _, _ := e.zconn(zk.WithAuth("digest", []byte("bob:pw-bob"))).Get(ctx, "/secure"); string(d) != "v0" {
		t.Errorf("/secure changed to %q", d)
	}
	// Version checks.
	if _, body := set(alice, csrf, "/open", "new", "7"); !strings.Contains(body, "BadVersion") {
		t.Errorf("stale version not refused:\n%s", body)
	}

	bob := e.browser()
	bob.login("bob", "pw-bob")
	bcsrf := bob.csrf()
	if _, body := set(bob, bcsrf, "/secure", "bob's", "0"); !strings.Contains(body, "set /secure: now version 1") {
		t.Errorf("bob's set:\n%s", body)
	}
	if _, body := bob.post("/write", url.Values{"csrf": {bcsrf}, "action": {"create"}, "path": {"/secure"}, "name": {"child"}, "data": {"c"}, "acl": {"creator"}}); !strings.Contains(body, "created /secure/child") {
		t.Errorf("bob's create:\n%s", body)
	}
	if _, body := bob.post("/write", url.Values{"csrf": {bcsrf}, "action": {"set"}, "path": {"/secure/child"}, "data": {"00 ff 10"}, "encoding": {"hex"}, "version": {"0"}}); !strings.Contains(body, "now version 1, 3 bytes") {
		t.Errorf("hex set:\n%s", body)
	}
	if _, body := bob.post("/write", url.Values{"csrf": {bcsrf}, "action": {"delete"}, "path": {"/secure/child"}, "version": {"1"}}); !strings.Contains(body, "deleted /secure/child") {
		t.Errorf("bob's delete:\n%s", body)
	}

	// The super user may do anything.
	su := e.browser()
	su.login("super", superPassword)
	if _, body := set(su, su.csrf(), "/secure", "super", "1"); !strings.Contains(body, "now version 2") {
		t.Errorf("super's set:\n%s", body)
	}

	// Logout ends the login: the token no longer writes.
	if code, body := bob.post("/logout", url.Values{"csrf": {bcsrf}}); code != http.StatusOK || strings.Contains(body, "acting as") {
		t.Errorf("logout: %d", code)
	}
	if code, _ := set(bob, bcsrf, "/secure", "again", "-1"); code != http.StatusUnauthorized {
		t.Errorf("write after logout: %d, want 401", code)
	}
	if n := e.con.logins.count(); n != 2 {
		t.Errorf("%d logins, want 2 (alice, super)", n)
	}
}

func TestLoginBounds(t *testing.T) {
	e := startEnv(t, func(c *Config) { c.MaxLogins = 1; c.LoginIdle = 200 * time.Millisecond })
	a := e.browser()
	a.login("a", "x")
	b := e.browser()
	if code, body := b.post("/login", url.Values{"user": {"b"}, "password": {"y"}}); code != http.StatusServiceUnavailable {
		t.Errorf("second login with MaxLogins 1: %d\n%s", code, body)
	}
	time.Sleep(300 * time.Millisecond) // a's login idles out
	b.login("b", "y")
	if _, body := a.get("/"); strings.Contains(body, "acting as") {
		t.Errorf("an idle login survived")
	}
	for _, bad := range []url.Values{{"user": {"a:b"}, "password": {"x"}}, {"user": {""}, "password": {"x"}}, {"user": {"a"}, "password": {""}}} {
		if code, _ := e.browser().post("/login", bad); code != http.StatusBadRequest {
			t.Errorf("login %v: %d", bad, code)
		}
	}
	// Open redirects are refused.
	if got := localNext("//evil.example/", "/"); got != "/" {
		t.Errorf("localNext: %q", got)
	}
}

func TestEvents(t *testing.T) {
	e := startEnv(t, func(c *Config) { c.MaxStreams = 2 })
	ctx := ctxT(t)
	zc := e.zconn()
	if _, err := zc.Create(ctx, "/live", []byte("0"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	s, code := b.stream("/events?page=tree&path=/live")
	if code != http.StatusOK {
		t.Fatalf("stream: %d", code)
	}
	// The stream is up once the shared session has the watch; a write then
	// makes an event.
	eventually(t, "a change event after a write", func() bool {
		if _, err := zc.Set(ctx, "/live", []byte("1"), -1); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-s.evs:
			return ev == "change"
		case <-time.After(200 * time.Millisecond):
			return false
		}
	})
	if _, err := zc.Create(ctx, "/live/kid", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	if ev := s.next(t, 10*time.Second); ev != "change" {
		t.Errorf("after a child create: %q", ev)
	}

	// The overview stream counts too; a third is refused.
	o, code := b.stream("/events?page=overview")
	if code != http.StatusOK {
		t.Fatalf("overview stream: %d", code)
	}
	if _, code := b.stream("/events?page=tree&path=/"); code != http.StatusServiceUnavailable {
		t.Errorf("third stream: %d, want 503", code)
	}
	// The overview stream reports a status change (after the events of
	// its first scan have passed).
	for quiet := false; !quiet; {
		select {
		case <-o.evs:
		case <-time.After(700 * time.Millisecond):
			quiet = true
		}
	}
	e.status.Update(func(m *Member, _ *[]SessionInfo) { m.Role = RoleFollower })
	eventually(t, "an overview event after a status change", func() bool {
		select {
		case ev := <-o.evs:
			return ev == "change"
		case <-time.After(200 * time.Millisecond):
			return false
		}
	})
	for _, bad := range []string{"/events?page=tree&path=nope", "/events?page=what"} {
		o.resp.Body.Close()
		s.resp.Body.Close()
		eventually(t, "slots free", func() bool { return len(e.con.streams) == 0 })
		if _, code := b.stream(bad); code != http.StatusBadRequest {
			t.Errorf("%s: %d", bad, code)
		}
	}
}

func TestEventsMaxAge(t *testing.T) {
	e := startEnv(t, func(c *Config) { c.StreamMaxAge = 300 * time.Millisecond })
	s, code := e.browser().stream("/events?page=tree&path=/")
	if code != http.StatusOK {
		t.Fatalf("stream: %d", code)
	}
	if ev := s.next(t, 5*time.Second); ev != "" {
		t.Errorf("got %q, want the end of the stream", ev)
	}
	eventually(t, "slot freed", func() bool { return len(e.con.streams) == 0 })
}

func TestBodyBound(t *testing.T) {
	e := startEnv(t)
	b := e.browser()
	b.login("u", "p")
	big := strings.Repeat("x", maxBody+1)
	code, _ := b.post("/write", url.Values{"csrf": {b.csrf()}, "action": {"set"}, "path": {"/"}, "data": {big}, "version": {"-1"}})
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: %d, want 413", code)
	}
}

func TestTreeManyChildren(t *testing.T) {
	e := startEnv(t)
	ctx := ctxT(t)
	zc := e.zconn()
	const n = 3000
	if _, err := zc.Create(ctx, "/big", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			_, err := zc.Create(ctx, fmt.Sprintf("/big/item-%05d", i), nil, zk.OpenACLUnsafe, zk.ModePersistent)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	b := e.browser()
	_, body := b.get("/tree?path=/big")
	if !strings.Contains(body, "1–200 of 3000") || !strings.Contains(body, ">item-00199<") || strings.Contains(body, ">item-00200<") || !strings.Contains(body, "after=item-00199") {
		t.Fatalf("first page wrong:\n%.3000s", body)
	}
	_, body = b.get("/tree?path=/big&from=item-02990")
	if !strings.Contains(body, "2991–3000 of 3000") || !strings.Contains(body, ">item-02999<") {
		t.Errorf("jump wrong:\n%.3000s", body)
	}
	// The sorted list is cached and read again after a change.
	e.con.kids.mu.Lock()
	cached := len(e.con.kids.m["/big"].names)
	e.con.kids.mu.Unlock()
	if cached != n {
		t.Errorf("cache holds %d names of /big, want %d", cached, n)
	}
	if _, err := zc.Create(ctx, "/big/item-00000a", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	_, body = b.get("/tree?path=/big")
	if !strings.Contains(body, "1–200 of 3001") || !strings.Contains(body, ">item-00000a<") {
		t.Errorf("stale cache:\n%.3000s", body)
	}
}

// TestRecognizesGoRecipes checks recognition against the nodes zkgo's own
// Curator-compatible recipes write: a read-write lock and a semaphore,
// each with a holder and a waiter.
func TestRecognizesGoRecipes(t *testing.T) {
	e := startEnv(t)
	ctx := ctxT(t)
	a, b := e.zconn(), e.zconn()
	if _, err := lock.NewRWMutex(a, "/rw").RLock(ctx); err != nil {
		t.Fatal(err)
	}
	go lock.NewRWMutex(b, "/rw").Lock(ctx)
	if _, err := lock.NewSemaphore(a, "/sem", 1).Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	go lock.NewSemaphore(b, "/sem", 1).Acquire(ctx)

	want := []string{
		fmt.Sprintf("rwlock /rw: read@%x | write1@%x", a.SessionID(), b.SessionID()),
		// b holds the semaphore's internal lock and waits with its lease
		// node (lease1): that lease is shown waiting.
		fmt.Sprintf("semaphore /sem: lease@%x | lease1@%x", a.SessionID(), b.SessionID()),
	}
	var got []string
	eventually(t, "both recipes with a waiter", func() bool {
		got = got[:0]
		res := Scan(ctx, zkReader{e.zconn()}, ScanOptions{}, time.Now())
		for _, r := range res.Recipes {
			got = append(got, summary(r))
		}
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			return true
		}
		t.Logf("got %q", got)
		return false
	})
}

func TestServerDown(t *testing.T) {
	if _, err := New(Config{Servers: "127.0.0.1:1", RecipeRoots: []string{"locks"}}); err == nil {
		t.Error("a relative recipe root was accepted")
	}
	if _, err := New(Config{}); err == nil {
		t.Error("no servers accepted")
	}
	c, err := New(Config{Servers: "127.0.0.1:1", RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"/tree?path=/", "/", "/sessions"} {
		rec := httptest.NewRecorder()
		start := time.Now()
		c.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if time.Since(start) > 5*time.Second {
			t.Errorf("%s took %v", p, time.Since(start))
		}
		if p == "/tree?path=/" && rec.Code != http.StatusBadGateway {
			t.Errorf("%s: %d, want 502", p, rec.Code)
		}
		if p != "/tree?path=/" && rec.Code != http.StatusOK {
			t.Errorf("%s: %d, want 200 (with the errors on the page)", p, rec.Code)
		}
	}
}

// A member that waits to form, to join, or for the configured members
// says so on the overview, as in srvr.
func TestOverviewShowsWhatTheMemberWaitsFor(t *testing.T) {
	e := startEnv(t)
	e.status.Update(func(m *Member, _ *[]SessionInfo) {
		m.Waiting = "forming: 1 of 3 voters answered that they can form the ensemble (2 needed)"
	})
	br := e.browser()
	eventually(t, "the overview says what the member waits for", func() bool {
		_, body := br.get("/")
		return strings.Contains(body, "Waiting for") && strings.Contains(body, "forming: 1 of 3 voters answered")
	})
}
