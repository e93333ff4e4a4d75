package main

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/tools/bench"
)

// TestRenderPlot: one line and three marks per server and workload, the
// medians over the repeats at the right places on the log axis, cluster
// runs left out, and well-formed XML.
func TestRenderPlot(t *testing.T) {
	res := func(p50, p99, p999 float64) *bench.Result {
		return &bench.Result{Latency: bench.Latency{P50: p50, P99: p99, P999: p999}}
	}
	runs := []run{
		{Spec: "get-hot", Server: "zookeeper", Result: res(0.1, 1, 10)},
		{Spec: "get-hot", Server: "zookeeper", Result: res(0.3, 3, 30)},
		{Spec: "get-hot", Server: "zookeeper", Result: res(0.2, 2, 20)},
		{Spec: "get-hot", Server: "zkgo", Result: res(0.01, 100, 5000)}, // p99.9 beyond the axis: clamped
		{Spec: "set", Server: "zkgo", Result: res(1, 1, 1), Members: []memberDelta{{}}},
	}
	svg := string(renderPlot(runs, []string{"get-hot", "set", "none"}, map[string]string{"get-hot": "get <hot>"}, "t"))
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if n := strings.Count(svg, "<circle"); n != 2 {
		t.Fatalf("%d p50 marks, want 2 (the cluster run and unknown workloads left out)", n)
	}
	if !strings.Contains(svg, "get &lt;hot&gt;") {
		t.Fatal("label not escaped")
	}
	if !strings.Contains(svg, "zookeeper get-hot p50 0.2 ms") || !strings.Contains(svg, "zookeeper get-hot p99.9 20 ms") {
		t.Fatal("medians of the repeats not plotted")
	}
	if x := plotX(5000); x != plotLeft+plotWidth {
		t.Fatalf("plotX(5000) = %v, want the right edge", x)
	}
	if x := plotX(1); x != plotLeft+plotWidth*2/5 {
		t.Fatalf("plotX(1) = %v, want 2/5 of the axis", x)
	}
}
