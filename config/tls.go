package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/zkgo/zkgo/internal/boundedfile"
)

// TLSStore is a key store or trust store (ssl.keyStore.*, ssl.trustStore.*).
type TLSStore struct {
	Location string
	Password string // the password, or the first line of the passwordPath file
	Type     string // "PEM", "PKCS12", "JKS"; empty: from the file name
}

// TLS holds ZooKeeper's ssl.* settings of the client port.
type TLS struct {
	KeyStore, TrustStore TLSStore
	ClientAuth           string   // ssl.clientAuth: need (default), want, none
	Protocol             string   // ssl.protocol
	EnabledProtocols     []string // ssl.enabledProtocols
	CipherSuites         []string // ssl.ciphersuites
	HostnameVerification bool     // ssl.hostnameVerification (clients), default true
	// HandshakeDetectionTimeout is ssl.handshakeDetectionTimeoutMillis:
	// how long a unified port waits for a client's first byte.
	HandshakeDetectionTimeout time.Duration
}

// tlsProperty parses the TLS keys: the client port's (ssl.*,
// secureClientPort, client.portUnification) and the members' (sslQuorum,
// ssl.quorum.*, portUnification). It reports whether the key was one of
// these.
func (p *parser) tlsProperty(pr property) (bool, error) {
	c, k, v := p.c, pr.key, pr.value
	t := &c.SSL
	store := func(s *TLSStore, field string) error {
		switch field {
		case "location":
			s.Location = v
		case "password":
			s.Password = v
		case "passwordPath":
			b, err := boundedfile.ReadFile(v, "password file", maxSmallFileSize)
			if err != nil {
				return p.errorf(pr, "reading the password file: %v", err)
			}
			s.Password = strings.TrimRight(strings.SplitN(string(b), "\n", 2)[0], "\r")
		case "type":
			switch strings.ToUpper(v) {
			case "PEM", "PKCS12", "JKS", "":
				s.Type = strings.ToUpper(v)
			default:
				return p.errorf(pr, "store type %q is not supported (PEM, PKCS12, JKS)", v)
			}
		default:
			p.warn(pr, "unknown TLS store setting; ignored")
		}
		return nil
	}
	switch {
	case k == "secureClientPort":
		n, err := p.port16(pr)
		c.SecureClientPort = n
		return true, err
	case k == "secureClientPortAddress":
		c.SecureClientPortAddress = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
		return true, nil
	case k == "client.portUnification":
		c.ClientPortUnification = p.javaBool(pr)
		return true, nil
	case k == "sslQuorum":
		c.SSLQuorum = p.javaBool(pr)
		return true, nil
	case k == "portUnification":
		// The rolling switch between plaintext and TLS between members:
		// the peer port takes both.
		c.PortUnification = p.javaBool(pr)
		return true, nil
	case strings.HasPrefix(k, "ssl.quorum.keyStore."):
		return true, store(&c.SSLQuorumStores.KeyStore, strings.TrimPrefix(k, "ssl.quorum.keyStore."))
	case strings.HasPrefix(k, "ssl.quorum.trustStore."):
		return true, store(&c.SSLQuorumStores.TrustStore, strings.TrimPrefix(k, "ssl.quorum.trustStore."))
	case k == "ssl.quorum.hostnameVerification":
		c.SSLQuorumStores.HostnameVerification = p.javaBool(pr)
	case k == "ssl.quorum.protocol":
		c.SSLQuorumStores.Protocol = v
	case k == "ssl.quorum.enabledProtocols":
		c.SSLQuorumStores.EnabledProtocols = splitList(v)
	case k == "ssl.quorum.ciphersuites":
		c.SSLQuorumStores.CipherSuites = splitList(v)
	case strings.HasPrefix(k, "ssl.quorum."):
		p.warn(pr, "TLS setting between members that zkgo does not use; ignored")
	case k == "client.secure":
		// A client property (zookeeper.client.secure); meaningless here.
		p.warn(pr, "client setting; ignored by the server")
		return true, nil
	case strings.HasPrefix(k, "ssl.keyStore."):
		return true, store(&t.KeyStore, strings.TrimPrefix(k, "ssl.keyStore."))
	case strings.HasPrefix(k, "ssl.trustStore."):
		return true, store(&t.TrustStore, strings.TrimPrefix(k, "ssl.trustStore."))
	case k == "ssl.clientAuth":
		switch strings.ToLower(v) {
		case "need", "want", "none":
			t.ClientAuth = strings.ToLower(v)
		default:
			return true, p.errorf(pr, "ssl.clientAuth must be need, want or none, not %q", v)
		}
	case k == "ssl.protocol":
		t.Protocol = v
	case k == "ssl.enabledProtocols":
		t.EnabledProtocols = splitList(v)
	case k == "ssl.ciphersuites":
		t.CipherSuites = splitList(v)
	case k == "ssl.hostnameVerification":
		t.HostnameVerification = p.javaBool(pr)
	case k == "ssl.handshakeDetectionTimeoutMillis":
		n, err := p.int32(pr)
		t.HandshakeDetectionTimeout = time.Duration(n) * time.Millisecond
		return true, err
	case k == "ssl.crl" || k == "ssl.ocsp":
		if p.javaBool(pr) {
			p.warn(pr, "certificate revocation checks are not enforced by zkgo")
		}
	case k == "ssl.authProvider":
		if v != "x509" {
			return true, p.errorf(pr, "ssl.authProvider %q: zkgo has the x509 provider only", v)
		}
	case k == "serverCnxnFactory":
		// Netty (what ZooKeeper needs for TLS) or NIO: zkgo has one
		// connection layer, which does both.
	case strings.HasPrefix(k, "ssl."):
		p.warn(pr, "TLS setting of the Java server; ignored")
	default:
		return false, nil
	}
	return true, nil
}

