package console

import (
	"context"
	"crypto/x509"
	"embed"
	"errors"
	"fmt"
	"github.com/zkgo/zkgo/console/status"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// Config configures a Console. Only Servers is required.
type Config struct {
	// Servers is the ensemble's client address list as zk.Connect takes
	// it ("host:port,host:port[/chroot]"); the server passes its own
	// client address.
	Servers string
	// Status answers about this member and its sessions; nil leaves those
	// parts of the pages out (the tree, recipes and writes still work).
	Status StatusSource
	// Logger receives the console's log lines (never credentials); nil
	// discards them.
	Logger *slog.Logger
	// ZKOptions are added to every session the console opens (e.g.
	// zk.WithDialer for TLS). They must not authenticate: the shared
	// session is anonymous on purpose.
	ZKOptions []zk.Option
	// Dial, if set, opens the console's connections instead of dialling
	// Servers: client is the HTTP client's address (a logged-in user's
	// session, so that the ip scheme sees that user) or "" (the shared
	// anonymous session, which must match no ip ACL). The server passes
	// in-process connections (ForServer). Without it the sessions come
	// from this process's own address, and an ip ACL naming that address
	// is open to every visitor: set Dial when the console runs on a host
	// that ip ACLs name. cert, if not nil, is the client certificate the
	// HTTP client presented and the HTTPS server verified: the session
	// must get its x509 identity (cert.go). Without Dial, certificates
	// are ignored.
	Dial func(ctx context.Context, client string, cert *x509.Certificate) (net.Conn, error)
	// BasePath is the URL path the console is mounted at, "" for "/".
	BasePath string
	// PageSize is how many children a tree page lists; default 200.
	PageSize int
	// RecipeRoots are where the recipe scan starts; default "/". ScanBudget
	// bounds the nodes it reads; default 100,000. A scan result is reused
	// for ScanMaxAge; default 5s.
	RecipeRoots []string
	ScanBudget  int
	ScanMaxAge  time.Duration
	// MaxStreams bounds the live-update streams open at once (default 32);
	// each ends after StreamMaxAge (default 10m; browsers reconnect).
	MaxStreams   int
	StreamMaxAge time.Duration
	// MaxLogins bounds the logged-in users at once (each holds a
	// ZooKeeper session); default 64. A login ends after LoginIdle without
	// a request (default 15m) and after LoginMaxAge in any case
	// (default 8h).
	MaxLogins   int
	LoginIdle   time.Duration
	LoginMaxAge time.Duration
	// RequestTimeout bounds each request's ZooKeeper work; default 15s.
	RequestTimeout time.Duration
	// SecureCookies marks the login cookie Secure (it is whenever the
	// request came over HTTPS).
	SecureCookies bool
	// SuperDigest is the server's super user digest, "super:<base64
	// sha1>" (zookeeper.DigestAuthenticationProvider.superDigest): a login
	// with its password is shown as the (verified) super user. Every other
	// digest login is an identity the user acts as, which nothing verifies.
	SuperDigest string
	// ReadOnly (zkgo.admin.console.readOnly) turns off every write action:
	// no logins, no forms, /write answers 403.
	ReadOnly bool
}

func (c *Config) defaults() {
	c.BasePath = strings.TrimRight(c.BasePath, "/")
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	setDefault(&c.PageSize, 200)
	setDefault(&c.ScanBudget, 100_000)
	setDefault(&c.ScanMaxAge, 5*time.Second)
	setDefault(&c.MaxStreams, 32)
	setDefault(&c.StreamMaxAge, 10*time.Minute)
	setDefault(&c.MaxLogins, 64)
	setDefault(&c.LoginIdle, 15*time.Minute)
	setDefault(&c.LoginMaxAge, 8*time.Hour)
	setDefault(&c.RequestTimeout, 15*time.Second)
	if len(c.RecipeRoots) == 0 {
		c.RecipeRoots = []string{"/"}
	}
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Limits that are not configurable.
const (
	maxBody         = 2 << 20 // request body bytes (a 1 MiB znode as hex fits)
	maxDataWrite    = 1 << 20 // znode data a write may carry (jute.maxbuffer's default)
	sessionTimeout  = 30 * time.Second
	maxFrame        = 32 << 20 // reply frames of the shared session (long child lists)
	streamWriteWait = 10 * time.Second
	childCacheBytes = 64 << 20 // child lists kept for tree pages (kids.go)
)

//go:embed assets
var assets embed.FS

// Console is the web console: an http.Handler, safe for concurrent use.
// It reads the tree through one shared, anonymous ZooKeeper session opened
// on first use (and opened again after an expiry), and writes through a
// session per logged-in user. See the package comment for the lock order.
type Console struct {
	cfg    Config
	log    *slog.Logger
	pages  map[string]*template.Template
	mux    *http.ServeMux
	shared connHolder
	logins *loginStore
	certs  *loginStore // certificate identities, by certKey (cert.go)
	kids   *childCache
	scans  *scanCache
	feed   *feed
	// streams holds one token per open live-update stream.
	streams chan struct{}
	ctx     context.Context // ended by Close: background work stops
	cancel  context.CancelFunc
	wg      sync.WaitGroup // background goroutines (janitor, feed)
}

// New returns a console reading the ensemble at cfg.Servers. It does not
// connect yet: the first page does (so the server can mount it before its
// client port listens).
func New(cfg Config) (*Console, error) {
	cfg.defaults()
	if cfg.Servers == "" {
		return nil, errors.New("console: Config.Servers is empty")
	}
	if cfg.BasePath != "" && !strings.HasPrefix(cfg.BasePath, "/") {
		return nil, fmt.Errorf("console: BasePath %q does not start with /", cfg.BasePath)
	}
	for _, r := range cfg.RecipeRoots {
		if !validPath(r) {
			return nil, fmt.Errorf("console: recipe root %q is not a znode path", r)
		}
	}
	c := &Console{cfg: cfg, log: cfg.Logger}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	opts := append([]zk.Option{zk.WithSessionTimeout(sessionTimeout), zk.WithMaxFrameSize(maxFrame)}, c.zkOptions("")...)
	c.shared = newConnHolder(cfg.Servers, opts)
	c.logins = newLoginStore(cfg.MaxLogins, cfg.LoginIdle, cfg.LoginMaxAge)
	c.certs = newLoginStore(cfg.MaxLogins, cfg.LoginIdle, cfg.LoginMaxAge)
	c.kids = newChildCache(childCacheBytes)
	c.scans = &scanCache{}
	c.feed = newFeed(c)
	c.streams = make(chan struct{}, cfg.MaxStreams)
	var err error
	if c.pages, err = parsePages(cfg.BasePath); err != nil {
		return nil, err
	}
	c.routes()
	c.wg.Add(1)
	go c.janitor()
	return c, nil
}

// zkOptions are the options of a session acting for the HTTP client at
// client ("" for the shared anonymous session).
func (c *Console) zkOptions(client string) []zk.Option {
	return c.zkOptionsCert(client, nil)
}

// zkOptionsCert are the options of a session acting for the HTTP client
// at client that presented cert (nil: none).
func (c *Console) zkOptionsCert(client string, cert *x509.Certificate) []zk.Option {
	opts := slices.Clone(c.cfg.ZKOptions)
	if dial := c.cfg.Dial; dial != nil {
		opts = append(opts, zk.WithDialer(func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx, client, cert)
		}))
	}
	return opts
}

