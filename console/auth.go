package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// Authentication model: a "login" is a ZooKeeper digest identity
// (user:password) that the browser acts as, not an account. The console
// opens a ZooKeeper session for it, from the HTTP client's own address
// (Config.Dial), adds the digest credentials (addAuth "digest") and
// performs the user's writes with it, so the nodes' ACLs decide what the
// user may do. ZooKeeper never refuses digest credentials (a wrong
// password is another identity, which no ACL names), so the pages say
// "acting as digest:alice (password not verified)" and never that anyone
// is signed in; only the super user (Config.SuperDigest, zoo.cfg's
// superDigest) is checked, and shown as the super user. With
// Config.ReadOnly there are no logins at all. The
// password lives only in that session's client (which re-sends it after a
// reconnection); the browser holds a random token in an HttpOnly,
// SameSite=Strict cookie, and every form that changes something carries
// a per-login CSRF token. Anonymous users only read, through the shared
// session, which has no credentials.

const (
	cookieName = "zkgo_console"
	tokenBytes = 32
)

var errTooManyLogins = errors.New("too many browsers act as identities at once; try again later")

// login is one logged-in user.
type login struct {
	token   string
	user    string
	super   bool // the password is the super digest's (verified)
	csrf    string
	conn    *zk.Conn
	created time.Time
	// cert: the identity is a verified client certificate's (cert.go;
	// user is its subject), not a digest. certKey names the certificate
	// the session carries ("" for none): a login is used only with it.
	cert    bool
	certKey string
	// lastUsed and flash are guarded by loginStore.mu.
	lastUsed time.Time
	flash    string
}

// loginStore is the bounded map of logins, keyed by cookie token.
type loginStore struct {
	// mu guards m and every login's lastUsed and flash.
	mu     sync.Mutex
	m      map[string]*login
	max    int
	idle   time.Duration
	maxAge time.Duration
}

func newLoginStore(max int, idle, maxAge time.Duration) *loginStore {
	return &loginStore{m: map[string]*login{}, max: max, idle: idle, maxAge: maxAge}
}

func randomToken() string {
	b := make([]byte, tokenBytes)
	rand.Read(b) // never fails (crypto/rand panics rather than return short)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *loginStore) expired(l *login, now time.Time) bool {
	return now.Sub(l.lastUsed) > s.idle || now.Sub(l.created) > s.maxAge
}

// add stores a login, making room by ending expired ones; it fails when
// the store is full of live logins.
func (s *loginStore) add(l *login, now time.Time) error {
	_, err := s.addOrGet(l, now)
	return err
}

// addOrGet stores l unless a live login has its token already, which it
// returns instead (refreshing its idle timer); it fails as add does.
func (s *loginStore) addOrGet(l *login, now time.Time) (*login, error) {
	var ended []*login
	s.mu.Lock()
	if o, ok := s.m[l.token]; ok {
		if !s.expired(o, now) {
			o.lastUsed = now
			s.mu.Unlock()
			return o, nil
		}
		delete(s.m, l.token)
		ended = append(ended, o)
	}
	if len(s.m) >= s.max {
		for t, o := range s.m {
			if s.expired(o, now) {
				delete(s.m, t)
				ended = append(ended, o)
			}
		}
	}
	full := len(s.m) >= s.max
	if !full {
		s.m[l.token] = l
	}
	s.mu.Unlock()
	for _, o := range ended {
		o.conn.Close()
	}
	if full {
		return nil, errTooManyLogins
	}
	return l, nil
}

// get returns the live login stored under token (refreshing its idle
// timer), or nil.
func (s *loginStore) get(token string, now time.Time) *login {
	s.mu.Lock()
	l, ok := s.m[token]
	if ok && s.expired(l, now) {
		delete(s.m, token)
		s.mu.Unlock()
		l.conn.Close()
		return nil
	}
	if ok {
		l.lastUsed = now
	}
	s.mu.Unlock()
	return l
}

// fromRequest returns the request's live login (refreshing its idle
// timer), or nil.
func (s *loginStore) fromRequest(r *http.Request, now time.Time) *login {
	ck, err := r.Cookie(cookieName)
	if err != nil || len(ck.Value) > 100 {
		return nil
	}
	return s.get(ck.Value, now)
}

func (s *loginStore) remove(l *login) {
	s.mu.Lock()
	if s.m[l.token] == l {
		delete(s.m, l.token)
	}
	s.mu.Unlock()
	l.conn.Close()
}

func (s *loginStore) setFlash(l *login, msg string) {
	s.mu.Lock()
	l.flash = msg
	s.mu.Unlock()
}

func (s *loginStore) takeFlash(l *login) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := l.flash
	l.flash = ""
	return f
}

// expire ends every expired login.
func (s *loginStore) expire(now time.Time) {
	var ended []*login
	s.mu.Lock()
	for t, l := range s.m {
		if s.expired(l, now) {
			delete(s.m, t)
			ended = append(ended, l)
		}
	}
	s.mu.Unlock()
	for _, l := range ended {
		l.conn.Close()
	}
}

func (s *loginStore) closeAll() {
	s.mu.Lock()
	all := s.m
	s.m = map[string]*login{}
	s.mu.Unlock()
	for _, l := range all {
		l.conn.Close()
	}
}

