package server

import (
	"context"
	"slices"
	"sync"

	"go.etcd.io/raft/v3/raftpb"

	dto "github.com/prometheus/client_model/go"

	"github.com/zkgo/zkgo/console/status"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/metrics"
)

// MetricSpec is a row of the metrics table, for the external tests.
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
	types := map[string]dto.MetricType{"gauge": dto.MetricType_GAUGE, "counter": dto.MetricType_COUNTER,
		"summary": dto.MetricType_SUMMARY, "histogram": dto.MetricType_HISTOGRAM}
	var out []MetricSpec
	for _, d := range metrics.Table() {
		out = append(out, MetricSpec{Name: d.Name, Type: types[d.Type], Labels: d.Labels,
			Exported: d.Exported, EnsembleOnly: d.EnsembleOnly, LeaderOnly: d.LeaderOnly})
	}
	return out
}

// ConsoleMember is what s tells its web console about itself and the
// ensemble (consoleStatus.Member).
func ConsoleMember(ctx context.Context, s *Server) (status.Member, error) {
	return consoleStatus{s}.Member(ctx)
}

// ConfChangeBeforeReconfig makes s propose a configuration change that
// changes nothing (a voter added again) just before the change of the
// next reconfig it carries out, once: raft's leader then holds an
// unapplied configuration change when the reconfig's arrives, as when
// its own promotion of a learner or swap of a rejoining member's
// identity is under way.
func ConfChangeBeforeReconfig(s *Server) {
	var once sync.Once
	s.raft.SetBeforeConfChange(func(n *raftnode.Node) { once.Do(func() { proposeNoChange(n) }) })
}

// proposeNoChange proposes to n a configuration change that changes
// nothing: a voter added again.
func proposeNoChange(n *raftnode.Node) {
	voters := n.Status().Voters
	cc := raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddNode, NodeID: slices.Min(voters)}}}
	if err := n.ProposeConfChange(context.Background(), cc); err != nil {
		panic(err)
	}
}