// validateQuorumTLS checks sslQuorum's and portUnification's settings
// (from finish): both need the ssl.quorum.* stores, the first to dial
// over TLS, the second to accept TLS.
func (p *parser) validateQuorumTLS() error {
	c := p.c
	for _, k := range []struct {
		key string
		on  bool
	}{{"sslQuorum", c.SSLQuorum}, {"portUnification", c.PortUnification}} {
		if k.on && (c.SSLQuorumStores.KeyStore.Location == "" || c.SSLQuorumStores.TrustStore.Location == "") {
			return fmt.Errorf("%s: %s=true needs ssl.quorum.keyStore.location and ssl.quorum.trustStore.location", p.name, k.key)
		}
	}
	// The AdminServer's HTTPS uses the quorum's stores, as ZooKeeper's
	// JettyAdminServer does. ZooKeeper also needs the trust store (and,
	// without either, runs without an AdminServer); zkgo needs the key
	// store and, without a trust store, asks HTTPS clients for no
	// certificate.
	if a := c.Admin; a.Enabled && a.HTTPS() && c.SSLQuorumStores.KeyStore.Location == "" {
		key := "admin.forceHttps"
		if !a.ForceHTTPS {
			key = "admin.portUnification"
		}
		return fmt.Errorf("%s: %s=true needs ssl.quorum.keyStore.location (the AdminServer's HTTPS uses the ssl.quorum.* stores, as ZooKeeper's does)", p.name, key)
	}
	if a := c.Admin; a.Enabled && a.NeedClientAuth && a.HTTPS() && c.SSLQuorumStores.TrustStore.Location == "" {
		return fmt.Errorf("%s: admin.needClientAuth=true needs ssl.quorum.trustStore.location to verify the clients' certificates", p.name)
	}
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// validateTLS checks the client port's TLS settings (from finish).
func (p *parser) validateTLS() error {
	c := p.c
	if (c.SecureClientPort != 0 || c.ClientPortUnification) && c.SSL.KeyStore.Location == "" {
		return fmt.Errorf("%s: TLS (secureClientPort or client.portUnification) needs ssl.keyStore.location", p.name)
	}
	if c.SecureClientPort != 0 && c.SecureClientPort == c.ClientPort {
		return fmt.Errorf("%s: secureClientPort and clientPort are both %d (use client.portUnification for TLS and plaintext on one port)", p.name, c.ClientPort)
	}
	return nil
}