func (s *loginStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// sameOrigin refuses cross-site POSTs: an Origin header, when present,
// must name this host; otherwise a Referer, when present, must. (Browsers
// send Origin with every POST; SameSite=Strict and the CSRF token are the
// other two locks.)
func sameOrigin(r *http.Request) bool {
	check := func(raw string) bool {
		u, err := url.Parse(raw)
		return err == nil && u.Host == r.Host
	}
	if o := r.Header.Get("Origin"); o != "" {
		return o != "null" && check(o)
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		return check(ref)
	}
	return true
}

// checkCSRF reports whether the form carries the login's CSRF token.
func checkCSRF(r *http.Request, l *login) bool {
	got := r.PostFormValue("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(l.csrf)) == 1
}

// localNext returns next if it is a path on this site, else def.
func localNext(next, def string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return def
	}
	return next
}

type loginData struct {
	Next  string
	Error string
	User  string
}

// errReadOnly answers the write actions of a read-only console.
func (c *Console) errReadOnly(w http.ResponseWriter, r *http.Request) {
	c.fail(w, r, http.StatusForbidden, "this console is read-only (zkgo.admin.console.readOnly=true): it has no logins and makes no changes")
}

// isSuper reports whether user:pass is the super user's digest.
func (c *Console) isSuper(user, pass string) bool {
	want := c.cfg.SuperDigest
	return want != "" && subtle.ConstantTimeCompare([]byte(zk.DigestID(user, pass)), []byte(want)) == 1
}

func (c *Console) serveLoginForm(w http.ResponseWriter, r *http.Request) {
	if c.cfg.ReadOnly {
		c.errReadOnly(w, r)
		return
	}
	next := localNext(r.URL.Query().Get("next"), c.cfg.BasePath+"/")
	c.render(w, r, http.StatusOK, "login", page{Title: "Identity", Nav: "login", Data: loginData{Next: next}})
}

func (c *Console) serveLogin(w http.ResponseWriter, r *http.Request) {
	if c.cfg.ReadOnly {
		c.errReadOnly(w, r)
		return
	}
	if !sameOrigin(r) {
		c.fail(w, r, http.StatusForbidden, "cross-site login refused")
		return
	}
	user, pass := r.PostFormValue("user"), r.PostFormValue("password")
	next := localNext(r.PostFormValue("next"), c.cfg.BasePath+"/")
	bad := func(status int, msg string) {
		c.render(w, r, status, "login", page{Title: "Identity", Nav: "login", Data: loginData{Next: next, Error: msg, User: user}})
	}
	if user == "" || pass == "" || strings.ContainsAny(user, ":\r\n") || len(user) > 256 || len(pass) > 1024 {
		bad(http.StatusBadRequest, "enter a user name (without ':') and a password")
		return
	}
	ctx, cancel := c.reqCtx(r)
	defer cancel()
	cert := c.usableCert(r)
	opts := append([]zk.Option{zk.WithSessionTimeout(sessionTimeout), zk.WithAuth("digest", []byte(user+":"+pass))}, c.zkOptionsCert(r.RemoteAddr, cert)...)
	conn, err := zk.Connect(ctx, c.cfg.Servers, opts...)
	if err != nil {
		c.log.Info("console: login failed", "user", user, "err", err)
		bad(http.StatusBadGateway, "could not open a session as "+user+": "+err.Error())
		return
	}
	now := time.Now()
	l := &login{token: randomToken(), user: user, super: c.isSuper(user, pass), certKey: certKey(cert), csrf: randomToken(), conn: conn, created: now, lastUsed: now}
	if err := c.logins.add(l, now); err != nil {
		conn.Close()
		bad(http.StatusServiceUnavailable, err.Error())
		return
	}
	if old := c.logins.fromRequest(r, now); old != nil {
		c.logins.remove(old) // a new login replaces the browser's old one
	}
	c.log.Info("console: acting as a digest identity", "user", user, "verifiedSuper", l.super, "client", r.RemoteAddr, "session", hexID(conn.SessionID()))
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: l.token, Path: c.cfg.BasePath + "/", HttpOnly: true, Secure: c.cfg.SecureCookies || r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) serveLogout(w http.ResponseWriter, r *http.Request) {
	l := c.logins.fromRequest(r, time.Now())
	if l == nil {
		http.Redirect(w, r, c.cfg.BasePath+"/", http.StatusSeeOther)
		return
	}
	if !sameOrigin(r) || !checkCSRF(r, l) {
		c.fail(w, r, http.StatusForbidden, "missing or wrong form token (CSRF); reload the page and try again")
		return
	}
	c.logins.remove(l)
	c.log.Info("console: logout", "user", l.user)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: c.cfg.BasePath + "/", MaxAge: -1, HttpOnly: true, Secure: c.cfg.SecureCookies || r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, c.cfg.BasePath+"/", http.StatusSeeOther)
}

// userConn is the login's session, or an error for the page.
func (l *login) session(ctx context.Context) (*zk.Conn, error) {
	switch l.conn.State() {
	case zk.StateLost, zk.StateClosed:
		return nil, errors.New("your ZooKeeper session has ended; log in again")
	}
	return l.conn, nil
}
