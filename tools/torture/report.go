package torture

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkgo/zkgo/tools/torture/check"
)

// Report is what a run found: the schedule as it was applied, what the
// ensemble and the clients did, and each checker's verdict. It is written
// as report.json and report.html in the run's directory.
type Report struct {
	Seed     uint64
	Members  int
	Clients  int
	Duration time.Duration // of the faults phase
	Started  time.Time
	Elapsed  time.Duration // whole run, checks included
	Schedule []string      // the faults, as scheduled

	// Events is the timeline: faults applied and removed, members that
	// stopped by themselves and were started again, leaders seen.
	Events []Event
	// Recoveries is, for each fault, how long after its removal the
	// ensemble acknowledged a write again.
	Recoveries []Recovery
	// Seconds is the clients' operations per second of the run: answered
	// (OK or a ZooKeeper error answer) and failed (no answer: connection
	// loss, timeout, expiry).
	Seconds []Second
	Ops     OpCounts
	Results []check.Result
	// Notes are observations that are not checker verdicts (a member that
	// did not stop on a failing disk, a probe that never recovered).
	Notes []string
}

// Event is one line of the timeline.
type Event struct {
	At   time.Duration // since the start of the faults phase
	What string
}

// Recovery is how long the ensemble took to acknowledge a write once a
// fault began (During: the failover time when the fault took the leader
// away; < 0: no write was acknowledged while the fault lasted) and after
// it was removed (Took; < 0: not within the quiet gap).
type Recovery struct {
	Fault  string
	During time.Duration
	Took   time.Duration
}

// Second is one second of client traffic.
type Second struct {
	OK, Failed int
}

// OpCounts sums the clients' operations.
type OpCounts struct {
	Total, OK, Failed int
}

// Passed reports whether every checker held.
func (r *Report) Passed() bool {
	for _, res := range r.Results {
		if !res.OK {
			return false
		}
	}
	return len(r.Results) > 0
}

// Summary is a few lines for a terminal or a test log.
func (r *Report) Summary() string {
	var b strings.Builder
	verdict := "PASS"
	if !r.Passed() {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "%s: seed %d, %d members, %v of faults (%d), %d operations (%d answered, %d without answer)\n",
		verdict, r.Seed, r.Members, r.Duration, len(r.Schedule), r.Ops.Total, r.Ops.OK, r.Ops.Failed)
	var worst, worstDuring time.Duration
	recovered, available := 0, 0
	for _, rec := range r.Recoveries {
		if rec.Took >= 0 {
			recovered++
			worst = max(worst, rec.Took)
		}
		if rec.During >= 0 {
			available++
			worstDuring = max(worstDuring, rec.During)
		}
	}
	fmt.Fprintf(&b, "writes acknowledged during %d of %d faults (slowest first acknowledgement %v), and after %d (slowest %v)\n",
		available, len(r.Recoveries), worstDuring.Round(time.Millisecond), recovered, worst.Round(time.Millisecond))
	b.WriteString(check.Summary(r.Results))
	for _, n := range r.Notes {
		b.WriteString("note: " + n + "\n")
	}
	return b.String()
}

// Write writes report.json and report.html into dir and returns the HTML
// file's path.
func (r *Report) Write(dir string) (string, error) {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), js, 0o644); err != nil {
		return "", err
	}
	p := filepath.Join(dir, "report.html")
	f, err := os.Create(p)
	if err != nil {
		return "", err
	}
	if err := r.html(f); err != nil {
		f.Close()
		return "", err
	}
	return p, f.Close()
}

// chart geometry, in SVG user units.
const (
	chartW   = 1000.0
	laneH    = 16.0
	barAreaH = 120.0
)

type bar struct {
	X, W, Y, H float64
	Class      string
	Title      string
}

type lane struct {
	Y    float64
	Bars []bar
}

