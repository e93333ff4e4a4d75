package metrics

import (
	"log/slog"
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
	// New looks up every metric it creates (metricByName panics on a
	// name missing or marked not exported).
	New(Sources{Log: slog.New(slog.DiscardHandler), Gauges: func() Gauges { return Gauges{} },
		Counters:      map[string]func() int64{"looking_count": func() int64 { return 0 }},
		Rejected:      map[string]func() int64{"throttle": func() int64 { return 0 }},
		SnapshotBytes: func() int64 { return 0 }, Stages: []string{"a", "", "b"}})
}

// A counter's name that is not in the table, or not a counter, is a bug
// New reports at once.
func TestNewRefusesUnknownCounter(t *testing.T) {
	for _, name := range []string{"no_such_metric", "avg_latency"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: accepted as a counter", name)
				}
			}()
			New(Sources{Log: slog.New(slog.DiscardHandler), Gauges: func() Gauges { return Gauges{} },
				Counters: map[string]func() int64{name: func() int64 { return 0 }}, SnapshotBytes: func() int64 { return 0 }})
		}()
	}
}
