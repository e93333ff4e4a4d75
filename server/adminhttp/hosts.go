package adminhttp

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
)

// The admin port answers only requests whose Host header names this
// machine: a defence against DNS rebinding, where a web page on a name the
// attacker controls makes that name resolve to the member's address and
// reads the console and the commands with the visitor's browser (the
// browser sends the attacker's name as Host, and the page and the port are
// then the same origin). Allowed without configuration:
//
//   - no Host at all (HTTP/1.0 tools; browsers always send one);
//   - an IP address literal (it cannot be rebound: a page of another
//     origin cannot read the answer);
//   - localhost and *.localhost;
//   - this machine's host name as os.Hostname returns it, and its first
//     label;
//   - Config.AllowedHosts (zkgo.admin.allowedHosts; cmd/zkgo adds
//     the host names of zoo.cfg's server.N lines): "name", ".example.org"
//     or "*.example.org" for every name under example.org, "*" for any.
//
// Ports are not compared. Other names are answered 421 Misdirected
// Request, with the key to set.

// adminHosts is the set of names the admin port answers to; it is built
// by newAdminHosts and never changes.
type adminHosts struct {
	any      bool
	names    map[string]bool // lower case, without a trailing dot
	suffixes []string        // ".example.org": every name under it
}

func newAdminHosts(extra []string) *adminHosts {
	h := &adminHosts{names: map[string]bool{"localhost": true}}
	if hn, err := os.Hostname(); err == nil && hn != "" {
		hn = normHost(hn)
		h.names[hn] = true
		if short, _, ok := strings.Cut(hn, "."); ok && short != "" {
			h.names[short] = true
		}
	}
	for _, e := range extra {
		e = normHost(strings.TrimSpace(e))
		switch {
		case e == "":
		case e == "*":
			h.any = true
		case strings.HasPrefix(e, "*."):
			h.suffixes = append(h.suffixes, e[1:])
		case strings.HasPrefix(e, "."):
			h.suffixes = append(h.suffixes, e)
		default:
			if host, _, err := net.SplitHostPort(e); err == nil {
				e = host
			}
			h.names[e] = true
		}
	}
	return h
}

// normHost lower-cases a host name and drops a trailing dot.
func normHost(s string) string {
	return strings.TrimSuffix(strings.ToLower(s), ".")
}

// allowed reports whether a request with Host header host may be served.
func (h *adminHosts) allowed(host string) bool {
	if h.any || host == "" {
		return true
	}
	if hp, _, err := net.SplitHostPort(host); err == nil {
		host = hp
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	host = normHost(host)
	if h.names[host] || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, s := range h.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// guard answers 421 to requests for other names.
func (h *adminHosts) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.allowed(r.Host) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusMisdirectedRequest)
			fmt.Fprintf(w, "421 Misdirected Request: this AdminServer does not answer to the name %q.\n"+
				"If that name is this server's, add it to zkgo.admin.allowedHosts in zoo.cfg (comma-separated; .example.org for a whole domain).\n"+
				"Names that are not configured are refused so that a web page cannot reach the admin port through DNS rebinding.\n", r.Host)
			return
		}
		next.ServeHTTP(w, r)
	})
}
