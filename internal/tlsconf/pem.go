package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"github.com/zkgo/zkgo/internal/boundedfile"
)

// PEMClientConfig returns the client configuration of PEM files, as zkgo's
// client commands take them (-tls-ca, -tls-cert, -tls-key,
// -tls-skip-hostname): the CA certificates of caFile as the roots ("" for
// the system's), the certificate and key of certFile and keyFile (both or
// neither) for the server to see, and the server certificate's names
// checked against the host unless skipHostname (the chain is verified
// either way). Each file is read with a bound.
func PEMClientConfig(caFile, certFile, keyFile string, skipHostname bool) (*tls.Config, error) {
	cfg, err := ClientConfig(Options{HostnameVerification: !skipHostname}, "")
	if err != nil {
		return nil, err
	}
	if caFile != "" {
		b, err := boundedfile.ReadFile(caFile, "CA certificate file", maxStoreBytes)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s: no PEM certificates", caFile)
		}
		if skipHostname {
			// ClientConfig captured the roots at construction.
			cfg, err = ClientConfig(Options{}, "")
			if err != nil {
				return nil, err
			}
			cfg.VerifyConnection = verifyChain(pool)
		} else {
			cfg.RootCAs = pool
		}
	}
	if certFile != "" {
		certPEM, err := boundedfile.ReadFile(certFile, "certificate file", maxStoreBytes)
		if err != nil {
			return nil, err
		}
		keyPEM, err := boundedfile.ReadFile(keyFile, "key file", maxStoreBytes)
		if err != nil {
			return nil, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
