package clientport

import (
	"errors"
	"fmt"
	"slices"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/internal/krb"
	"github.com/zkgo/zkgo/internal/sasl"
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/audit"
)

// SASL authentication, as ZooKeeper 3.8's ZooKeeperServer.processSasl does
// it with the DIGEST-MD5 and GSSAPI (Kerberos) mechanisms, and
// authentication enforcement (AuthenticationHelper).
//
// ZooKeeper's protocol does not name the mechanism: a ZooKeeper server
// runs GSSAPI when its JAAS section logged in with Kerberos, DIGEST-MD5
// otherwise. zkgo can run both: a client's first token tells them apart
// (DIGEST-MD5's is empty, GSSAPI's is a GSS-API context token, 0x60 ...).
// With GSSAPI the id is sasl:<principal mapped by SASLOptions.KerberosNames>.
//
// A client sends its SASL tokens in OpSasl requests (GetSASLRequest) after
// the handshake and before its other requests; each is answered at once,
// out of the request pipeline, as ZooKeeper answers them (and as addauth
// packets are answered). When the exchange completes the connection gains
// the id sasl:<user name>, and super:"" too if the user is SASLOptions.
// SuperUser. Any failure is answered AuthFailed (SessionClosedRequireSaslAuth
// when sasl is an enforced scheme) with a null token, and the connection is
// closed after the reply; the session itself lives on until it expires.
//
// The exchange state is per connection and owned by the reader goroutine,
// like everything handleFrame touches; Conn.auth is copy-on-write because
// the apply loop reads it.

// SASLOptions configure SASL authentication (ZooKeeper's JAAS "Server"
// section with DigestLoginModule, and zookeeper.superUser).
type SASLOptions struct {
	// Users maps user names to passwords (the user_NAME="password" options
	// of the JAAS "Server" section). Empty turns SASL off: a client that
	// tries it is answered AuthFailed.
	Users map[string]string
	// SuperUser, if set, is a SASL user name that also gets the "super"
	// identity, which passes every ACL (zookeeper.superUser). For
	// Kerberos it is compared with the id after KerberosNames.
	SuperUser string
	// Kerberos, if set, are the server's credentials (a keytab) for the
	// GSSAPI mechanism: the Krb5LoginModule entry of the JAAS "Server"
	// section, principal zookeeper/<host>@REALM.
	Kerberos *krb.Credentials
	// KerberosNames map a client's principal to its sasl id
	// (kerberos.removeHostFromPrincipal, kerberos.removeRealmFromPrincipal).
	KerberosNames krb.NameRules
	// Provider registers the sasl ACL scheme even without users
	// (authProvider.N=…SASLAuthenticationProvider): sasl ACLs are valid
	// when it is set or there are users, invalid otherwise, as in
	// ZooKeeper. It also lets sasl be enforced without users.
	Provider bool
}

// saslExchange is a connection's SASL state; reader goroutine only.
type saslExchange struct {
	srv *sasl.Server  // DIGEST-MD5
	gss *krb.Acceptor // GSSAPI
}

// saslPassword is the password lookup of the DIGEST-MD5 exchange.
func (s *Port) saslPassword(user string) (string, bool) {
	pw, ok := s.opts.SASL.Users[user]
	return pw, ok
}

// handleSasl processes one OpSasl request. It returns false when the
// connection must close.
func (c *Conn) handleSasl(xid int32, d *jute.Decoder) bool {
	var req proto.GetSASLRequest
	req.Decode(d)
	if d.Err() != nil {
		return c.saslFailed(xid, fmt.Errorf("malformed GetSASLRequest: %w", d.Err()))
	}
	if c.saslEx == nil {
		ex, err := c.s.newSaslExchange(req.Token)
		if err != nil {
			return c.saslFailed(xid, err)
		}
		c.saslEx = ex
	}
	if c.saslEx.gss != nil {
		return c.handleGSSAPI(xid, req.Token)
	}
	srv := c.saslEx.srv
	out, err := srv.Next(req.Token)
	if err != nil {
		return c.saslFailed(xid, err)
	}
	if srv.Done() {
		// Done turns true on exactly one successful step.
		user := srv.User()
		ids := []proto.Id{{Scheme: acl.SchemeSASL, ID: user}}
		if su := c.s.opts.SASL.SuperUser; su != "" && su == user {
			ids = append(ids, proto.Id{Scheme: acl.SchemeSuper, ID: ""})
		}
		c.addAuthIDs(ids)
		c.auditAuth(audit.OpSASLAuth, false)
		c.s.log.Info("SASL authentication succeeded", "session", proto.SessionIDHex(c.sessionID), "user", user, "super", len(ids) > 1)
	}
	c.enqueue(&proto.ReplyHeader{Xid: xid}, &proto.SetSASLResponse{Token: out})
	return true
}

// newSaslExchange picks the mechanism by the client's first token.
func (s *Port) newSaslExchange(first []byte) (*saslExchange, error) {
	if len(first) > 0 && first[0] == 0x60 {
		if s.opts.SASL.Kerberos == nil {
			return nil, errors.New("client sent a GSSAPI token but Kerberos is not configured on this server (no Krb5LoginModule in the JAAS server section)")
		}
		acc, err := krb.NewAcceptor(s.opts.SASL.Kerberos)
		if err != nil {
			return nil, err
		}
		return &saslExchange{gss: acc}, nil
	}
	if len(s.opts.SASL.Users) == 0 {
		if s.opts.SASL.Kerberos != nil {
			return nil, errors.New("client did not start a GSSAPI exchange, and this server has no DIGEST-MD5 users")
		}
		return nil, errors.New("SASL is not configured on this server")
	}
	return &saslExchange{srv: sasl.NewServer(sasl.ServerConfig{Password: s.saslPassword})}, nil
}

