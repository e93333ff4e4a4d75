package zk

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"

	zkconfig "github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/internal/krb"
)

// Kerberos configures SASL GSSAPI (Kerberos) authentication, what
// ZooKeeper's Java client does with a JAAS "Client" section using
// com.sun.security.auth.module.Krb5LoginModule. The credentials come from
// the JAAS file (JAASFile, Section), or from Keytab and Principal
// directly; krb5.conf is Krb5Conf, else $KRB5_CONFIG, else /etc/krb5.conf.
type Kerberos struct {
	// JAASFile is the JAAS login configuration file (Java's
	// -Djava.security.auth.login.config) and Section its section,
	// default "Client" (zookeeper.sasl.clientconfig). Its
	// Krb5LoginModule entry gives the keytab (useKeyTab, keyTab,
	// principal) or the ticket cache (useTicketCache, ticketCache).
	JAASFile, Section string
	// Keytab and Principal are the credentials without a JAAS file.
	Keytab, Principal string
	// Krb5Conf is the krb5.conf (-Djava.security.krb5.conf).
	Krb5Conf string
	// ServiceName is the first component of the server's principal
	// (zookeeper.sasl.client.username), default "zookeeper".
	ServiceName string
	// ServerPrincipal, "service/host", replaces ServiceName and the
	// server's host name whatever server the client connects to.
	ServerPrincipal string
	// NoCanonicalize takes the server's host name as it is in the
	// connect string (zookeeper.sasl.client.canonicalize.hostname=false).
	// By default, as ZooKeeper's client does, the name is that of the
	// server's address looked up in reverse (127.0.0.1 gives
	// "localhost"), or the name given when the lookup finds none.
	NoCanonicalize bool
}

// WithKerberos authenticates with SASL GSSAPI: the server's principal is
// ServiceName/<server host>, and the server treats the connection as
// sasl:<the client's principal> (shortened by its
// kerberos.removeHostFromPrincipal and removeRealmFromPrincipal) in ACLs.
// The exchange runs as WithSASL's does, on every connection; the
// credentials are loaded, and the client logs in to the KDC, at the first.
// A failure of either, or the server's refusal, fails Connect (or ends the
// Conn after a reconnection) with an error wrapping ErrAuthFailed.
// WithKerberos replaces WithSASL.
func WithKerberos(k Kerberos) Option {
	return func(c *config) {
		c.sasl = &saslCreds{kerberos: &kerberosState{cfg: k}}
	}
}

// kerberosState holds the credentials, loaded once per Conn.
type kerberosState struct {
	cfg   Kerberos
	mu    sync.Mutex // guards creds
	creds *krb.Credentials
}

func (k *kerberosState) credentials() (*krb.Credentials, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.creds != nil {
		return k.creds, nil
	}
	conf, err := krb.LoadKrb5Conf(krb.Krb5ConfPath(k.cfg.Krb5Conf))
	if err != nil {
		return nil, err
	}
	var creds *krb.Credentials
	switch {
	case k.cfg.JAASFile != "":
		section := k.cfg.Section
		if section == "" {
			section = "Client"
		}
		creds, err = loadJAAS(k.cfg.JAASFile, section, conf)
	case k.cfg.Keytab != "":
		creds, err = krb.NewKeytabCredentials(k.cfg.Principal, k.cfg.Keytab, conf)
	default:
		creds, err = krb.NewCCacheCredentials(krb.DefaultCCachePath(), conf)
	}
	if err != nil {
		return nil, err
	}
	k.creds = creds
	return creds, nil
}

// loadJAAS returns the credentials of the Krb5LoginModule entry of
// section in the JAAS file at path (relative paths in it are relative to
// the working directory, as in Java).
func loadJAAS(path, section string, conf *krb.Krb5Conf) (*krb.Credentials, error) {
	options, err := zkconfig.LoadKrb5Options(path, section)
	if err != nil {
		return nil, err
	}
	creds, _, err := krb.FromOptions(options, conf, "")
	if err != nil {
		return nil, fmt.Errorf("%s: section %s: %w", path, section, err)
	}
	return creds, nil
}

func (k *kerberosState) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.creds != nil {
		k.creds.Close()
	}
}

// initiator starts an exchange with the server at addr (host:port).
func (k *kerberosState) initiator(ctx context.Context, addr string) (*krb.Initiator, error) {
	creds, err := k.credentials()
	if err != nil {
		return nil, err
	}
	if p := k.cfg.ServerPrincipal; p != "" {
		service, host, err := krb.SplitServicePrincipal(p)
		if err != nil {
			return nil, err
		}
		return krb.NewInitiator(creds, service, host)
	}
	service := k.cfg.ServiceName
	if service == "" {
		service = "zookeeper"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if !k.cfg.NoCanonicalize {
		host = canonicalHost(ctx, host)
	}
	return krb.NewInitiator(creds, service, host)
}

// canonicalHost is Java's InetAddress.getCanonicalHostName of the host's
// (first) address, the host itself when the reverse lookup finds nothing.
func canonicalHost(ctx context.Context, host string) string {
	ip := host
	if net.ParseIP(host) == nil {
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil || len(addrs) == 0 {
			return host
		}
		ip = addrs[0]
	}
	names, err := net.DefaultResolver.LookupAddr(ctx, ip)
	if err != nil || len(names) == 0 {
		return host
	}
	name := strings.TrimSuffix(names[0], ".")
	if name == "" {
		return host
	}
	return name
}