// Close ends the console's sessions (shared and logged-in) and its
// background work. Streams still open end too.
func (c *Console) Close() error {
	c.cancel()
	c.wg.Wait()
	c.logins.closeAll()
	c.certs.closeAll()
	c.shared.close()
	return nil
}

// janitor ends expired logins.
func (c *Console) janitor() {
	defer c.wg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			c.logins.expire(time.Now())
			c.certs.expire(time.Now())
		}
	}
}

func (c *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /{$}", c.limited("overview", c.serveOverview))
	m.HandleFunc("GET /tree", c.limited("tree", c.serveTree))
	m.HandleFunc("GET /recipes", c.limited("recipes", c.serveRecipes))
	m.HandleFunc("GET /sessions", c.limited("sessions", c.serveSessions))
	m.HandleFunc("GET /login", c.serveLoginForm)
	m.HandleFunc("POST /login", c.serveLogin)
	m.HandleFunc("POST /logout", c.serveLogout)
	m.HandleFunc("POST /write", c.serveWrite)
	m.HandleFunc("GET /events", c.serveEvents)
	c.mux = m
}

// pageSlots bounds the pages of each kind being built at once (each
// holds at most a page's worth of memory: a tree page's data, up to
// pageBytes of names and their stats; a session's lists).
var pageSlots = map[string]int{"overview": 8, "tree": 8, "recipes": 4, "sessions": 4}

