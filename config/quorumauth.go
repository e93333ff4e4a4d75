package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Quorum SASL: ZooKeeper's authentication of ensemble members to each
// other (zoo.cfg's quorum.auth.* keys), with the credentials in the JAAS
// file's QuorumServer and QuorumLearner sections.
//
//	quorum.auth.enableSasl=true
//	quorum.auth.learnerRequireSasl=true
//	quorum.auth.serverRequireSasl=true
//	quorum.auth.learner.saslLoginContext=QuorumLearner   (default)
//	quorum.auth.server.saslLoginContext=QuorumServer     (default)
//	quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST (Kerberos)
//
// A member dials its peers as a learner does in ZooKeeper and accepts
// them as a quorum server does: the dialer authenticates with the
// learner section's credentials, the acceptor checks them against the
// server section's. ZooKeeper's rolling switch-on works unchanged:
// enableSasl on every member first (each authenticates when the other
// side can, and takes peers that do not), then learnerRequireSasl (a
// member refuses peers that do not authenticate it back), then
// serverRequireSasl (a member refuses dialers that do not authenticate).

// Defaults of ZooKeeper's quorum SASL keys.
const (
	DefaultQuorumLearnerSection = "QuorumLearner"
	DefaultQuorumServerSection  = "QuorumServer"
	DefaultQuorumServicePrinc   = "zkquorum/localhost"
)

// JAAS login modules of quorum SASL.
const (
	digestLoginModule   = "org.apache.zookeeper.server.auth.DigestLoginModule"
	kerberosLoginModule = "com.sun.security.auth.module.Krb5LoginModule"
)

// QuorumAuth is the quorum SASL configuration.
type QuorumAuth struct {
	// EnableSASL (quorum.auth.enableSasl): members authenticate to each
	// other when both can. LearnerRequire (quorum.auth.learnerRequireSasl)
	// and ServerRequire (quorum.auth.serverRequireSasl) refuse peers that
	// do not, as dialer and as acceptor; both need EnableSASL.
	EnableSASL, LearnerRequire, ServerRequire bool
	// LearnerSection and ServerSection are the JAAS sections of the
	// credentials (quorum.auth.learner.saslLoginContext,
	// quorum.auth.server.saslLoginContext).
	LearnerSection, ServerSection string
	// ServicePrincipal (quorum.auth.kerberos.servicePrincipal) is the
	// Kerberos principal of the members, _HOST standing for the host of
	// the member dialed.
	ServicePrincipal string

	// From the JAAS file, with EnableSASL (Load): the DIGEST-MD5 users of
	// the server section (user_NAME=password) and the learner section's
	// username and password; or the Kerberos entries of the sections.
	ServerUsers                     map[string]string
	LearnerUser, LearnerPassword    string
	ServerKerberos, LearnerKerberos *JAASEntry
}

// parseQuorumAuth takes one quorum.auth.* key.
func (p *parser) parseQuorumAuth(c *Config, pr property) error {
	qa := &c.QuorumAuth
	switch k, v := pr.key, strings.TrimSpace(pr.value); k {
	case "quorum.auth.enableSasl":
		qa.EnableSASL = p.javaBool(pr)
	case "quorum.auth.learnerRequireSasl":
		qa.LearnerRequire = p.javaBool(pr)
	case "quorum.auth.serverRequireSasl":
		qa.ServerRequire = p.javaBool(pr)
	case "quorum.auth.learner.saslLoginContext":
		if v == "" {
			return p.errorf(pr, "empty JAAS section name")
		}
		qa.LearnerSection = v
	case "quorum.auth.server.saslLoginContext":
		if v == "" {
			return p.errorf(pr, "empty JAAS section name")
		}
		qa.ServerSection = v
	case "quorum.auth.kerberos.servicePrincipal":
		if v == "" {
			return p.errorf(pr, "empty service principal")
		}
		qa.ServicePrincipal = v
	default:
		p.warn(pr, "unknown quorum authentication key; ignored")
	}
	return nil
}

// validate checks the keys together, as ZooKeeper does at start.
func (qa *QuorumAuth) validate() error {
	switch {
	case qa.LearnerRequire && !qa.EnableSASL:
		return fmt.Errorf("quorum.auth.learnerRequireSasl=true needs quorum.auth.enableSasl=true")
	case qa.ServerRequire && !qa.EnableSASL:
		return fmt.Errorf("quorum.auth.serverRequireSasl=true needs quorum.auth.enableSasl=true")
	}
	return nil
}

// loadQuorumAuth reads the credentials of quorum SASL from the JAAS file
// (jaas, already resolved), when it is enabled. A member with quorum SASL
// on but no credentials for a side it must play does not start: it could
// not join its ensemble, and would only say so peer by peer.
func (c *Config) loadQuorumAuth(jaas string) error {
	qa := &c.QuorumAuth
	if err := qa.validate(); err != nil {
		return err
	}
	if !qa.EnableSASL {
		return nil
	}
	if jaas == "" {
		return fmt.Errorf("quorum.auth.enableSasl=true needs a JAAS file with the %s and %s sections (-Djava.security.auth.login.config in SERVER_JVMFLAGS, or zkgo.sasl.jaasConfig)",
			qa.LearnerSection, qa.ServerSection)
	}
	f, err := os.Open(jaas)
	if err != nil {
		return fmt.Errorf("quorum SASL: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxJAASFileSize+1))
	if err != nil {
		return fmt.Errorf("quorum SASL: %w", err)
	}
	sections, err := ParseJAAS(string(data), jaas)
	if err != nil {
		return err
	}
	name := filepath.Base(jaas)
	server, ok := sections[qa.ServerSection]
	if !ok {
		return fmt.Errorf("quorum SASL: %s has no section %s (quorum.auth.server.saslLoginContext): the credentials peers are checked against", name, qa.ServerSection)
	}
	learner, ok := sections[qa.LearnerSection]
	if !ok {
		return fmt.Errorf("quorum SASL: %s has no section %s (quorum.auth.learner.saslLoginContext): the credentials this member authenticates with", name, qa.LearnerSection)
	}
	for _, e := range server {
		switch e.Module {
		case digestLoginModule:
			qa.ServerUsers = map[string]string{}
			for k, v := range e.Options {
				if user, ok := strings.CutPrefix(k, "user_"); ok && user != "" {
					qa.ServerUsers[user] = v
				}
			}
		case kerberosLoginModule:
			qa.ServerKerberos = &e
		}
	}
	for _, e := range learner {
		switch e.Module {
		case digestLoginModule:
			qa.LearnerUser, qa.LearnerPassword = e.Options["username"], e.Options["password"]
		case kerberosLoginModule:
			qa.LearnerKerberos = &e
		}
	}
	switch {
	case len(qa.ServerUsers) == 0 && qa.ServerKerberos == nil:
		return fmt.Errorf("quorum SASL: section %s of %s has neither %s users (user_NAME=\"password\") nor a %s entry", qa.ServerSection, name, digestLoginModule, kerberosLoginModule)
	case qa.LearnerUser == "" && qa.LearnerKerberos == nil:
		return fmt.Errorf("quorum SASL: section %s of %s has neither a %s entry with username and password nor a %s entry", qa.LearnerSection, name, digestLoginModule, kerberosLoginModule)
	}
	return nil
}