// handleGSSAPI runs one step of a GSSAPI exchange.
func (c *Conn) handleGSSAPI(xid int32, token []byte) bool {
	acc := c.saslEx.gss
	out, err := acc.Next(token)
	if err != nil {
		if p := acc.Principal(); p != "" {
			err = fmt.Errorf("%s: %w", p, err)
		}
		return c.saslFailed(xid, err)
	}
	if acc.Done() {
		principal := acc.Principal()
		user := c.s.opts.SASL.KerberosNames.ID(principal)
		ids := []proto.Id{{Scheme: acl.SchemeSASL, ID: user}}
		if su := c.s.opts.SASL.SuperUser; su != "" && su == user {
			ids = append(ids, proto.Id{Scheme: acl.SchemeSuper, ID: ""})
		}
		c.addAuthIDs(ids)
		c.auditAuth(audit.OpSASLAuth, false)
		c.s.log.Info("SASL GSSAPI authentication succeeded", "session", proto.SessionIDHex(c.sessionID), "principal", principal,
			"authzid", acc.AuthzID(), "user", user, "super", len(ids) > 1)
	}
	c.enqueue(&proto.ReplyHeader{Xid: xid}, &proto.SetSASLResponse{Token: out})
	return true
}

// saslFailed answers a failed SASL step and closes the connection after the
// reply. The null token makes ZooKeeper's Java client fail its exchange
// (AUTH_FAILED) whatever the error code.
func (c *Conn) saslFailed(xid int32, err error) bool {
	code := proto.ErrAuthFailed
	if slices.Contains(c.s.opts.EnforceAuthSchemes, acl.SchemeSASL) {
		code = proto.ErrSessionClosedRequireSaslAuth
	}
	c.s.stats.AuthFailed.Add(1)
	c.auditAuth(audit.OpSASLAuth, true)
	c.s.log.Warn("SASL authentication failed; closing the connection",
		"session", proto.SessionIDHex(c.sessionID), "remote", c.raw.RemoteAddr().String(), "err", err)
	c.enqueue(&proto.ReplyHeader{Xid: xid, Err: code}, &proto.SetSASLResponse{Token: nil})
	c.closeAfterFlush()
	return false
}

// addAuthIDs adds ids to the connection's identities, skipping those it
// already holds. Reader goroutine only (the only writer of c.auth).
func (c *Conn) addAuthIDs(ids []proto.Id) {
	cur := *c.auth.Load()
	next := make([]proto.Id, 0, len(cur)+len(ids))
	next = append(next, cur...)
	for _, id := range ids {
		if !slices.Contains(next, id) {
			next = append(next, id)
		}
	}
	c.auth.Store(&next)
}

// authMissing reports whether authentication is enforced and the
// connection holds no identity of an enforced scheme, so that a request
// other than auth or SASL must be refused.
func (c *Conn) authMissing() bool {
	schemes := c.s.opts.EnforceAuthSchemes
	if len(schemes) == 0 {
		return false
	}
	for _, id := range *c.auth.Load() {
		if slices.Contains(schemes, id.Scheme) {
			return false
		}
	}
	return true
}

// refuseUnauthenticated answers r with SessionClosedRequireSaslAuth (after
// the replies ahead of it) and closes the connection, as ZooKeeper's
// AuthenticationHelper.enforceAuthentication does. It returns false: the
// reader stops.
func (c *Conn) refuseUnauthenticated(r *request) bool {
	var schemes []string
	for _, id := range *c.auth.Load() {
		schemes = append(schemes, id.Scheme)
	}
	c.s.log.Warn("closing connection: client is not authenticated with an enforced scheme",
		"session", proto.SessionIDHex(c.sessionID), "op", r.op.String(), "has", schemes, "enforced", c.s.opts.EnforceAuthSchemes)
	c.submitRead(r, fixedCode(proto.ErrSessionClosedRequireSaslAuth))
	c.closeAfterFlush()
	return false
}

func (c *Conn) handleAuth(xid int32, d *jute.Decoder) bool {
	var ap proto.AuthPacket
	ap.Decode(d)
	if d.Err() != nil {
		c.enqueue(&proto.ReplyHeader{Xid: xid, Err: proto.ErrAuthFailed}, nil)
		c.closeAfterFlush()
		return false
	}
	var ids []proto.Id
	var err error
	if ap.Scheme == acl.SchemeX509 {
		// X509AuthenticationProvider.handleAuthentication: the
		// connection's client certificate, whatever the payload says;
		// without one, nothing to authenticate.
		ids = c.certIDs
		if ids == nil {
			err = errors.New("no client certificate")
		}
	} else {
		ids, err = acl.Authenticate(ap.Scheme, ap.Auth, c.s.opts.SuperDigest)
	}
	if err == nil && ap.Scheme == acl.SchemeDigest && c.s.opts.DisableDigestAuth {
		err = errors.New("digest authentication is disabled")
	}
	if err != nil {
		c.s.log.Info("authentication failed", "scheme", ap.Scheme, "session", proto.SessionIDHex(c.sessionID), "err", err)
		c.auditAuth(audit.OpAddAuth, true)
		c.enqueue(&proto.ReplyHeader{Xid: xid, Err: proto.ErrAuthFailed}, nil)
		// As ZooKeeper (disableRecv): nothing sent after the refused
		// addauth is read, let alone executed.
		c.closeAfterFlush()
		return false
	}
	c.addIDs(ids)
	c.auditAuth(audit.OpAddAuth, false)
	c.enqueue(&proto.ReplyHeader{Xid: xid}, nil)
	return true
}
