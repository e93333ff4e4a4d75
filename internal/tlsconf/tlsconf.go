// Package tlsconf turns ZooKeeper's TLS settings (ssl.keyStore.*,
// ssl.trustStore.*, ssl.clientAuth, ssl.protocol, ssl.enabledProtocols,
// ssl.ciphersuites, ssl.hostnameVerification, and the client's
// zookeeper.ssl.* properties) into a crypto/tls configuration.
//
// Key and trust stores are read in the formats ZooKeeper 3.8 reads: PEM,
// PKCS12 (software.sslmate.com/src/go-pkcs12) and JKS
// (github.com/pavlo-v-chernykh/keystore-go), each told from the file's
// content, never its name: since Java 9 keytool writes PKCS12 also into
// a file named server.jks. As ZooKeeper's
// FileChangeWatcher does, a server re-reads them when their files change:
// new handshakes use the new certificates, live connections stay.
package tlsconf

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Store names a key store or trust store file.
type Store struct {
	Location string
	Password string
	// Type is "PEM", "PKCS12" or "JKS" (case-insensitive), as
	// ssl.keyStore.type sets it. Empty, the format is told from the
	// file's content (JKS's magic number, PKCS12's DER structure, PEM's
	// "-----BEGIN " lines), whatever the file's name. Set, it must agree
	// with the content, except that JKS and PKCS12 each read the other,
	// as the JDK's keystore.type.compat does: a store typed JKS that
	// keytool wrote as PKCS12 is read.
	Type string
}

// Options are the TLS settings of one side (client port, quorum, or a
// client).
type Options struct {
	KeyStore   Store // this side's certificate chain and private key
	TrustStore Store // the certificates that may sign the peer's; empty: the system's
	// ClientAuth (servers only) is ssl.clientAuth: "need" (the default,
	// as in ZooKeeper), "want" or "none".
	ClientAuth string
	// Protocol is ssl.protocol ("TLSv1.2", "TLSv1.3", "TLS"); it is the
	// lowest version accepted unless EnabledProtocols is set.
	Protocol string
	// EnabledProtocols is ssl.enabledProtocols ("TLSv1.2,TLSv1.3").
	EnabledProtocols []string
	// CipherSuites is ssl.ciphersuites, by their standard names
	// (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); TLS 1.3's are not
	// configurable in Go and are always enabled.
	CipherSuites []string
	// HostnameVerification (clients; ssl.hostnameVerification, default
	// true in ZooKeeper) checks the server certificate's names against
	// the host dialled.
	HostnameVerification bool
	// ReloadInterval bounds how often a server looks at its store files
	// for changes. Default 1s.
	ReloadInterval time.Duration
	Logger         *slog.Logger
}

// ErrNoKeyStore is returned by ServerConfig without a key store.
var ErrNoKeyStore = errors.New("tlsconf: a TLS server needs ssl.keyStore.location")

// ServerConfig returns the configuration of a TLS server. Its certificate
// and trust store are re-read (at most once per ReloadInterval, at a
// handshake) when their files change; a file that fails to load keeps
// the previous material and is logged.
func ServerConfig(o Options) (*tls.Config, error) {
	if o.KeyStore.Location == "" {
		return nil, ErrNoKeyStore
	}
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	base, err := baseConfig(o)
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(o.ClientAuth) {
	case "", "need":
		base.ClientAuth = tls.RequireAndVerifyClientCert
	case "want":
		base.ClientAuth = tls.VerifyClientCertIfGiven
	case "none":
		base.ClientAuth = tls.NoClientCert
	default:
		return nil, fmt.Errorf("tlsconf: ssl.clientAuth %q: want need, want or none", o.ClientAuth)
	}
	r := &reloader{o: o, base: base}
	if err := r.load(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:         base.MinVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.current(), nil },
	}, nil
}

// ReloadingClientConfig returns a function that gives the configuration of
// a TLS client for each new connection (a member dialling its peers): like
// ServerConfig, its certificate and trust store are re-read, at most once
// per ReloadInterval, when their files change; a file that fails to load
// keeps the previous material and is logged.
func ReloadingClientConfig(o Options, serverName string) (func() *tls.Config, error) {
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if _, err := baseConfig(o); err != nil {
		return nil, err
	}
	r := &reloader{o: o, client: true, serverName: serverName}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r.current, nil
}

// ClientConfig returns the configuration of a TLS client. serverName, if
// not empty, is the name checked against the server's certificate when
// HostnameVerification is on (a Go client checks the dialled host
// otherwise).
func ClientConfig(o Options, serverName string) (*tls.Config, error) {
	return clientConfig(o, serverName)
}

