package adminhttp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/zkgo/zkgo/internal/tlssniff"
)

// HTTPS on the AdminServer's port, as ZooKeeper 3.7+'s JettyAdminServer
// serves it (Config.TLS; cmd/zkgo builds it from the ssl.quorum.*
// stores, as JettyAdminServer's QuorumX509Util reads them):
//
//   - admin.forceHttps=true: TLS only; a plain HTTP request fails its
//     handshake (crypto/tls answers a client that speaks HTTP to a TLS
//     port with a plain "400 Bad Request" and closes).
//   - admin.portUnification=true: both on one port. The first byte of a
//     connection tells them apart (internal/tlssniff: 0x16 starts a TLS
//     handshake, as ZooKeeper's UnifiedConnectionFactory checks), read
//     within adminReadHeaderTimeout by a goroutine of its own, so that a
//     silent client holds up nobody's Accept; at most adminMaxSniffing
//     connections are waiting for their first byte at once (more are
//     closed at once).
//
// Answers over TLS carry Strict-Transport-Security (max-age one day,
// includeSubDomains), as Jetty's SecureRequestCustomizer that
// JettyAdminServer installs adds them.
//
// A client certificate is asked for (required with admin.needClientAuth)
// and verified against the trust store; a verified one gives the request
// the x509 identity ZooKeeper's X509AuthenticationProvider gives it (the
// server reads it with VerifiedCert): the snapshot command accepts it,
// and the console opens its sessions for that client with it.

// adminMaxSniffing bounds the connections of a unified admin port waiting
// for their first byte.
const adminMaxSniffing = 256

// adminSTS is the Strict-Transport-Security header of answers over TLS:
// Jetty's SecureRequestCustomizer with JettyAdminServer's settings.
const adminSTS = "max-age=86400; includeSubDomains"

// unifiedListener hands out, from one TCP listener, TLS connections
// (*tls.Conn, which http.Server recognises: r.TLS is set) for clients
// that start a TLS handshake and plain ones for the others.
type unifiedListener struct {
	inner   net.Listener
	cfg     *tls.Config
	timeout time.Duration // for the first byte
	log     *slog.Logger

	conns     chan net.Conn
	errs      chan error
	done      chan struct{}
	closeOnce sync.Once
	sniffing  chan struct{} // a token per connection being sniffed
}

func newUnifiedListener(inner net.Listener, cfg *tls.Config, timeout time.Duration, log *slog.Logger) *unifiedListener {
	l := &unifiedListener{inner: inner, cfg: cfg, timeout: timeout, log: log,
		conns: make(chan net.Conn), errs: make(chan error), done: make(chan struct{}),
		sniffing: make(chan struct{}, adminMaxSniffing)}
	go l.acceptLoop()
	return l
}

// acceptLoop accepts from the inner listener until it is closed, and
// starts a sniffing goroutine per connection. Accept errors are passed to
// Accept (http.Server backs off on temporary ones).
func (l *unifiedListener) acceptLoop() {
	for {
		c, err := l.inner.Accept()
		if err != nil {
			select {
			case l.errs <- err:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		select {
		case l.sniffing <- struct{}{}:
		default:
			l.log.Warn("AdminServer: too many connections waiting for their first byte; closing one", "remote", c.RemoteAddr().String(), "max", adminMaxSniffing)
			c.Close()
			continue
		}
		go l.sniff(c)
	}
}

// sniff reads c's first byte and hands c to Accept as TLS or plain.
func (l *unifiedListener) sniff(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(l.timeout))
	pc, isTLS, err := tlssniff.Detect(c)
	<-l.sniffing
	if err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	out := pc
	if isTLS {
		out = tls.Server(pc, l.cfg)
	}
	select {
	case l.conns <- out:
	case <-l.done:
		c.Close()
	}
}

func (l *unifiedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *unifiedListener) Close() error {
	err := l.inner.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

func (l *unifiedListener) Addr() net.Addr { return l.inner.Addr() }

// withSTS adds Strict-Transport-Security to the answers over TLS.
func withSTS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			w.Header().Set("Strict-Transport-Security", adminSTS)
		}
		h.ServeHTTP(w, r)
	})
}

// VerifiedCert returns the client certificate the admin port verified
// for r (the leaf of its first verified chain), or nil.
func VerifiedCert(r *http.Request) *x509.Certificate {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil
	}
	return r.TLS.VerifiedChains[0][0]
}
