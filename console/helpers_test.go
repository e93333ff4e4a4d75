package console

import (
	"bufio"
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// env is a zkgo server in-process with a console in front of it.
type env struct {
	t      *testing.T
	srv    *zktest.Server
	con    *Console
	hs     *httptest.Server
	status *FakeStatus
}

const superPassword = "super-secret"

func startEnv(t *testing.T, adjust ...func(*Config)) *env {
	t.Helper()
	srv := zktest.Start(t, zktest.WithSuperDigest(zk.DigestID("super", superPassword)))
	st := &FakeStatus{}
	st.Update(func(m *Member, _ *[]SessionInfo) {
		*m = Member{ID: 1, Role: RoleLeader, Zxid: 0x100, RaftTerm: 2, CommitIndex: 10, AppliedIndex: 10, Version: "zkgo-test", Started: time.Now()}
	})
	cfg := Config{Servers: srv.Addr(), Status: st, ScanMaxAge: time.Millisecond, SuperDigest: zk.DigestID("super", superPassword)}
	for _, fn := range adjust {
		fn(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(c)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		c.Close()
	})
	return &env{t: t, srv: srv, con: c, hs: hs, status: st}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// zconn opens a ZooKeeper session for the test.
func (e *env) zconn(opts ...zk.Option) *zk.Conn {
	e.t.Helper()
	c, err := zk.Connect(ctxT(e.t), e.srv.Addr(), opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// browser is an HTTP client with its own cookies.
type browser struct {
	e  *env
	hc *http.Client
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &browser{e: e, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: tr}}
}

// get fetches a console URL (relative to the console's root) and returns
// the status and body.
func (b *browser) get(p string) (int, string) {
	b.e.t.Helper()
	resp, err := b.hc.Get(b.e.hs.URL + p)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// post posts a form, following the redirect, and returns the final status
// and body.
func (b *browser) post(p string, form url.Values) (int, string) {
	b.e.t.Helper()
	resp, err := b.hc.PostForm(b.e.hs.URL+p, form)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *browser) login(user, password string) {
	b.e.t.Helper()
	code, body := b.post("/login", url.Values{"user": {user}, "password": {password}})
	if code != http.StatusOK || !strings.Contains(body, "acting as") || !strings.Contains(body, html.EscapeString(user)) && !strings.Contains(body, "super user") {
		b.e.t.Fatalf("login %s: %d\n%s", user, code, body)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token from a page.
func (b *browser) csrf() string {
	b.e.t.Helper()
	_, body := b.get("/")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		b.e.t.Fatalf("no CSRF token on the page:\n%s", body)
	}
	return html.UnescapeString(m[1])
}

// stream is an open SSE connection.
type stream struct {
	resp *http.Response
	r    *bufio.Reader
	evs  chan string // "event" names, "" for comments
}

func (b *browser) stream(p string) (*stream, int) {
	b.e.t.Helper()
	req, _ := http.NewRequestWithContext(ctxT(b.e.t), "GET", b.e.hs.URL+p, nil)
	hc := &http.Client{Jar: b.hc.Jar, Transport: b.hc.Transport}
	resp, err := hc.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, resp.StatusCode
	}
	s := &stream{resp: resp, r: bufio.NewReader(resp.Body), evs: make(chan string, 100)}
	go func() {
		defer close(s.evs)
		for {
			line, err := s.r.ReadString('\n')
			if err != nil {
				return
			}
			if name, ok := strings.CutPrefix(line, "event: "); ok {
				s.evs <- strings.TrimSpace(name)
			}
		}
	}()
	b.e.t.Cleanup(func() { resp.Body.Close() })
	return s, resp.StatusCode
}

// next waits for the next named event; "" means the stream ended.
func (s *stream) next(t *testing.T, within time.Duration) string {
	t.Helper()
	select {
	case ev, ok := <-s.evs:
		if !ok {
			return ""
		}
		return ev
	case <-time.After(within):
		t.Fatalf("no event within %v", within)
		return ""
	}
}

// eventually retries cond until it holds or 15s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
