package server

import (
	"context"

	dto "github.com/prometheus/client_model/go"

	"github.com/zkgo/zkgo/console/status"
)

// MetricSpec is a row of metricTable, for the external tests.
type MetricSpec struct {
	Name     string
	Type     dto.MetricType
	Labels   []string
	Exported bool
	// EnsembleOnly and LeaderOnly: where an exported metric appears.
	EnsembleOnly, LeaderOnly bool
}

// MetricSpecs returns the metrics table.
func MetricSpecs() []MetricSpec {
	var out []MetricSpec
	for _, d := range metricTable {
		out = append(out, MetricSpec{Name: d.name, Type: d.kind.promType(), Labels: d.labels,
			Exported: d.scope != notExported, EnsembleOnly: d.scope == ensemble, LeaderOnly: d.scope == leading})
	}
	return out
}

func (k metricKind) promType() dto.MetricType {
	switch k {
	case kindGauge:
		return dto.MetricType_GAUGE
	case kindCounter:
		return dto.MetricType_COUNTER
	case kindSummary:
		return dto.MetricType_SUMMARY
	case kindHistogram:
		return dto.MetricType_HISTOGRAM
	}
	return dto.MetricType_UNTYPED
}

// ConsoleMember is what s tells its web console about itself and the
// ensemble (consoleStatus.Member).
func ConsoleMember(ctx context.Context, s *Server) (status.Member, error) {
	return consoleStatus{s}.Member(ctx)
}
