package zk

import (
	"context"
	"fmt"

	"github.com/zkgo/zkgo/internal/sasl"
	"github.com/zkgo/zkgo/proto"
)

// maxSASLRounds bounds the exchange; DIGEST-MD5 needs two round trips,
// GSSAPI three.
const maxSASLRounds = 4

type saslCreds struct {
	user, password string
	kerberos       *kerberosState // WithKerberos (kerberos.go): GSSAPI
}

// saslMech is one exchange of a mechanism.
type saslMech interface {
	Next(token []byte) ([]byte, error)
	Done() bool
}

// WithSASL authenticates with SASL, mechanism DIGEST-MD5, as user: what
// ZooKeeper's Java client does with a JAAS "Client" section using
// DigestLoginModule (username, password). The exchange runs after the
// session handshake and before any other request (credentials of WithAuth
// and watch re-registration included), and again after every reconnection;
// the server then treats the connection as sasl:<user> in ACLs.
//
// If the server refuses (bad user or password, SASL not configured on the
// server) or cannot prove that it knows the password, Connect fails with an
// error wrapping ErrAuthFailed; after a reconnection the Conn ends instead
// (StateLost) and every operation fails with that error, as the Java client
// goes to AUTH_FAILED.
func WithSASL(user, password string) Option {
	return func(c *config) { c.sasl = &saslCreds{user: user, password: password} }
}

// saslAuth runs the SASL exchange on a fresh link, before it is published.
// On a transport failure it returns the request's connection-loss error
// (the caller tries again, maybe elsewhere); on an authentication failure it
// kills the link and returns an *Error wrapping ErrAuthFailed.
func (c *Conn) saslAuth(ctx context.Context, l *link) error {
	cr := c.cfg.sasl
	if cr == nil {
		return nil
	}
	fail := func(code proto.ErrCode, detail string, cause error) error {
		l.fail(connLoss(ErrAuthFailed))
		l.wg.Wait()
		return &Error{Code: code, Op: "sasl", Err: ErrAuthFailed, Detail: detail, Cause: cause}
	}
	var mech saslMech
	var tok []byte
	user := cr.user
	if cr.kerberos != nil {
		ini, err := cr.kerberos.initiator(ctx, l.addr)
		if err == nil {
			user = ini.AuthzID + " (GSSAPI, server " + ini.ServicePrincipal() + ")"
			tok, err = ini.Start()
		}
		if err != nil {
			return fail(proto.ErrAuthFailed, "Kerberos: "+err.Error(), err)
		}
		mech = ini
	} else {
		c := sasl.NewClient(sasl.ClientConfig{User: cr.user, Password: cr.password})
		mech, tok = c, c.Start()
	}
	for round := 0; round < maxSASLRounds; round++ {
		resp := &proto.SetSASLResponse{}
		r := &request{xid: c.nextXid(), op: proto.OpSasl, body: &proto.GetSASLRequest{Token: tok}, resp: resp, done: make(chan struct{})}
		if err := l.send(r); err != nil {
			l.wg.Wait()
			return err
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			l.fail(connLoss(ctx.Err()))
			<-r.done
		}
		if r.err != nil {
			l.wg.Wait()
			return r.err
		}
		if r.code != proto.ErrOk {
			// AuthFailed, or SessionClosedRequireSaslAuth from a server
			// that enforces SASL; either way the server closes.
			return fail(r.code, fmt.Sprintf("server answered %v to user %q", r.code, user), CodeError(r.code))
		}
		next, err := mech.Next(resp.Token)
		if err != nil {
			return fail(proto.ErrAuthFailed, err.Error(), err)
		}
		if mech.Done() {
			c.cfg.logger.Debug("zk: SASL authentication succeeded", "server", l.addr, "user", user)
			return nil
		}
		tok = next
	}
	return fail(proto.ErrAuthFailed, "SASL exchange did not finish", nil)
}
