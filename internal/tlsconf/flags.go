package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/internal/boundedfile"
)

// ClientFlags are the TLS flags of zkgo's client commands (cli, lock,
// elect, bench): PEM files, or a ZooKeeper client configuration file as
// zkCli.sh -client-configuration reads it.
type ClientFlags struct {
	ca, cert, key, props *string
	insecureName         *bool
}

// AddClientFlags registers -tls-ca, -tls-cert, -tls-key,
// -tls-skip-hostname and -client-configuration on fs.
func AddClientFlags(fs *flag.FlagSet) *ClientFlags {
	return &ClientFlags{
		ca:           fs.String("tls-ca", "", "connect over TLS, trusting the CA certificates of this PEM `file`"),
		cert:         fs.String("tls-cert", "", "TLS client certificate (PEM `file`; with -tls-key)"),
		key:          fs.String("tls-key", "", "TLS client private key (PEM `file`)"),
		insecureName: fs.Bool("tls-skip-hostname", false, "TLS: do not check the server certificate's names against the host (ssl.hostnameVerification=false); the chain is still verified"),
		props:        fs.String("client-configuration", "", "ZooKeeper client properties `file` (zookeeper.client.secure, zookeeper.ssl.*)"),
	}
}

// Config returns the TLS configuration the flags ask for, nil for
// plaintext, and warnings about the client configuration file.
func (f *ClientFlags) Config() (*tls.Config, []string, error) {
	if *f.props != "" {
		cc, warnings, err := config.LoadClientConfig(*f.props)
		if err != nil {
			return nil, warnings, err
		}
		if !cc.Secure {
			return nil, warnings, nil
		}
		t := cc.SSL
		cfg, err := ClientConfig(Options{
			KeyStore: Store(t.KeyStore), TrustStore: Store(t.TrustStore),
			Protocol: t.Protocol, EnabledProtocols: t.EnabledProtocols, CipherSuites: t.CipherSuites,
			HostnameVerification: t.HostnameVerification && !*f.insecureName,
		}, "")
		return cfg, warnings, err
	}
	if *f.ca == "" && *f.cert == "" && *f.key == "" {
		return nil, nil, nil
	}
	if (*f.cert == "") != (*f.key == "") {
		return nil, nil, errors.New("-tls-cert and -tls-key go together")
	}
	cfg, err := ClientConfig(Options{HostnameVerification: !*f.insecureName}, "")
	if err != nil {
		return nil, nil, err
	}
	if *f.ca != "" {
		b, err := boundedfile.ReadFile(*f.ca, "CA certificate file", maxStoreBytes)
		if err != nil {
			return nil, nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, nil, fmt.Errorf("%s: no PEM certificates", *f.ca)
		}
		if *f.insecureName {
			// ClientConfig captured the roots at construction.
			cfg, err = ClientConfig(Options{}, "")
			if err != nil {
				return nil, nil, err
			}
			cfg.VerifyConnection = verifyChain(pool)
		} else {
			cfg.RootCAs = pool
		}
	}
	if *f.cert != "" {
		certPEM, err := boundedfile.ReadFile(*f.cert, "certificate file", maxStoreBytes)
		if err != nil {
			return nil, nil, err
		}
		keyPEM, err := boundedfile.ReadFile(*f.key, "key file", maxStoreBytes)
		if err != nil {
			return nil, nil, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil, nil
}
