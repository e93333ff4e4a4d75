package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/zkgo/zkgo/server/report"
)

// The AdminServer: ZooKeeper's commands over HTTP (its JettyAdminServer),
// on Options.AdminAddr; over HTTPS, or both on one port, with
// Options.AdminTLS (admin_tls.go).
//
//	GET <url>             the commands, as links (url: Options.AdminCommandURL)
//	GET <url>/<name>      runs one, answering ZooKeeper's JSON (package report)
//	GET /metrics          Prometheus metrics, when they are served (metrics.go)
//	GET /debug/pprof/...  Go's profiler, with Options.AdminPprof
//	/ (everything else)   the web console, with Options.AdminConsole (console.go)
//
// Like ZooKeeper's, every command answers 200 with a JSON object that has
// "command" and "error" fields, also an unknown command or one that needs
// a running server on a member without a quorum (then "error" says why).
// Other methods than GET and HEAD are answered 405, other paths 404.
//
// Every request, the console's too, must name this machine in its Host
// header (admin_hosts.go: a DNS-rebinding defence; 421 otherwise).
//
// The endpoint is hardened as the metrics endpoint is: bounded header
// size and read, write and idle times, and at most adminMaxConcurrent
// requests at a time (more are answered 503 at once). A command takes
// the same locks as its four-letter word, each briefly; the heavy ones
// (stat, cons, dump, wchc, wchp) are computed at most once per heavyTTL
// whoever asks, as the four-letter words are. Nothing here is on the
// request path of clients.

// AdminServer bounds.
const (
	adminReadHeaderTimeout = 5 * time.Second
	adminReadTimeout       = 10 * time.Second
	adminWriteTimeout      = 30 * time.Second
	// adminPprofWriteTimeout replaces adminWriteTimeout when the profiler
	// is served: /debug/pprof/profile runs 30 s by default.
	adminPprofWriteTimeout = 2 * time.Minute
	adminMaxHeaderBytes    = 16 << 10
	adminMaxConcurrent     = 4
)

// adminServer is the AdminServer's HTTP server. Its fields are set by
// listen and never change.
type adminServer struct {
	s    *Server
	url  string // the command URL, without a trailing slash
	http *http.Server
	ln   net.Listener
	// slots holds a token per request being served (adminMaxConcurrent).
	slots chan struct{}
	snap  adminSnapshot // the snapshot command (admin_snapshot.go)
	// console closes the web console (nil without Options.AdminConsole);
	// the console bounds its own requests and live streams, so it is not
	// behind slots.
	console io.Closer
}

// listenAdmin starts the AdminServer on s.opts.AdminAddr, serving in a
// goroutine that returns when close is called.
func (s *Server) listenAdmin() (*adminServer, error) {
	o := &s.opts
	ln, err := net.Listen("tcp", o.AdminAddr)
	if err != nil {
		return nil, err
	}
	a := &adminServer{s: s, url: o.AdminCommandURL, ln: ln, slots: make(chan struct{}, adminMaxConcurrent)}
	mux := http.NewServeMux()
	// GET patterns match HEAD too; the mux answers other methods 405.
	mux.HandleFunc("GET "+a.url, a.list)
	mux.HandleFunc("GET "+a.url+"/{$}", a.list)
	mux.HandleFunc("GET "+a.url+"/{name...}", a.command)
	mux.HandleFunc("GET "+a.url+"/snapshot", a.snapshot)
	mux.HandleFunc("GET "+a.url+"/snap", a.snapshot)
	if s.met != nil {
		mux.Handle("GET /metrics", s.met.Handler())
	}
	write := adminWriteTimeout
	if o.AdminPprof {
		write = adminPprofWriteTimeout
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	handler := a.limit(mux)
	if o.AdminConsole != nil {
		c, closer, err := s.newConsole()
		if err != nil {
			s.log.Warn("web console not started", "err", err)
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
	handler = withSTS(newAdminHosts(o.AdminAllowedHosts).guard(handler))
	a.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: adminReadHeaderTimeout,
		ReadTimeout:       adminReadTimeout,
		WriteTimeout:      write,
		IdleTimeout:       o.AdminIdleTimeout,
		MaxHeaderBytes:    adminMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.wg.Go(func() {
		if err := a.http.Serve(s.adminListener(ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("AdminServer stopped", "err", err)
		}
	})
	s.log.Info("AdminServer started", "url", s.adminScheme()+"://"+ln.Addr().String()+a.url, "pprof", o.AdminPprof)
	return a, nil
}

// limit answers 503 when adminMaxConcurrent requests are being served.
func (a *adminServer) limit(h http.Handler) http.Handler {
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
func (a *adminServer) list(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	for _, name := range report.PrimaryNames() {
		fmt.Fprintf(&b, "<a href=\"%s/%s\">%s</a>\n<br/>\n", a.url, name, name)
	}
	w.Write([]byte(b.String()))
}

// command runs the command named by the rest of the path with the
// query's parameters (the first value of each).
func (a *adminServer) command(w http.ResponseWriter, r *http.Request) {
	args := make(map[string]string)
	for k, v := range r.URL.Query() {
		if len(v) > 0 {
			args[k] = v[0]
		}
	}
	if primary, ok := report.Operator(r.PathValue("name")); ok && !a.s.operatorAllowed(w, r, primary) {
		return
	}
	body := report.Run(reports{a.s}, r.PathValue("name"), args)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// close stops the AdminServer and closes its connections.
func (a *adminServer) close() {
	if a != nil {
		a.http.Close()
		if a.console != nil {
			a.console.Close()
		}
	}
}

// startAdmin starts the AdminServer if Options.AdminAddr is set. A port
// that cannot be bound does not stop the server: like a ZooKeeper quorum
// peer, it logs a warning and goes on without the AdminServer (a
// standalone ZooKeeper exits instead).
func (s *Server) startAdmin() {
	if s.opts.AdminAddr == "" {
		return
	}
	a, err := s.listenAdmin()
	if err != nil {
		s.log.Warn("AdminServer not started: its address cannot be bound; the server runs without it (change admin.serverPort or admin.serverAddress, or set admin.enableServer=false)",
			"addr", s.opts.AdminAddr, "err", err)
		return
	}
	s.adminMu.Lock()
	s.admin = a
	closing := s.closing.Load()
	s.adminMu.Unlock()
	if closing {
		a.close()
	}
}

// AdminAddr returns the AdminServer's address, or nil without one
// (Options.AdminAddr empty, the address could not be bound, or before
// Start).
func (s *Server) AdminAddr() net.Addr {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	if s.admin == nil {
		return nil
	}
	return s.admin.ln.Addr()
}

// closeAdmin stops the AdminServer, if it runs.
func (s *Server) closeAdmin() {
	s.adminMu.Lock()
	a := s.admin
	s.adminMu.Unlock()
	a.close()
}