// limited serves h with one of kind's slots; a request that finds none
// free within RequestTimeout is answered 503.
func (c *Console) limited(kind string, h http.HandlerFunc) http.HandlerFunc {
	slots := make(chan struct{}, pageSlots[kind])
	return func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(c.cfg.RequestTimeout)
		defer t.Stop()
		select {
		case slots <- struct{}{}:
		case <-t.C:
			http.Error(w, "the console is busy with other "+kind+" pages; try again", http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			return
		}
		defer func() { <-slots }()
		h(w, r)
	}
}

// ServeHTTP implements http.Handler. Every request's body is bounded; a
// handler that panics anyway answers 500 and is logged.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			c.log.Error("console: handler panic", "path", r.URL.Path, "panic", fmt.Sprint(v))
			http.Error(w, "internal error", http.StatusInternalServerError)
		}
	}()
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	if c.cfg.BasePath != "" {
		p := strings.TrimPrefix(r.URL.Path, c.cfg.BasePath)
		if p == r.URL.Path {
			http.NotFound(w, r)
			return
		}
		if p == "" {
			p = "/"
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = p
		r2.URL.RawPath = ""
		r = r2
	}
	c.mux.ServeHTTP(w, r)
}

// reqCtx bounds a request's ZooKeeper work.
func (c *Console) reqCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), c.cfg.RequestTimeout)
}

// connHolder keeps the shared anonymous session, reconnecting after the
// session is lost.
type connHolder struct {
	servers string
	opts    []zk.Option
	// slot is a one-token lock that guards conn; it is held while
	// connecting (a channel, so that waiters give up with their ctx).
	slot chan struct{}
	conn *zk.Conn
}

func newConnHolder(servers string, opts []zk.Option) connHolder {
	return connHolder{servers: servers, opts: opts, slot: make(chan struct{}, 1)}
}

// get returns the shared session, connecting if there is none or it ended.
func (h *connHolder) get(ctx context.Context) (*zk.Conn, error) {
	select {
	case h.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.slot }()
	if h.conn != nil {
		switch h.conn.State() {
		case zk.StateLost, zk.StateClosed:
			h.conn.Close()
			h.conn = nil
		default:
			return h.conn, nil
		}
	}
	zc, err := zk.Connect(ctx, h.servers, h.opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", h.servers, err)
	}
	h.conn = zc
	return zc, nil
}

func (h *connHolder) close() {
	h.slot <- struct{}{}
	defer func() { <-h.slot }()
	if h.conn != nil {
		h.conn.Close()
		h.conn = nil
	}
}

// ForServer returns what package server's Options.AdminConsole takes: a
// function that builds the console for a server's AdminServer from base
// (Servers, Dial, Status and Logger are the server's: the console's
// sessions are in-process connections that carry the HTTP user's
// address, never the server's own). cmd/zkgo passes it.
func ForServer(base Config) func(servers string, dial func(ctx context.Context, client string, cert *x509.Certificate) (net.Conn, error), src status.Source, log *slog.Logger) (http.Handler, io.Closer, error) {
	return func(servers string, dial func(ctx context.Context, client string, cert *x509.Certificate) (net.Conn, error), src status.Source, log *slog.Logger) (http.Handler, io.Closer, error) {
		cfg := base
		cfg.Servers, cfg.Dial, cfg.Status, cfg.Logger = servers, dial, src, log
		c, err := New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return c, c, nil
	}
}