func (r *Report) html(w io.Writer) error {
	total := r.Duration + 5*time.Second
	if n := time.Duration(len(r.Seconds)) * time.Second; n > total {
		total = n
	}
	x := func(d time.Duration) float64 { return chartW * float64(d) / float64(total) }

	// The fault lanes: one per fault kind, bars from start to end.
	lanes := map[string]*lane{}
	var laneOrder []string
	open := map[string]time.Duration{}
	for _, ev := range r.Events {
		name, rest, ok := strings.Cut(ev.What, ": ")
		if !ok || (name != "fault" && name != "healed") {
			continue
		}
		kind := strings.TrimSuffix(strings.Fields(rest)[0], ":")
		if _, ok := lanes[kind]; !ok {
			lanes[kind] = &lane{Y: float64(len(laneOrder)) * laneH}
			laneOrder = append(laneOrder, kind)
		}
		if name == "fault" {
			open[rest] = ev.At
			continue
		}
		for k, at := range open {
			if strings.TrimSuffix(strings.Fields(k)[0], ":") == kind {
				l := lanes[kind]
				l.Bars = append(l.Bars, bar{X: x(at), W: max(x(ev.At)-x(at), 1), Y: l.Y, H: laneH - 3, Class: "fault", Title: k})
				delete(open, k)
			}
		}
	}
	var lanesOut []struct {
		Name string
		lane
	}
	for _, k := range laneOrder {
		lanesOut = append(lanesOut, struct {
			Name string
			lane
		}{k, *lanes[k]})
	}

	// Throughput: answered and failed operations per second.
	peak := 1
	for _, s := range r.Seconds {
		peak = max(peak, s.OK+s.Failed)
	}
	var bars []bar
	for i, s := range r.Seconds {
		bx := x(time.Duration(i) * time.Second)
		bw := max(x(time.Second)-1, 1)
		okH := barAreaH * float64(s.OK) / float64(peak)
		failH := barAreaH * float64(s.Failed) / float64(peak)
		bars = append(bars,
			bar{X: bx, W: bw, Y: barAreaH - okH, H: okH, Class: "ok", Title: fmt.Sprintf("second %d: %d answered", i, s.OK)},
			bar{X: bx, W: bw, Y: barAreaH - okH - failH, H: failH, Class: "failed", Title: fmt.Sprintf("second %d: %d without answer", i, s.Failed)})
	}
	data := struct {
		*Report
		Verdict  string
		Lanes    any
		LanesH   float64
		Bars     []bar
		Peak     int
		ChartW   float64
		BarAreaH float64
		Summary  string
	}{r, map[bool]string{true: "PASS", false: "FAIL"}[r.Passed()], lanesOut, float64(len(lanesOut))*laneH + 4,
		bars, peak, chartW, barAreaH, r.Summary()}
	return reportTmpl.Execute(w, data)
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms": func(d time.Duration) string { return d.Round(time.Millisecond).String() },
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>zkgo torture: seed {{.Seed}} {{.Verdict}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;max-width:1100px}
h1 .PASS{color:#17803d}h1 .FAIL{color:#b91c1c}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
.ok{fill:#60a5fa}.failed{fill:#f87171}.fault{fill:#f59e0b}
pre{background:#f6f6f6;padding:8px;overflow-x:auto}
svg text{font-size:11px}
</style></head><body>
<h1>zkgo torture — seed {{.Seed}}: <span class="{{.Verdict}}">{{.Verdict}}</span></h1>
<pre>{{.Summary}}</pre>
<p>Replay: <code>go run -tags zkgofaults ./cmd/zkgo torture -seed {{.Seed}} -members {{.Members}} -duration {{.Duration}}</code>
(the same faults at the same times; timing and the clients' interleaving are not replayed).</p>

<h2>Checkers</h2>
<table><tr><th>checker</th><th>verdict</th><th>checked</th><th>problem and evidence</th></tr>
{{range .Results}}<tr><td>{{.Name}}</td><td>{{if .OK}}held{{else}}<b>VIOLATED</b>{{end}}</td><td>{{.Checked}}</td>
<td>{{.Problem}}{{if .Evidence}}<pre>{{range .Evidence}}{{.}}
{{end}}</pre>{{end}}{{range .Notes}}<div>{{.}}</div>{{end}}</td></tr>
{{end}}</table>

<h2>Faults and traffic</h2>
<svg width="{{.ChartW}}" height="{{.LanesH}}" viewBox="0 0 {{.ChartW}} {{.LanesH}}">
{{range .Lanes}}{{$l := .}}<text x="2" y="{{.Y}}" dy="11">{{.Name}}</text>
{{range .Bars}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" opacity="0.7"><title>{{.Title}}</title></rect>{{end}}
{{end}}</svg>
<div>operations per second (blue: answered, red: without answer), peak {{.Peak}}</div>
<svg width="{{.ChartW}}" height="{{.BarAreaH}}" viewBox="0 0 {{.ChartW}} {{.BarAreaH}}" style="border-bottom:1px solid #999">
{{range .Bars}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Title}}</title></rect>{{end}}
</svg>

<h2>Recoveries</h2>
<table><tr><th>fault</th><th>a write acknowledged after the fault began</th><th>after its removal</th></tr>
{{range .Recoveries}}<tr><td>{{.Fault}}</td><td>{{if ge .During 0}}{{ms .During}}{{else}}not while it lasted{{end}}</td><td>{{if ge .Took 0}}{{ms .Took}}{{else}}not within the quiet gap{{end}}</td></tr>
{{end}}</table>

<h2>Timeline</h2>
<table>{{range .Events}}<tr><td>{{ms .At}}</td><td>{{.What}}</td></tr>
{{end}}</table>
{{if .Notes}}<h2>Notes</h2><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body></html>
`))
