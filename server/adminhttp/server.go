package adminhttp

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/server/report"
)

// AdminServer bounds.
const (
	adminReadHeaderTimeout = 5 * time.Second
	adminReadTimeout       = 10 * time.Second
	// WriteTimeout bounds writing an answer (a handler that streams a
	// large body, the snapshot command, extends its own deadline).
	WriteTimeout = 30 * time.Second
	// adminPprofWriteTimeout replaces WriteTimeout when the profiler is
	// served: /debug/pprof/profile runs 30 s by default.
	adminPprofWriteTimeout = 2 * time.Minute
	adminMaxHeaderBytes    = 16 << 10
	adminMaxConcurrent     = 4
)

// Config is what the server hands the AdminServer: its settings and the
// handlers of what it serves.
type Config struct {
	Addr         string        // listen address
	URL          string        // the command URL (admin.commandURL), without a trailing slash
	IdleTimeout  time.Duration // admin.idleTimeout
	Pprof        bool          // serve Go's profiler at /debug/pprof/
	AllowedHosts []string      // zkgo.admin.allowedHosts (see hosts.go)
	// TLS, if set, serves HTTPS (admin.forceHttps), or HTTPS and HTTP on
	// one port with PortUnification (admin.portUnification).
	TLS             *tls.Config
	PortUnification bool
	Log             *slog.Logger

	// Run answers a command by name with its query parameters (the
	// report package's JSON).
	Run func(name string, args map[string]string) []byte
	// Operator, called for a command that changes what the member does
	// (report.Operator), answers a request that lacks the identity it
	// needs and reports whether it may run.
	Operator func(w http.ResponseWriter, r *http.Request, name string) bool
	// Snapshot serves the snapshot command (its own authorization and
	// rate limit).
	Snapshot http.HandlerFunc
	// Restore serves the restore command, a POST (its own authorization
	// and rate limit; it extends the request's read deadline itself).
	Restore http.HandlerFunc
	// Metrics, if set, serves /metrics.
	Metrics http.Handler
	// Console, if set, starts the web console served at every other
	// path; an error leaves it out (logged).
	Console func() (http.Handler, io.Closer, error)
}

// Server is a running AdminServer.
type Server struct {
	url  string
	http *http.Server
	ln   net.Listener
	// slots holds a token per request being served (adminMaxConcurrent).
	slots chan struct{}
	// console closes the web console (nil without one); the console
	// bounds its own requests and live streams, so it is not behind
	// slots.
	console io.Closer
}

// Start listens on cfg.Addr and serves in a goroutine of wg that returns
// when Close is called.
func Start(cfg Config, wg *sync.WaitGroup) (*Server, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	a := &Server{url: cfg.URL, ln: ln, slots: make(chan struct{}, adminMaxConcurrent)}
	mux := http.NewServeMux()
	// GET patterns match HEAD too; the mux answers other methods 405.
	mux.HandleFunc("GET "+a.url, a.list)
	mux.HandleFunc("GET "+a.url+"/{$}", a.list)
	mux.HandleFunc("GET "+a.url+"/{name...}", func(w http.ResponseWriter, r *http.Request) { a.command(cfg, w, r) })
	mux.HandleFunc("GET "+a.url+"/snapshot", cfg.Snapshot)
	mux.HandleFunc("GET "+a.url+"/snap", cfg.Snapshot)
	if cfg.Restore != nil {
		mux.HandleFunc("POST "+a.url+"/restore", cfg.Restore)
		mux.HandleFunc("POST "+a.url+"/rest", cfg.Restore)
	}
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	write := WriteTimeout
	if cfg.Pprof {
		write = adminPprofWriteTimeout
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	handler := a.limit(mux)
	if cfg.Console != nil {
		c, closer, err := cfg.Console()
		if err != nil {
			cfg.Log.Warn("web console not started", "err", err)
		} else {
			a.console = closer
			commands := handler
			handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				p := r.URL.Path
				if p == a.url || strings.HasPrefix(p, a.url+"/") || p == "/metrics" || strings.HasPrefix(p, "/debug/pprof/") {
					commands.ServeHTTP(w, r)
					return
				}
				c.ServeHTTP(w, r)
			})
		}
	}
	handler = withSTS(newAdminHosts(cfg.AllowedHosts).guard(handler))
	a.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: adminReadHeaderTimeout,
		ReadTimeout:       adminReadTimeout,
		WriteTimeout:      write,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    adminMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Log.Handler(), slog.LevelDebug),
	}
	listener, scheme := net.Listener(ln), "http"
	switch {
	case cfg.TLS != nil && cfg.PortUnification:
		listener, scheme = newUnifiedListener(ln, cfg.TLS, adminReadHeaderTimeout, cfg.Log), "https+http"
	case cfg.TLS != nil:
		listener, scheme = tls.NewListener(ln, cfg.TLS), "https"
	}
	wg.Go(func() {
		if err := a.http.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Log.Error("AdminServer stopped", "err", err)
		}
	})
	cfg.Log.Info("AdminServer started", "url", scheme+"://"+ln.Addr().String()+a.url, "pprof", cfg.Pprof)
	return a, nil
}

// limit answers 503 when adminMaxConcurrent requests are being served.
func (a *Server) limit(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case a.slots <- struct{}{}:
		default:
			http.Error(w, "too many concurrent requests", http.StatusServiceUnavailable)
			return
		}
		defer func() { <-a.slots }()
		h.ServeHTTP(w, r)
	})
}

// list answers the command URL itself: a link to each command, by
// primary name, as ZooKeeper's servlet prints them.
func (a *Server) list(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	for _, name := range report.PrimaryNames() {
		fmt.Fprintf(&b, "<a href=\"%s/%s\">%s</a>\n<br/>\n", a.url, name, name)
	}
	w.Write([]byte(b.String()))
}

// command runs the command named by the rest of the path with the
// query's parameters (the first value of each).
func (a *Server) command(cfg Config, w http.ResponseWriter, r *http.Request) {
	args := make(map[string]string)
	for k, v := range r.URL.Query() {
		if len(v) > 0 {
			args[k] = v[0]
		}
	}
	if primary, ok := report.Operator(r.PathValue("name")); ok && !cfg.Operator(w, r, primary) {
		return
	}
	body := cfg.Run(r.PathValue("name"), args)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// Addr is the address the AdminServer listens on.
func (a *Server) Addr() net.Addr { return a.ln.Addr() }

// Close stops the AdminServer and closes its connections (nil: nothing).
func (a *Server) Close() {
	if a != nil {
		a.http.Close()
		if a.console != nil {
			a.console.Close()
		}
	}
}

// Handler is the AdminServer's whole handler (the host guard, the
// console, the commands), for tests that drive it without a socket.
func (a *Server) Handler() http.Handler { return a.http.Handler }
