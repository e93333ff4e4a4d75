package console

import (
	"context"
	"fmt"
	"github.com/zkgo/zkgo/tests/framework/browsertest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zkgo/zkgo/recipe/leader"
	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/zk"
)

// Browser tests drive a headless Chromium through the console. They skip
// when no Chromium is installed (set ZKGO_CHROMIUM to a binary to choose
// one). With ZKGO_CONSOLE_SCREENSHOTS=1 they also write a PNG of each page
// into docs/console/.

func chromium(t *testing.T) string { return browsertest.Chromium(t) }

// tab is a browser tab on a console.
type tab struct {
	t   *testing.T
	ctx context.Context
	e   *env
}

func (e *env) tab(t *testing.T) *tab {
	t.Helper()
	exe := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(acancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, tcancel := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(tcancel)
	return &tab{t: t, ctx: ctx, e: e}
}

func (b *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

// open navigates to a console URL and waits for the page to load.
func (b *tab) open(p string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.e.hs.URL + p))
	b.waitJS("page loaded", `document.readyState === "complete"`)
}

// js evaluates an expression.
func js[T any](b *tab, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until a boolean expression holds. The bound is generous:
// the whole suite on two cores (JVMs, Chromium, fsyncs) once kept a page
// from updating for 20 s.
func (b *tab) waitJS(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(waitJSBound)
	for {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr))
		if err == nil && v {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			b.t.Fatalf("%s: %s did not hold within %v (err %v); page:\n%s", what, expr, waitJSBound, err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitJSBound bounds waitJS.
const waitJSBound = time.Minute

// click clicks an element and waits for the next page to load.
func (b *tab) clickAndLoad(sel string) {
	b.t.Helper()
	js[bool](b, `window.__before = true`)
	b.do(chromedp.Click(chromedp.CSS(sel)))
	b.waitJS("next page after clicking "+sel, `window.__before === undefined && document.readyState === "complete"`)
}

// markPage and sameDocument tell whether the page was reloaded meanwhile.
func (b *tab) markPage() { js[bool](b, `window.__marker = true`) }
func (b *tab) sameDocument() bool {
	return js[bool](b, `window.__marker === true`)
}

func (b *tab) screenshot(name string) {
	b.t.Helper()
	if os.Getenv("ZKGO_CONSOLE_SCREENSHOTS") == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	p := filepath.Join("..", "docs", "console", name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("wrote %s", p)
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func TestBrowser(t *testing.T) {
	chromium(t)
	e := startEnv(t, func(c *Config) { c.ScanMaxAge = 200 * time.Millisecond })
	ctx := ctxT(t)
	zc := e.zconn()
	for _, n := range [][2]string{
		{"/app", ""},
		{"/app/config", `{"feature":{"enabled":true,"ratio":0.25},"owners":["ops","dev"]}`},
		{"/app/services", ""},
		{"/app/services/api-1", "10.0.0.7:8080"},
		{"/app/services/api-2", "10.0.0.8:8080"},
		{"/app/binary", "\x00\x01\x02\xffzk"},
		{"/app/<odd> & \"name\"", "odd"},
	} {
		if _, err := zc.Create(ctx, n[0], []byte(n[1]), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	e.status.Update(func(m *Member, _ *[]SessionInfo) {
		m.Znodes, m.Sessions, m.Connections = 23, 6, 6
		m.LastSnapshot = Snapshot{Zxid: 0x0f, Index: 15, Size: 4 << 10, Time: time.Now().Add(-time.Minute)}
		m.FsyncLatency, m.FsyncLatencyMax = 1200*time.Microsecond, 4*time.Millisecond
		m.Ensemble = []Peer{
			{ID: 1, Role: RoleLeader, ClientAddr: "10.0.0.1:2181", PeerAddr: "10.0.0.1:2888", Voting: true, Reachable: true, Match: 10},
			{ID: 2, Role: RoleFollower, ClientAddr: "10.0.0.2:2181", PeerAddr: "10.0.0.2:2888", Voting: true, Reachable: true, Match: 10},
			{ID: 3, Role: RoleFollower, ClientAddr: "10.0.0.3:2181", PeerAddr: "10.0.0.3:2888", Voting: true, Reachable: true, Match: 9, Lag: 1},
		}
	})
	b := e.tab(t)

	t.Run("navigate the tree", func(t *testing.T) {
		b.t = t
		b.open("/")
		// Keyboard: "g" then "t" goes to the tree.
		js[bool](b, `window.__before = true`)
		b.do(chromedp.KeyEvent("g"), chromedp.KeyEvent("t"))
		b.waitJS("tree page", `window.__before === undefined && location.pathname === "/tree" && document.readyState === "complete"`)
		b.clickAndLoad(`.children-list a[href="/tree?path=%2Fapp"]`)
		b.waitJS("children of /app", `document.querySelectorAll(".children-list li").length === 4`)
		if got := js[string](b, `document.querySelector(".children-list").innerText`); !strings.Contains(got, `<odd> & "name"`) {
			t.Errorf("odd name not shown as text: %q", got)
		}
		b.clickAndLoad(`.children-list a[href="/tree?path=%2Fapp%2Fconfig"]`)
		b.waitJS("pretty JSON", `document.querySelector("pre.znode-data").innerText.includes('"enabled": true')`)
		b.screenshot("tree")
		b.clickAndLoad(`.views a[href$="view=hex"]`)
		b.waitJS("hex view", `document.querySelector("pre.znode-data").innerText.startsWith("00000000  7b 22")`)
		b.clickAndLoad(`.crumbs a[href="/tree?path=%2Fapp"]`)
		b.clickAndLoad(`.children-list a[href="/tree?path=%2Fapp%2Fbinary"]`)
		b.waitJS("binary as hex", `document.querySelector("pre.znode-data").innerText.includes("00 01 02 ff 7a 6b")`)
	})

	t.Run("log in and edit", func(t *testing.T) {
		b.t = t
		b.open("/tree?path=%2Fapp%2Fservices%2Fapi-1")
		b.clickAndLoad(`.edit a`)
		// The form is filled and sent by script, not through chromedp's
		// node ids: right after a navigation those can still name the
		// previous document's nodes ("No node with given id found", once
		// on a loaded machine).
		b.waitJS("login form", `document.getElementById("user") !== null && document.getElementById("password") !== null`)
		js[bool](b, `(() => { document.getElementById("user").value = "super"; document.getElementById("password").value = `+strconv.Quote(superPassword)+`; return true })()`)
		js[bool](b, `window.__before = true`)
		js[bool](b, `(() => { document.getElementById("password").form.requestSubmit(); return true })()`)
		b.waitJS("back on the node, logged in", `window.__before === undefined && location.search.includes("api-1") && document.body.innerText.includes("acting as the super user")`)
		b.do(chromedp.SetValue(chromedp.ID("set-data"), "10.0.0.9:9090"))
		b.clickAndLoad(`#form-set button[type=submit]`)
		b.waitJS("flash", `document.querySelector(".flash").innerText.includes("now version 1")`)
		if d, _, err := zc.Get(ctx, "/app/services/api-1"); err != nil || string(d) != "10.0.0.9:9090" {
			t.Errorf("node after the edit: %q %v", d, err)
		}
		// A stale version is refused.
		if _, err := zc.Set(ctx, "/app/services/api-1", []byte("changed elsewhere"), -1); err != nil {
			t.Fatal(err)
		}
		b.do(chromedp.SetValue(chromedp.ID("set-version"), "1"))
		b.clickAndLoad(`#form-set button[type=submit]`)
		b.waitJS("BadVersion", `document.querySelector(".flash").innerText.includes("BadVersion")`)
	})

	t.Run("node updates live", func(t *testing.T) {
		b.t = t
		b.open("/tree?path=%2Fapp%2Fservices")
		b.waitJS("stream open", `document.getElementById("live-state").innerText === "live"`)
		b.markPage()
		if _, err := zc.Create(ctx, "/app/services/api-3", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		b.waitJS("new child listed", `document.querySelector(".children-list").innerText.includes("api-3")`)
		if !b.sameDocument() {
			t.Error("the page was reloaded")
		}
	})

	t.Run("lock queue forms and drains", func(t *testing.T) {
		b.t = t
		b.open("/recipes")
		b.waitJS("stream open", `document.getElementById("live-state").innerText === "live"`)
		b.markPage()
		var mus []*lock.Mutex
		var conns []*zk.Conn
		for i := range 3 {
			c := e.zconn()
			conns = append(conns, c)
			m := lock.NewMutex(c, "/locks/jobs")
			mus = append(mus, m)
			if i == 0 {
				if _, err := m.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				continue
			}
			go m.Lock(ctx)
			// Queue the waiters in order: the test expects them to get the
			// lock in this order.
			for {
				kids, _, err := c.Children(ctx, "/locks/jobs")
				if err != nil {
					t.Fatal(err)
				}
				if len(kids) == i+1 {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		waiters := `document.querySelectorAll('section.recipe[data-path="/locks/jobs"] tr.waiter').length`
		holder := `(document.querySelector('section.recipe[data-path="/locks/jobs"] tr.holder') || {innerText: ""}).innerText`
		b.waitJS("two waiters", waiters+` === 2`)
		if h := js[string](b, holder); !strings.Contains(h, hexID(conns[0].SessionID())) {
			t.Errorf("holder row %q lacks session %s", h, hexID(conns[0].SessionID()))
		}
		e.status.Update(func(_ *Member, s *[]SessionInfo) {
			for i, c := range conns {
				*s = append(*s, SessionInfo{ID: c.SessionID(), ClientAddr: fmt.Sprintf("127.0.0.1:%d", 40000+i), Timeout: c.SessionTimeout(), LastSeen: time.Now(), EphemeralCount: 1, WatchCount: min(i, 1)})
			}
		})
		b.screenshot("recipes")

		// The overview shows the queue (and an election), and follows it as
		// the holders come and go.
		for i, id := range []string{"node-a", "node-b"} {
			l := leader.NewLatch(conns[i], "/election/scheduler", id)
			if err := l.Start(); err != nil {
				t.Fatal(err)
			}
			defer l.Close(ctx)
		}
		b.open("/")
		b.waitJS("stream open", `document.getElementById("live-state").innerText === "live"`)
		b.markPage()
		waiters = `(document.querySelector('tr.recipe[data-path="/locks/jobs"] td.waiters') || {innerText: "none"}).innerText`
		holder = `(document.querySelector('tr.recipe[data-path="/locks/jobs"] td.holder') || {innerText: ""}).parentNode.innerText`
		b.waitJS("two waiters on the overview", waiters+` === "2"`)
		b.waitJS("the election on the overview", `document.querySelectorAll('tr.recipe[data-path="/election/scheduler"]').length === 1`)
		b.screenshot("overview")
		for i := range 2 {
			if err := mus[i].Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			b.waitJS(fmt.Sprintf("%d waiters after release %d", 1-i, i+1), waiters+fmt.Sprintf(` === "%d"`, 1-i))
			b.waitJS("next holder", holder+`.includes(`+quote(hexID(conns[i+1].SessionID()))+`)`)
		}
		mus[2].Unlock(ctx)
		b.waitJS("the lock is gone from the overview", `document.querySelectorAll('tr.recipe[data-path="/locks/jobs"]').length === 0`)
		if !b.sameDocument() {
			t.Error("the page was reloaded")
		}
	})

	t.Run("overview updates", func(t *testing.T) {
		b.t = t
		b.open("/")
		b.waitJS("stream open", `document.getElementById("live-state").innerText === "live"`)
		b.markPage()
		e.status.Update(func(m *Member, _ *[]SessionInfo) {
			m.Role = RoleFollower
			m.Ensemble[0].Role, m.Ensemble[1].Role = RoleFollower, RoleLeader
			m.Ensemble[2].Role, m.Ensemble[2].Reachable = RoleUnknown, false
		})
		b.waitJS("role follower", `document.querySelector("#live .role").innerText === "follower"`)
		b.waitJS("member 3 unreachable", `document.querySelector("#live table tbody").innerText.includes("unknown")`)
		if !b.sameDocument() {
			t.Error("the page was reloaded")
		}
	})

	t.Run("sessions", func(t *testing.T) {
		b.t = t
		b.open("/sessions")
		b.waitJS("sessions listed", `document.querySelectorAll("table.sessions tbody tr").length === 3`)
		b.screenshot("sessions")
		b.clickAndLoad(`table.sessions tbody tr a`)
		b.waitJS("session page", `document.querySelector("h1").innerText.startsWith("Session 0x")`)
	})
}
