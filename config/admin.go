package config

import (
	"net"
	"strconv"
	"strings"
	"time"
)

// The admin.* keys configure ZooKeeper's AdminServer, the HTTP endpoint
// of the commands (/commands/mntr, …). ZooKeeper reads them as the system
// properties zookeeper.admin.*, which zoo.cfg sets under either name
// (QuorumPeerConfig turns an unknown key into "zookeeper."+key).

// Defaults of ZooKeeper's JettyAdminServer.
const (
	DefaultAdminServerAddress = "0.0.0.0"
	DefaultAdminServerPort    = 8080
	DefaultAdminCommandURL    = "/commands"
	DefaultAdminIdleTimeout   = 30 * time.Second
)

// Admin is the AdminServer configuration.
type Admin struct {
	// Enabled (admin.enableServer) serves the commands over HTTP. As in
	// ZooKeeper it is on unless the value is exactly "false".
	Enabled bool
	// ServerAddress (admin.serverAddress, default 0.0.0.0) and ServerPort
	// (admin.serverPort, default 8080; 0 picks a free port) are where
	// the AdminServer listens.
	ServerAddress string
	ServerPort    int
	// CommandURL (admin.commandURL, default /commands) is the path under
	// which the commands are served: CommandURL/NAME runs one,
	// CommandURL lists them.
	CommandURL string
	// IdleTimeout (admin.idleTimeout, in ms, default 30000) closes a
	// keep-alive connection that sends no request for that long.
	IdleTimeout time.Duration
	// Pprof (zkgo.admin.pprof=true, zkgo's own key, default false) also
	// serves Go's profiler under /debug/pprof/ on the AdminServer's port.
	Pprof bool
	// Snapshot (admin.snapshot.enabled, default true, as ZooKeeper 3.9)
	// serves the snapshot command; RateLimit
	// (admin.rateLimiterIntervalInMS, default 300000) is the least time
	// between two snapshots.
	Snapshot  bool
	RateLimit time.Duration
	// Restore (admin.restore.enabled, default true, as ZooKeeper 3.9)
	// serves the restore command, rate limited as the snapshot command.
	Restore bool
	// Console (zkgo.admin.console, zkgo's own key, default true) serves
	// the web console at / of the AdminServer's port.
	Console bool
	// ConsoleRecipeRoots (zkgo.admin.console.recipeRoots, comma-separated
	// paths; default "/") are where the console's recipe scan starts.
	ConsoleRecipeRoots []string
	// ConsoleReadOnly (zkgo.admin.console.readOnly, default false) turns
	// off every write action of the console (no logins, no forms).
	ConsoleReadOnly bool
	// AllowedHosts (zkgo.admin.allowedHosts, comma-separated) are the
	// names the admin port answers to besides IP addresses, localhost and
	// the machine's host name: "name", ".example.org" for a whole domain,
	// "*" for any. Requests naming others in their Host header get 421 (a
	// DNS-rebinding defence).
	AllowedHosts []string
	// PortUnification (admin.portUnification, ZooKeeper 3.7+) serves
	// HTTPS and plain HTTP on the one port, telling them apart by the
	// first byte; ForceHTTPS (admin.forceHttps, ZooKeeper 3.8+) serves
	// HTTPS only (it wins over PortUnification). Either uses the
	// ssl.quorum.keyStore.* and ssl.quorum.trustStore.* stores, as
	// ZooKeeper's JettyAdminServer does (its QuorumX509Util).
	PortUnification bool
	ForceHTTPS      bool
	// NeedClientAuth (admin.needClientAuth, ZooKeeper 3.9) refuses HTTPS
	// clients without a certificate the trust store verifies. Without it,
	// a certificate is asked for but optional.
	NeedClientAuth bool
}

// HTTPS reports whether the AdminServer serves HTTPS (alone or beside
// plain HTTP).
func (a Admin) HTTPS() bool { return a.PortUnification || a.ForceHTTPS }

// Addr returns the AdminServer's listen address for net.Listen.
func (a Admin) Addr() string {
	return net.JoinHostPort(a.ServerAddress, strconv.Itoa(a.ServerPort))
}

// isAdminKey reports whether k is an AdminServer key (under either name).
func isAdminKey(k string) bool {
	return strings.HasPrefix(k, "admin.") || strings.HasPrefix(k, "zookeeper.admin.") || k == "zkgo.admin.pprof" || k == "zkgo.admin.console" ||
		k == "zkgo.admin.console.recipeRoots" || k == "zkgo.admin.console.readOnly" || k == "zkgo.admin.allowedHosts"
}

