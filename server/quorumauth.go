package server

import (
	"fmt"

	"github.com/zkgo/zkgo/internal/sasl"
	"github.com/zkgo/zkgo/raftnode"
)

// Quorum SASL: members authenticate each other on the peer port as
// ZooKeeper's members do (quorum.auth.*, config/quorumauth.go); the
// exchange and the rolling switch-on are raftnode's PeerAuth.

// QuorumAuthOptions configures quorum SASL (Options.QuorumAuth).
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
}

// The digest-uri of ZooKeeper's quorum DIGEST-MD5: protocol and server
// name its learners and quorum servers use.
const (
	quorumDigestService = "zookeeper-quorum"
	quorumDigestHost    = "zk-quorum-sasl-md5"
	mechDigest          = "DIGEST-MD5"
)

// peerAuth returns the peer transport's PeerAuth, or nil with quorum
// SASL off.
func (r *replica) peerAuth() *raftnode.PeerAuth {
	qa := r.opts.QuorumAuth
	if !qa.Enable {
		return nil
	}
	pa := &raftnode.PeerAuth{LearnerRequire: qa.LearnerRequire, ServerRequire: qa.ServerRequire}
	if qa.LearnerUser != "" {
		user, password := qa.LearnerUser, qa.LearnerPassword
		pa.NewClient = func(to uint64, addr string) (string, raftnode.AuthClient, error) {
			return mechDigest, digestClient{sasl.NewClient(sasl.ClientConfig{User: user, Password: password,
				Service: quorumDigestService, Host: quorumDigestHost})}, nil
		}
	}
	if len(qa.ServerUsers) > 0 {
		users := qa.ServerUsers
		pa.NewServer = func(mech string) (raftnode.AuthServer, error) {
			if mech != mechDigest {
				return nil, fmt.Errorf("mechanism %s is not one this member takes (its QuorumServer section has %s users)", mech, mechDigest)
			}
			return digestServer{sasl.NewServer(sasl.ServerConfig{Service: quorumDigestService, Host: quorumDigestHost,
				Password: func(u string) (string, bool) { p, ok := users[u]; return p, ok }})}, nil
		}
	}
	return pa
}

// digestClient adapts internal/sasl's DIGEST-MD5 client to raftnode.
type digestClient struct{ *sasl.Client }

func (c digestClient) Start() ([]byte, error) { return c.Client.Start(), nil }

// digestServer adapts internal/sasl's DIGEST-MD5 server to raftnode.
type digestServer struct{ *sasl.Server }

func (s digestServer) Principal() string { return s.User() }
