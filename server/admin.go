package server

import (
	"io"
	"net"
	"net/http"

	"github.com/zkgo/zkgo/server/adminhttp"
	"github.com/zkgo/zkgo/server/report"
)

// The AdminServer (package adminhttp) serves what this file hands it: the
// commands (package report over reports.go), the operator check
// (leadership.go), the snapshot command (admin_snapshot.go), /metrics and
// the web console (console.go).

// startAdmin starts the AdminServer if Options.AdminAddr is set. A port
// that cannot be bound does not stop the server: like a ZooKeeper quorum
// peer, it logs a warning and goes on without the AdminServer (a
// standalone ZooKeeper exits instead).
func (s *Server) startAdmin() {
	o := &s.opts
	if o.AdminAddr == "" {
		return
	}
	cfg := adminhttp.Config{
		Addr: o.AdminAddr, URL: o.AdminCommandURL, IdleTimeout: o.AdminIdleTimeout, Pprof: o.AdminPprof,
		AllowedHosts: o.AdminAllowedHosts, TLS: o.AdminTLS, PortUnification: o.AdminPortUnification, Log: s.log,
		Run:      func(name string, args map[string]string) []byte { return report.Run(reports{s}, name, args) },
		Operator: s.operatorAllowed,
		Snapshot: s.serveSnapshot,
		Restore:  s.serveRestore,
	}
	if s.met != nil {
		cfg.Metrics = s.met.Handler()
	}
	if o.AdminConsole != nil {
		cfg.Console = func() (http.Handler, io.Closer, error) { return s.newConsole() }
	}
	a, err := adminhttp.Start(cfg, &s.wg)
	if err != nil {
		s.log.Warn("AdminServer not started: its address cannot be bound; the server runs without it (change admin.serverPort or admin.serverAddress, or set admin.enableServer=false)",
			"addr", s.opts.AdminAddr, "err", err)
		return
	}
	s.adminMu.Lock()
	s.admin = a
	closing := s.port.Closing()
	s.adminMu.Unlock()
	if closing {
		a.Close()
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
	return s.admin.Addr()
}

// closeAdmin stops the AdminServer, if it runs.
func (s *Server) closeAdmin() {
	s.adminMu.Lock()
	a := s.admin
	s.adminMu.Unlock()
	a.Close()
}
