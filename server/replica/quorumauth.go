package replica

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/zkgo/zkgo/internal/krb"
	"github.com/zkgo/zkgo/internal/sasl"
	"github.com/zkgo/zkgo/raftnode"
)

// Quorum SASL: members authenticate each other on the peer port as
// ZooKeeper's members do (quorum.auth.*, config/quorumauth.go); the
// exchange and the rolling switch-on are raftnode's PeerAuth.

// QuorumAuthOptions configures quorum SASL (server.Options.QuorumAuth).
type QuorumAuthOptions struct {
	// Enable (quorum.auth.enableSasl): authenticate to peers that can,
	// authenticate peers that offer it. LearnerRequire
	// (quorum.auth.learnerRequireSasl) refuses peers that do not
	// authenticate this member; ServerRequire
	// (quorum.auth.serverRequireSasl) refuses peers that do not
	// authenticate themselves.
	Enable, LearnerRequire, ServerRequire bool
	// ServerUsers are the DIGEST-MD5 users peers are checked against
	// (the QuorumServer section's user_NAME="password"); LearnerUser and
	// LearnerPassword the credentials this member authenticates with
	// (the QuorumLearner section's username and password).
	ServerUsers                  map[string]string
	LearnerUser, LearnerPassword string
	// ServerKerberos and LearnerKerberos, if set, are the Kerberos
	// credentials (GSSAPI) of the two sides: a keytab of the member's
	// service principal, as the quorum sections' Krb5LoginModule entries
	// give them. A member with learner credentials authenticates with
	// Kerberos rather than DIGEST-MD5. ServicePrincipal
	// (quorum.auth.kerberos.servicePrincipal) names the peer's
	// principal, _HOST standing for the host of its server.N address; a
	// learner's principal must name the host of the server it claims to
	// be (authorizePeer).
	ServerKerberos, LearnerKerberos *krb.Credentials
	ServicePrincipal                string
}

// The digest-uri of ZooKeeper's quorum DIGEST-MD5: protocol and server
// name its learners and quorum servers use.
const (
	quorumDigestService = "zookeeper-quorum"
	quorumDigestHost    = "zk-quorum-sasl-md5"
	mechDigest          = "DIGEST-MD5"
	mechGSSAPI          = "GSSAPI"
)

// peerAuth returns the peer transport's PeerAuth, or nil with quorum
// SASL off.
func (r *Replica) peerAuth() *raftnode.PeerAuth {
	qa := r.opts.QuorumAuth
	if !qa.Enable {
		return nil
	}
	pa := &raftnode.PeerAuth{LearnerRequire: qa.LearnerRequire, ServerRequire: qa.ServerRequire}
	if creds := qa.LearnerKerberos; creds != nil {
		spn := qa.ServicePrincipal
		pa.NewClient = func(to uint64, addr string) (string, raftnode.AuthClient, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			svc, h, err := krb.SplitServicePrincipal(krb.ExpandHost(spn, host))
			if err != nil {
				return "", nil, fmt.Errorf("quorum.auth.kerberos.servicePrincipal: %w", err)
			}
			ini, err := krb.NewInitiator(creds, svc, h)
			return mechGSSAPI, ini, err
		}
	} else if qa.LearnerUser != "" {
		user, password := qa.LearnerUser, qa.LearnerPassword
		pa.NewClient = func(to uint64, addr string) (string, raftnode.AuthClient, error) {
			return mechDigest, digestClient{sasl.NewClient(sasl.ClientConfig{User: user, Password: password,
				Service: quorumDigestService, Host: quorumDigestHost})}, nil
		}
	}
	if len(qa.ServerUsers) > 0 || qa.ServerKerberos != nil {
		users, creds := qa.ServerUsers, qa.ServerKerberos
		pa.NewServer = func(mech string) (raftnode.AuthServer, error) {
			switch {
			case mech == mechDigest && len(users) > 0:
				return digestServer{sasl.NewServer(sasl.ServerConfig{Service: quorumDigestService, Host: quorumDigestHost,
					Password: func(u string) (string, bool) { p, ok := users[u]; return p, ok }})}, nil
			case mech == mechGSSAPI && creds != nil:
				return krb.NewAcceptor(creds)
			}
			return nil, fmt.Errorf("mechanism %s is not one this member takes (its quorum server section has no credentials for it)", mech)
		}
		pa.Authorize = r.authorizePeer
	}
	return pa
}

// authorizePeer is PeerAuth.Authorize: a Kerberos principal
// (service/host@REALM) authenticates the server whose server.N address
// names that host, or resolves to one of its addresses — not any other
// member. A DIGEST-MD5 user proves only that the peer holds the
// ensemble's shared secret (as in ZooKeeper, where every member logs in
// as the same user).
func (r *Replica) authorizePeer(from uint64, principal string) error {
	if _, ok := r.opts.QuorumAuth.ServerUsers[principal]; ok {
		return nil
	}
	name, _ := krb.SplitRealm(principal)
	_, host, ok := strings.Cut(name, "/")
	if !ok || host == "" {
		return fmt.Errorf("principal %s names no host: it cannot be server.%d", principal, MemberID(from))
	}
	p, ok := r.Peer(MemberID(from))
	if !ok {
		return fmt.Errorf("server.%d is not a member", MemberID(from))
	}
	for _, addr := range p.addrs() {
		h, _, err := net.SplitHostPort(addr)
		if err != nil {
			continue
		}
		if strings.EqualFold(h, host) || sameHost(h, host) {
			return nil
		}
	}
	return fmt.Errorf("principal %s is not server.%d's: its host is not the host of %s", principal, MemberID(from), strings.Join(p.addrs(), "|"))
}

// sameHost reports whether two host names or addresses resolve to a
// common address.
func sameHost(a, b string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	as, err := net.DefaultResolver.LookupHost(ctx, a)
	if err != nil {
		return false
	}
	bs, err := net.DefaultResolver.LookupHost(ctx, b)
	if err != nil {
		return false
	}
	for _, x := range as {
		if slices.Contains(bs, x) {
			return true
		}
	}
	return false
}

// digestClient adapts internal/sasl's DIGEST-MD5 client to raftnode.
type digestClient struct{ *sasl.Client }

func (c digestClient) Start() ([]byte, error) { return c.Client.Start(), nil }

// digestServer adapts internal/sasl's DIGEST-MD5 server to raftnode.
type digestServer struct{ *sasl.Server }

func (s digestServer) Principal() string { return s.User() }
