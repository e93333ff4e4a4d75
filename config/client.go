package config

import (
	"strings"

	"github.com/zkgo/zkgo/internal/boundedfile"
)

// ClientConfig is what a ZooKeeper client reads from its configuration
// file (zkCli.sh -client-configuration, ZKClientConfig): whether to use TLS
// (zookeeper.client.secure) and the zookeeper.ssl.* settings.
type ClientConfig struct {
	Secure bool
	SSL    TLS
}

// maxClientConfigBytes bounds a client configuration file.
const maxClientConfigBytes = MaxConfigFileSize

// LoadClientConfig reads a client configuration file in Java properties
// syntax. Keys may be written with or without the "zookeeper." prefix.
// Keys zkgo's clients do not use produce warnings.
func LoadClientConfig(path string) (*ClientConfig, []string, error) {
	data, err := boundedfile.ReadFile(path, "client configuration file", maxClientConfigBytes)
	if err != nil {
		return nil, nil, err
	}
	props, err := readProperties(string(data), path)
	if err != nil {
		return nil, nil, err
	}
	cc := &ClientConfig{SSL: TLS{HostnameVerification: true}}
	// The server's parser knows the ssl.* keys; it fills a scratch Config.
	p := &parser{c: base(), name: path}
	p.c.SSL = cc.SSL
	for _, pr := range props {
		k := strings.TrimPrefix(pr.key, "zookeeper.")
		switch {
		case k == "client.secure":
			cc.Secure = p.javaBool(pr)
		case strings.HasPrefix(k, "ssl.") && !strings.HasPrefix(k, "ssl.quorum."):
			pr.key = k
			if _, err := p.tlsProperty(pr); err != nil {
				return nil, p.warnings, err
			}
		default:
			p.warn(pr, "client setting zkgo does not use; ignored")
		}
	}
	cc.SSL = p.c.SSL
	return cc, p.warnings, nil
}
