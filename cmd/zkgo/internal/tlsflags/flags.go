// Package tlsflags holds the TLS flags of zkgo's client commands: PEM
// files (tlsconf.PEMClientConfig), or a ZooKeeper client configuration
// file (config.LoadClientConfig) as zkCli.sh -client-configuration reads
// it.
package tlsflags

import (
	"crypto/tls"
	"errors"
	"flag"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/internal/tlsconf"
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
		cfg, err := tlsconf.ClientConfig(tlsconf.Options{
			KeyStore: tlsconf.Store(t.KeyStore), TrustStore: tlsconf.Store(t.TrustStore),
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
	cfg, err := tlsconf.PEMClientConfig(*f.ca, *f.cert, *f.key, *f.insecureName)
	if err != nil {
		return nil, nil, err
	}
	return cfg, nil, nil
}
