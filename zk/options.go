package zk

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"
)

// DefaultSessionTimeout is the session timeout asked for when
// WithSessionTimeout is not given.
const DefaultSessionTimeout = 30 * time.Second

// DialFunc dials a server. It is net.Dialer.DialContext's signature; a TLS
// dialer (tls.Dialer.DialContext) fits as it is.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Option configures Connect.
type Option func(*config)

type authInfo struct {
	scheme string
	auth   []byte
}

type config struct {
	sessionTimeout time.Duration
	chroot         string
	auths          []authInfo
	sasl           *saslCreds // WithSASL (sasl.go)
	dial           DialFunc
	logger         *slog.Logger
	readOnly       bool
	shuffle        bool
	retry          RetryPolicy
	listeners      []func(State)
	maxFrame       int
	provider       HostProvider // WithHostProvider (hosts.go)
	noTrack        bool         // WithEnsembleTracking(false)
}

func defaultConfig() config {
	return config{
		sessionTimeout: DefaultSessionTimeout,
		dial:           (&net.Dialer{}).DialContext,
		logger:         slog.New(discardHandler{}),
		shuffle:        true,
		retry:          ExponentialBackoff{Base: 10 * time.Millisecond, Max: time.Second},
		maxFrame:       4 << 20,
	}
}

// WithSessionTimeout sets the session timeout asked for; the server clamps
// it to its [minSessionTimeout, maxSessionTimeout] (by default 2 to 20 ticks).
// Default DefaultSessionTimeout.
func WithSessionTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.sessionTimeout = d
		}
	}
}

// WithChroot makes every path relative to root ("/app": the caller's "/x" is
// the server's "/app/x"). It overrides a chroot given in the connect string.
func WithChroot(root string) Option { return func(c *config) { c.chroot = root } }

// WithAuth adds credentials (for example "digest", "user:password"), sent
// after the first handshake and again after every reconnection. Connect
// fails with ErrAuthFailed if the server refuses them.
func WithAuth(scheme string, auth []byte) Option {
	return func(c *config) {
		c.auths = append(c.auths, authInfo{scheme, append([]byte(nil), auth...)})
	}
}

// WithDialer sets the function used to open connections (TLS, proxies,
// tests that cut connections).
func WithDialer(d DialFunc) Option {
	return func(c *config) {
		if d != nil {
			c.dial = d
		}
	}
}

// WithTLS connects over TLS with cfg: to ZooKeeper's secure client port
// (secureClientPort) or a unified port. Unless cfg.ServerName is set, each
// server's certificate is checked against the host name it is dialled
// by. A client certificate in cfg authenticates the session with its
// subject in the x509 scheme (ACL id "x509:CN=...,O=..."). A nil cfg
// changes nothing.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) {
		if cfg != nil {
			c.dial = (&tls.Dialer{Config: cfg}).DialContext
		}
	}
}

// WithLogger sets the logger for connection events. Default: no logging.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithReadOnly allows the session to be served by a read-only server
// (one cut off from its quorum); the state is then StateReadOnly and writes
// fail with ErrNotReadOnly.
func WithReadOnly(ro bool) Option { return func(c *config) { c.readOnly = ro } }

// WithHostShuffle controls whether the server list is shuffled: at Connect,
// and each time ensemble tracking changes it (see HostList). Default true.
func WithHostShuffle(shuffle bool) Option { return func(c *config) { c.shuffle = shuffle } }

// WithConnectRetry sets the delay between passes over the server list while
// connecting or reconnecting (the first pass after a disconnection starts
// at once, and the servers of one pass are tried back to back). The policy's
// attempt count starts at 1 for the delay after the first failed pass. When
// the policy gives up, Connect fails; a reconnecting Conn keeps retrying at
// the last delay until its session times out (StateLost).
// Default ExponentialBackoff{Base: 10ms, Max: 1s}.
func WithConnectRetry(p RetryPolicy) Option {
	return func(c *config) {
		if p != nil {
			c.retry = p
		}
	}
}

// WithConnectBackoff is WithConnectRetry(ExponentialBackoff{Base: min, Max: max}).
func WithConnectBackoff(min, max time.Duration) Option {
	return WithConnectRetry(ExponentialBackoff{Base: min, Max: max})
}

// WithStateListener registers fn to be called with every state transition,
// in order, from one goroutine (so fn should not block for long; it must
// not call Close and then wait for a later transition).
//
// Deprecated: Use Conn.NotifyState on the Conn that Connect returns (and
// Conn.State for the state it returned in); unlike a listener, its
// subscription can be ended.
func WithStateListener(fn func(State)) Option {
	return func(c *config) {
		if fn != nil {
			c.listeners = append(c.listeners, fn)
		}
	}
}

// WithMaxFrameSize bounds the size of a reply the client accepts (like
// jute.maxbuffer on the Java client). Default 4 MiB.
func WithMaxFrameSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxFrame = n
		}
	}
}

var errNoServers = errors.New("zk: no server addresses")

// parseServers splits "host:port,host:port/chroot" (or a list of such
// entries) into addresses and a chroot.
func parseServers(servers []string) (addrs []string, chroot string, err error) {
	for _, s := range servers {
		if i := strings.IndexByte(s, '/'); i >= 0 {
			if chroot != "" && chroot != s[i:] {
				return nil, "", fmt.Errorf("zk: conflicting chroots %q and %q", chroot, s[i:])
			}
			chroot = s[i:]
			s = s[:i]
		}
		for _, h := range strings.Split(s, ",") {
			h = strings.TrimSpace(h)
			if h == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(h); err != nil {
				h = net.JoinHostPort(h, "2181")
			}
			addrs = append(addrs, h)
		}
	}
	if len(addrs) == 0 {
		return nil, chroot, errNoServers
	}
	return addrs, chroot, nil
}

// normChroot validates and normalises a chroot: "" and "/" mean none.
func normChroot(root string) (string, error) {
	if root == "" || root == "/" {
		return "", nil
	}
	if err := validatePath(root, false); err != nil {
		return "", fmt.Errorf("zk: invalid chroot %q: %w", root, err)
	}
	return root, nil
}

type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (h discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h discardHandler) WithGroup(string) slog.Handler           { return h }