// clientConfig reads the stores and builds a client configuration.
func clientConfig(o Options, serverName string) (*tls.Config, error) {
	cfg, err := baseConfig(o)
	if err != nil {
		return nil, err
	}
	if o.KeyStore.Location != "" {
		cert, err := LoadKeyStore(o.KeyStore)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if o.TrustStore.Location != "" {
		pool, err := LoadTrustStore(o.TrustStore)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	cfg.ServerName = serverName
	if !o.HostnameVerification {
		// Verify the chain but not the name, as ZooKeeper's client does
		// with ssl.hostnameVerification=false.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = verifyChain(cfg.RootCAs)
	}
	return cfg, nil
}

// verifyChain verifies the server's chain against roots (nil: the
// system's) without checking its names.
func verifyChain(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tlsconf: the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}

// baseConfig applies the protocol and cipher settings.
func baseConfig(o Options) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(o.EnabledProtocols) > 0 {
		lo, hi := uint16(0), uint16(0)
		for _, p := range o.EnabledProtocols {
			v, err := protocolVersion(p)
			if err != nil {
				return nil, err
			}
			if lo == 0 || v < lo {
				lo = v
			}
			hi = max(hi, v)
		}
		cfg.MinVersion, cfg.MaxVersion = lo, hi
	} else if o.Protocol != "" {
		v, err := protocolVersion(o.Protocol)
		if err != nil {
			return nil, err
		}
		cfg.MinVersion = v
	}
	if len(o.CipherSuites) > 0 {
		byName := map[string]uint16{}
		for _, cs := range tls.CipherSuites() {
			byName[cs.Name] = cs.ID
		}
		for _, cs := range tls.InsecureCipherSuites() {
			byName[cs.Name] = cs.ID
		}
		for _, n := range o.CipherSuites {
			n = strings.TrimSpace(n)
			if n == "" {
				continue
			}
			id, ok := byName[n]
			if !ok {
				if strings.HasPrefix(n, "TLS_AES_") || strings.HasPrefix(n, "TLS_CHACHA20_") {
					continue // TLS 1.3 suites: always on in Go
				}
				return nil, fmt.Errorf("tlsconf: unknown cipher suite %q in ssl.ciphersuites", n)
			}
			cfg.CipherSuites = append(cfg.CipherSuites, id)
		}
	}
	return cfg, nil
}

func protocolVersion(p string) (uint16, error) {
	switch strings.TrimSpace(p) {
	case "TLSv1.3":
		return tls.VersionTLS13, nil
	case "TLSv1.2", "TLS":
		return tls.VersionTLS12, nil
	case "TLSv1.1", "TLSv1", "TLSv1.0", "SSLv3":
		return 0, fmt.Errorf("tlsconf: protocol %s is not supported (TLSv1.2 and TLSv1.3 are)", p)
	}
	return 0, fmt.Errorf("tlsconf: unknown protocol %q (TLSv1.2, TLSv1.3)", p)
}

// reloader holds a server's (or a reloading client's) current TLS
// material and re-reads it when the store files change.
type reloader struct {
	o          Options
	base       *tls.Config // servers
	client     bool
	serverName string // clients

	mu      sync.Mutex // guards the fields below
	cfg     *tls.Config
	stamp   string // the store files' contents' hashes when loaded
	checked time.Time
}

// fileStamp describes the store files' versions.
func (r *reloader) fileStamp() string {
	var b strings.Builder
	for _, p := range []string{r.o.KeyStore.Location, r.o.TrustStore.Location} {
		if p == "" {
			continue
		}
		// The contents, not the modification time: a file replaced
		// within the file system's timestamp granularity by one of the
		// same size must still count as changed.
		if data, err := readStore(Store{Location: p}); err == nil {
			fmt.Fprintf(&b, "%s:%x;", p, sha256.Sum256(data))
		} else {
			fmt.Fprintf(&b, "%s:unreadable;", p)
		}
	}
	return b.String()
}

func (r *reloader) load() error {
	stamp := r.fileStamp()
	if r.client {
		cfg, err := clientConfig(r.o, r.serverName)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.cfg, r.stamp, r.checked = cfg, stamp, time.Now()
		r.mu.Unlock()
		return nil
	}
	cert, err := LoadKeyStore(r.o.KeyStore)
	if err != nil {
		return err
	}
	cfg := r.base.Clone()
	cfg.Certificates = []tls.Certificate{cert}
	if r.o.TrustStore.Location != "" {
		pool, err := LoadTrustStore(r.o.TrustStore)
		if err != nil {
			return err
		}
		cfg.ClientCAs = pool
	}
	r.mu.Lock()
	r.cfg, r.stamp, r.checked = cfg, stamp, time.Now()
	r.mu.Unlock()
	return nil
}

// current returns the configuration for a new handshake, reloading the
// stores first if their files changed.
func (r *reloader) current() *tls.Config {
	r.mu.Lock()
	cfg := r.cfg
	due := time.Since(r.checked) >= r.o.ReloadInterval
	if due {
		r.checked = time.Now()
	}
	stamp := r.stamp
	r.mu.Unlock()
	if !due || r.fileStamp() == stamp {
		return cfg
	}
	if err := r.load(); err != nil {
		r.o.Logger.Warn("TLS key or trust store changed but cannot be loaded; keeping the previous ones", "err", err)
		r.mu.Lock()
		r.stamp = r.fileStamp() // do not retry until it changes again
		r.mu.Unlock()
		return cfg
	}
	r.o.Logger.Info("TLS key and trust stores reloaded", "keyStore", r.o.KeyStore.Location, "trustStore", r.o.TrustStore.Location)
	r.mu.Lock()
	cfg = r.cfg
	r.mu.Unlock()
	return cfg
}
