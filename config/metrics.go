package config

import (
	"net"
	"strconv"
	"strings"
)

// The metricsProvider.* keys: ZooKeeper hands every key with that prefix,
// the prefix removed, to the MetricsProvider class named by
// metricsProvider.className, and fails to start if that class cannot be
// loaded or refuses its configuration.

// Metrics provider classes zkgo knows.
const (
	// PrometheusProvider is the class whose settings zkgo honours: it
	// serves the metrics in Prometheus text format over HTTP.
	PrometheusProvider = "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"
	// defaultProvider and nullProvider export nothing over the network
	// (ZooKeeper's default shows its metrics in mntr only): zkgo accepts
	// them and serves no HTTP endpoint, as when no class is named.
	defaultProvider = "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider"
	nullProvider    = "org.apache.zookeeper.metrics.impl.NullMetricsProvider"
)

// Defaults of PrometheusMetricsProvider.
const (
	DefaultMetricsHTTPHost = "0.0.0.0"
	DefaultMetricsHTTPPort = 7000
)

// Metrics is the metrics provider configuration (metricsProvider.*).
type Metrics struct {
	// Enabled is set when metricsProvider.className names
	// PrometheusMetricsProvider: the server then serves /metrics on
	// HTTPHost:HTTPPort. Otherwise nothing listens.
	Enabled bool
	// HTTPHost (metricsProvider.httpHost) is the address to listen on,
	// default 0.0.0.0.
	HTTPHost string
	// HTTPPort (metricsProvider.httpPort) is the port, default 7000; 0
	// picks a free port.
	HTTPPort int
}

// Addr returns the metrics endpoint's listen address for net.Listen.
func (m Metrics) Addr() string {
	return net.JoinHostPort(m.HTTPHost, strconv.Itoa(m.HTTPPort))
}

// metricsProperty parses one metricsProvider.* key.
func (p *parser) metricsProperty(pr property) error {
	m := &p.c.Metrics
	switch strings.TrimPrefix(pr.key, "metricsProvider.") {
	case "className":
		switch pr.value {
		case PrometheusProvider:
			m.Enabled = true
		case defaultProvider, nullProvider:
			m.Enabled = false
		default:
			// ZooKeeper cannot load the class and does not start.
			return p.errorf(pr, "metrics provider %q is not available in zkgo (it has %s, or none)", pr.value, PrometheusProvider)
		}
	case "httpHost":
		if pr.value == "" {
			return p.errorf(pr, "empty host")
		}
		m.HTTPHost = strings.TrimSuffix(strings.TrimPrefix(pr.value, "["), "]")
	case "httpPort":
		n, err := p.port16(pr)
		if err != nil {
			return err
		}
		m.HTTPPort = n
	case "exportJvmInfo":
		p.javaBool(pr) // checked as ZooKeeper reads it
		p.warn(pr, "there is no JVM in zkgo; ignored (the Go runtime's go_* and process_* metrics are always exported)")
	case "numWorkerThreads", "maxQueueSize", "workerShutdownTimeoutMs":
		p.warn(pr, "tuning of the Java provider's summary workers; zkgo has none; ignored")
	default:
		p.warn(pr, "unknown metrics provider setting; ignored")
	}
	return nil
}
