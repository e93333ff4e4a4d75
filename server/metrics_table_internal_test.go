package server

import (
	"strings"
	"testing"
)

// Every row of the metrics table says what it is and how zkgo computes it,
// or why it does not; names are unique; the collectors are built from it.
func TestMetricTableRows(t *testing.T) {
	seen := map[string]bool{}
	var zk, zkExported int
	for _, d := range metricTable {
		if seen[d.name] {
			t.Errorf("%s: listed twice", d.name)
		}
		seen[d.name] = true
		if d.kind == 0 {
			t.Errorf("%s: no type", d.name)
		}
		if d.source == "" {
			t.Errorf("%s: no source", d.name)
		}
		own := strings.HasPrefix(d.name, "zkgo_")
		if !own {
			zk++
		}
		if d.scope == notExported {
			if own {
				t.Errorf("%s: zkgo's own metrics are all exported", d.name)
			}
			if !strings.HasPrefix(d.source, "not exported: ") || d.read != nil {
				t.Errorf("%s: not exported, but %q (read %v)", d.name, d.source, d.read != nil)
			}
			continue
		}
		if !own {
			zkExported++
		}
		if d.help == "" || strings.HasPrefix(d.source, "not exported") {
			t.Errorf("%s: exported without help or with %q", d.name, d.source)
		}
		if d.read != nil && d.kind != kindGauge {
			t.Errorf("%s: only gauges are read at scrape time", d.name)
		}
		if d.advanced && d.kind != kindSummary {
			t.Errorf("%s: quantiles on a %v", d.name, d.kind)
		}
	}
	t.Logf("ZooKeeper metrics: %d, exported %d; zkgo's own: %d", zk, zkExported, len(metricTable)-zk)
	// newMetrics looks up every metric it creates (metricByName panics on
	// a name missing or marked not exported).
	s, err := New(Options{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if s.met == nil {
		t.Fatal("no metrics with MetricsAddr set")
	}
}
