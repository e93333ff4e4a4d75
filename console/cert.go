package console

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/zkgo/zkgo/internal/x500"
	"github.com/zkgo/zkgo/zk"
)

// Certificate identities. Over HTTPS, a browser (or curl) that presents a
// client certificate the server verified (http.Request.TLS.VerifiedChains:
// the admin port's trust store) acts as that certificate's x509 identity,
// as a ZooKeeper client presenting it on a TLS client port does: the
// console opens a session for it whose connection carries the certificate
// (Config.Dial's cert), so the server gives it "x509:<subject>" (and the
// super user with X509AuthenticationProvider.superUser), and the tree
// page reads and the forms write with that session: the nodes' ACLs
// decide. Nothing is typed and there is no cookie: the certificate comes
// with every request. Such sessions are kept per certificate (its SHA-256)
// in a store of their own, bounded and expired like the digest logins; a
// digest login made over a connection with a certificate carries both
// identities, and is used only with that certificate.
//
// Without Config.Dial (a console that dials Servers itself) there is no
// way to hand the certificate to the server: certificates are ignored.

// requestCert returns the verified client certificate of r, or nil.
func requestCert(r *http.Request) *x509.Certificate {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil
	}
	return r.TLS.VerifiedChains[0][0]
}

// certKey names a certificate in the certificate store ("" for nil).
func certKey(cert *x509.Certificate) string {
	if cert == nil {
		return ""
	}
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}

// certSubject is the certificate's subject as the server's x509 identity
// writes it (Java's X500Principal.getName()).
func certSubject(cert *x509.Certificate) string {
	if s, err := x500.Name(cert.RawSubject); err == nil {
		return s
	}
	return cert.Subject.String()
}

// usableCert returns r's verified certificate if the console can act as
// it (Config.Dial is set), else nil.
func (c *Console) usableCert(r *http.Request) *x509.Certificate {
	if c.cfg.Dial == nil {
		return nil
	}
	return requestCert(r)
}

// identity returns the login r acts as, nil for none: the browser's
// digest login if it was made with the certificate r presents (or both
// have none), else the login of r's certificate if it has one already.
func (c *Console) identity(r *http.Request) *login {
	now := time.Now()
	key := certKey(c.usableCert(r))
	if l := c.logins.fromRequest(r, now); l != nil && l.certKey == key {
		return l
	}
	if key == "" {
		return nil
	}
	return c.certs.get(key, now)
}

// certLogin opens and stores the session of cert, acting for r's client.
func (c *Console) certLogin(ctx context.Context, r *http.Request, cert *x509.Certificate) (*login, error) {
	key := certKey(cert)
	opts := append([]zk.Option{zk.WithSessionTimeout(sessionTimeout), zk.WithMaxFrameSize(maxFrame)}, c.zkOptionsCert(r.RemoteAddr, cert)...)
	conn, err := zk.Connect(ctx, c.cfg.Servers, opts...)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	l := &login{token: key, user: certSubject(cert), cert: true, certKey: key, csrf: randomToken(), conn: conn, created: now, lastUsed: now}
	kept, err := c.certs.addOrGet(l, now)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if kept != l {
		conn.Close() // another request opened it meanwhile
		return kept, nil
	}
	c.log.Info("console: acting as a client certificate's identity", "x509", l.user, "client", r.RemoteAddr, "session", hexID(conn.SessionID()))
	return l, nil
}

// readSession returns the session the tree page reads with: that of r's
// certificate (opened if need be) when r presents one, else the shared
// anonymous one. Digest logins do not read with their sessions: their
// identities are not verified.
func (c *Console) readSession(ctx context.Context, r *http.Request) (conn *zk.Conn, who string, err error) {
	cert := c.usableCert(r)
	if cert == nil {
		conn, err = c.shared.get(ctx)
		return conn, "", err
	}
	l := c.certs.get(certKey(cert), time.Now())
	if l != nil {
		if conn, err := l.session(ctx); err == nil {
			return conn, "x509:" + l.user, nil
		}
		c.certs.remove(l) // its session ended: open another
	}
	if l, err = c.certLogin(ctx, r, cert); err != nil {
		return nil, "", err
	}
	return l.conn, "x509:" + l.user, nil
}