// adminProperty parses one AdminServer key.
func (p *parser) adminProperty(pr property) error {
	a := &p.c.Admin
	if pr.key == "zkgo.admin.pprof" {
		v, err := p.strictBool(pr)
		a.Pprof = v
		return err
	}
	if pr.key == "zkgo.admin.console" {
		v, err := p.strictBool(pr)
		a.Console = v
		return err
	}
	if pr.key == "zkgo.admin.console.readOnly" {
		v, err := p.strictBool(pr)
		a.ConsoleReadOnly = v
		return err
	}
	if pr.key == "zkgo.admin.allowedHosts" {
		a.AllowedHosts = nil
		for _, h := range strings.Split(pr.value, ",") {
			if h = strings.TrimSpace(h); h == "" {
				continue
			}
			if strings.ContainsAny(h, "/@ \t") {
				return p.errorf(pr, "%q is not a host name (want name, .domain or *)", h)
			}
			a.AllowedHosts = append(a.AllowedHosts, h)
		}
		return nil
	}
	if pr.key == "zkgo.admin.console.recipeRoots" {
		a.ConsoleRecipeRoots = nil
		for _, r := range strings.Split(pr.value, ",") {
			if r = strings.TrimSpace(r); r == "" {
				continue
			}
			if !strings.HasPrefix(r, "/") || strings.Contains(r, "//") || (len(r) > 1 && strings.HasSuffix(r, "/")) {
				return p.errorf(pr, "%q is not a znode path", r)
			}
			a.ConsoleRecipeRoots = append(a.ConsoleRecipeRoots, r)
		}
		return nil
	}
	switch strings.TrimPrefix(strings.TrimPrefix(pr.key, "zookeeper."), "admin.") {
	case "enableServer":
		// AdminServerFactory: only the exact string "false" turns it off.
		a.Enabled = pr.value != "false"
		if pr.value != "false" && pr.value != "true" {
			p.warn(pr, "%q is not \"false\": ZooKeeper enables the AdminServer for any other value, and so does zkgo", pr.value)
		}
	case "serverAddress":
		if pr.value == "" {
			return p.errorf(pr, "empty address")
		}
		a.ServerAddress = strings.TrimSuffix(strings.TrimPrefix(pr.value, "["), "]")
	case "serverPort":
		n, err := p.decode(pr) // Integer.getInteger
		if err != nil {
			return err
		}
		if n < 0 || n > 65535 {
			return p.errorf(pr, "port %d out of range (0 picks a free port)", n)
		}
		a.ServerPort = int(n)
	case "commandURL":
		u := pr.value
		if !strings.HasPrefix(u, "/") || strings.ContainsAny(u, "?#*{}% \t") {
			return p.errorf(pr, "%q is not a URL path (it must start with '/', e.g. /commands)", u)
		}
		if u = strings.TrimRight(u, "/"); u == "" {
			return p.errorf(pr, "the commands cannot be served at the root; use a path such as /commands")
		}
		a.CommandURL = u
	case "idleTimeout":
		n, err := p.decode(pr)
		if err != nil {
			return err
		}
		if n <= 0 {
			return p.errorf(pr, "idle timeout %d ms must be positive", n)
		}
		a.IdleTimeout = time.Duration(n) * time.Millisecond
	case "portUnification":
		// Boolean.getBoolean: "true" in any case, anything else is false.
		a.PortUnification = p.javaBool(pr)
	case "forceHttps":
		a.ForceHTTPS = p.javaBool(pr)
	case "needClientAuth":
		a.NeedClientAuth = p.javaBool(pr)
	case "snapshot.enabled":
		// ZooKeeper 3.9: Boolean.parseBoolean, default true.
		a.Snapshot = p.javaBool(pr)
	case "restore.enabled":
		// ZooKeeper 3.9: Boolean.parseBoolean, default true.
		a.Restore = p.javaBool(pr)
	case "rateLimiterIntervalInMS":
		n, err := p.decode(pr)
		if err != nil {
			return err
		}
		if n <= 0 {
			return p.errorf(pr, "interval %d ms must be positive", n)
		}
		a.RateLimit = time.Duration(n) * time.Millisecond
	case "httpVersion":
		p.warn(pr, "zkgo's AdminServer speaks HTTP/1.1; ignored")
	default:
		p.warn(pr, "unknown AdminServer setting; ignored")
	}
	return nil
}
