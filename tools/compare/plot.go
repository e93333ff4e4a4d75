package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"sort"
)

// Latency plot: one row per standalone workload, one line per server from
// its median p50 to its median p99.9 (over the repeats), with marks at
// p50, p99 and p99.9, on a logarithmic axis in milliseconds. Hand-written
// SVG, so the benchmark needs no plotting library.

const (
	plotLeft   = 300.0 // room for the workload labels
	plotWidth  = 600.0
	plotRowH   = 30.0
	plotTop    = 60.0
	plotMinMs  = 0.01
	plotMaxMs  = 1000.0
	plotZKCol  = "#d95f02"
	plotZkgoCl = "#1b6ac9"
)

// plotX maps a latency in ms to the x coordinate (log scale, clamped).
func plotX(ms float64) float64 {
	ms = math.Min(math.Max(ms, plotMinMs), plotMaxMs)
	f := (math.Log10(ms) - math.Log10(plotMinMs)) / (math.Log10(plotMaxMs) - math.Log10(plotMinMs))
	return plotLeft + f*plotWidth
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// renderPlot returns the SVG for the standalone runs, rows in order.
func renderPlot(runs []run, order []string, labels map[string]string, title string) []byte {
	type pcts struct{ p50, p99, p999 float64 }
	med := func(id, srv string) (pcts, bool) {
		var a, b, c []float64
		for _, ru := range runs {
			if ru.Spec == id && ru.Server == srv && ru.Result != nil && ru.Members == nil {
				a = append(a, ru.Result.Latency.P50)
				b = append(b, ru.Result.Latency.P99)
				c = append(c, ru.Result.Latency.P999)
			}
		}
		return pcts{median(a), median(b), median(c)}, len(a) > 0
	}
	var rows []string
	for _, id := range order {
		_, okZK := med(id, "zookeeper")
		_, okGo := med(id, "zkgo")
		if okZK || okGo {
			rows = append(rows, id)
		}
	}
	height := plotTop + float64(len(rows))*plotRowH*2 + 60
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", plotLeft+plotWidth+40, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="10" y="40">line: p50 to p99.9 (median of the repeats); marks: ● p50, ■ p99, ▲ p99.9; log scale, ms</text>`+"\n")
	fmt.Fprintf(&b, `<rect x="%.0f" y="28" width="10" height="10" fill="%s"/><text x="%.0f" y="37">ZooKeeper</text>`+"\n", plotLeft+plotWidth-170, plotZKCol, plotLeft+plotWidth-155)
	fmt.Fprintf(&b, `<rect x="%.0f" y="28" width="10" height="10" fill="%s"/><text x="%.0f" y="37">zkgo</text>`+"\n", plotLeft+plotWidth-80, plotZkgoCl, plotLeft+plotWidth-65)
	bottom := plotTop + float64(len(rows))*plotRowH*2
	for e := math.Log10(plotMinMs); e <= math.Log10(plotMaxMs)+1e-9; e++ {
		ms := math.Pow(10, e)
		x := plotX(ms)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/>`+"\n", x, plotTop-5, x, bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%g</text>`+"\n", x, bottom+18, ms)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">latency, ms</text>`+"\n", plotLeft+plotWidth/2, bottom+38)
	for i, id := range rows {
		y0 := plotTop + float64(i)*plotRowH*2
		label := labels[id]
		if label == "" {
			label = id
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-10, y0+plotRowH+4, html.EscapeString(label))
		for j, srv := range []string{"zookeeper", "zkgo"} {
			p, ok := med(id, srv)
			if !ok {
				continue
			}
			col := plotZKCol
			if srv == "zkgo" {
				col = plotZkgoCl
			}
			y := y0 + plotRowH*0.6 + float64(j)*plotRowH*0.8
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", plotX(p.p50), y, plotX(p.p999), y, col)
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s %s p50 %.3g ms</title></circle>`+"\n", plotX(p.p50), y, col, srv, id, p.p50)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="%s"><title>%s %s p99 %.3g ms</title></rect>`+"\n", plotX(p.p99)-4, y-4, col, srv, id, p.p99)
			x := plotX(p.p999)
			fmt.Fprintf(&b, `<path d="M%.1f %.1f L%.1f %.1f L%.1f %.1f Z" fill="%s"><title>%s %s p99.9 %.3g ms</title></path>`+"\n", x, y-5, x-5, y+4, x+5, y+4, col, srv, id, p.p999)
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// plotFromRaw renders the plot of a report written earlier with -raw.
func plotFromRaw(rawPath, out string) error {
	data, err := os.ReadFile(rawPath)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", rawPath, err)
	}
	labels := map[string]string{}
	var order []string
	for _, s := range specs() {
		labels[s.id] = s.label
		order = append(order, s.id)
	}
	return os.WriteFile(out, renderPlot(rep.Runs, order, labels, plotTitle(&rep)), 0o644)
}

func plotTitle(rep *report) string {
	return fmt.Sprintf("Latency per workload, standalone, %s (zkgo vs Apache ZooKeeper, same machine)", rep.Started.Format("2006-01-02"))
}
