package bench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/proto"
)

// Config describes one benchmark run. The zero value of a field means its
// default (see Defaults); Warmup zero means no warm-up.
type Config struct {
	// Server is the host:port of the server (default 127.0.0.1:2181), or
	// a comma-separated list of an ensemble's members
	// ("h1:p1,h2:p2,h3:p3"): the sessions are then spread round-robin
	// over the list (session i on member i mod n; the setup session on the
	// first), and each load session syncs with the leader before the load
	// starts, so that it sees what the setup created.
	Server   string
	Workload string // see Workloads
	// Client is the client library for get, set and mixed: "raw" (this
	// package's pipelined protocol client, the default), "zk" (zkgo's Go
	// client) or "gozk" (github.com/go-zookeeper/zk). Other workloads
	// use raw, except the recipes (lock, latch, selector), which run on
	// zkgo's Go client. For lock, "gozk" runs go-zookeeper's own Lock
	// recipe and "curator" Apache Curator's InterProcessMutex in a JVM
	// (javac, java and Debian's Curator 5 jars in /usr/share/java).
	Client string

	Connections int           // sessions that carry the requests (default 16)
	Workers     int           // requests in flight, each worker waits for its reply (default 64)
	Size        int           // payload bytes of written and pre-created data (default 100)
	Duration    time.Duration // measured time (default 10s)
	Warmup      time.Duration // time run before measuring (0: none)
	// Rate, if positive, runs open loop at this many operations per second
	// in total: each worker sends on a fixed schedule and latency is
	// measured from the scheduled time, so a server that stalls is charged
	// for the requests it delayed (no coordinated omission). Zero runs
	// closed loop (each worker sends its next request when the last one
	// is answered). Only for the request workloads.
	Rate float64

	Keys         int           // get, set, mixed: keys chosen uniformly (1 = one hot key; default: get 1, others 1000)
	Count        int           // delete: nodes created beforehand and deleted (default 100000)
	Ratio        int           // mixed: reads per write (default 10)
	Mode         string        // create: persistent (default) or ephemeral-sequential; sessions: churn (default) or idle
	Children     int           // children: children of the listed node (default 1000)
	MultiOps     int           // multi: setData ops per multi (default 5)
	Watchers     int           // watch: sessions watching the node (default 1)
	Sessions     int           // sessions -mode idle: idle sessions held open (default 1000)
	Contenders   int           // lock: sessions contending for one lock (default 16)
	Participants int           // selector: participants (default 4)
	Hold         time.Duration // lock, selector: time the lock or leadership is held per turn (default 0)

	SessionTimeout time.Duration // requested session timeout (default 30s)
	TLS            *tls.Config   // connect over TLS (nil: plaintext)
	Root           string        // parent of the run's znodes (default /zkgo-bench); the run deletes what it creates

	// Progress, if not nil, receives one line per second while running.
	Progress io.Writer
	// AfterSetup, if not nil, is called once the workload is set up and
	// before the load starts (the comparison samples the server's memory
	// there).
	AfterSetup func()
	// AfterLoad, if not nil, is called once the load (warm-up and
	// measurement) has stopped and before the teardown (the comparison
	// reads the servers' counters around the load).
	AfterLoad func()
	// MeasureBegin and MeasureEnd, if not nil, are called as the measured
	// window begins (after the warm-up) and as it ends (the comparison
	// reads the servers' CPU time there). They must return quickly.
	MeasureBegin, MeasureEnd func()
}

// Defaults fills in the zero fields.
func (c *Config) Defaults() {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	if c.Server == "" {
		c.Server = "127.0.0.1:2181"
	}
	if c.Client == "" {
		c.Client = "raw"
	}
	def(&c.Connections, 16)
	def(&c.Workers, 64)
	if c.Size < 0 {
		c.Size = 0
	} else if c.Size == 0 {
		c.Size = 100
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.Warmup < 0 {
		c.Warmup = 0
	}
	if c.Keys <= 0 {
		c.Keys = 1000
		if c.Workload == "get" {
			c.Keys = 1
		}
	}
	def(&c.Count, 100000)
	def(&c.Ratio, 10)
	def(&c.Children, 1000)
	def(&c.MultiOps, 5)
	def(&c.Watchers, 1)
	def(&c.Sessions, 1000)
	def(&c.Contenders, 16)
	def(&c.Participants, 4)
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 30 * time.Second
	}
	if c.Root == "" {
		c.Root = "/zkgo-bench"
	}
	if c.Mode == "" {
		switch c.Workload {
		case "create":
			c.Mode = "persistent"
		case "sessions":
			c.Mode = "churn"
		}
	}
}

// Result is the outcome of a run. Latencies are in milliseconds.
type Result struct {
	Workload string         `json:"workload"`
	Params   map[string]any `json:"params"`
	Server   string         `json:"server"`
	Client   string         `json:"client"`
	// Unit is what one operation is (request, handoff, notification,
	// turn, handover, session).
	Unit string `json:"unit"`
	// LatencyOf says what the latency measures.
	LatencyOf   string  `json:"latency_of"`
	WarmupSec   float64 `json:"warmup_s"`
	DurationSec float64 `json:"duration_s"`
	Ops         int64   `json:"ops"`
	OpsPerSec   float64 `json:"ops_per_s"`
	Errors      int64   `json:"errors"`
	Latency     Latency `json:"latency_ms"`
	// ByKind splits operations and latencies by kind when a workload has
	// several (mixed: get and set; watch: the time until the last watcher
	// is notified).
	ByKind map[string]KindResult `json:"by_kind,omitempty"`
	// Extra holds workload-specific figures (sessions -mode idle: the
	// connect rate and latency of the idle sessions).
	Extra map[string]float64 `json:"extra,omitempty"`
	Notes []string           `json:"notes,omitempty"`
}

// KindResult is one kind of operation of a run.
type KindResult struct {
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_s"`
	Errors    int64   `json:"errors"`
	Latency   Latency `json:"latency_ms"`
	// Aux kinds are not counted in the run's Ops and Latency.
	Aux bool `json:"aux,omitempty"`
}

// WorkloadInfo describes a workload for help texts.
type WorkloadInfo struct {
	Name, Summary, Unit, LatencyOf string
}

type workloadDef struct {
	WorkloadInfo
	request bool // uses the request loop: -rate, -connections, -workers apply
	make    func() workload
}

// workload is one benchmark.
type workload interface {
	// setup creates the znodes and sessions the run needs.
	setup(ctx context.Context, e *env) error
	// run generates the load until ctx is done; it records into the
	// series it registered in setup.
	run(ctx context.Context, e *env) error
	// teardown deletes what setup and run created (best effort).
	teardown(ctx context.Context, e *env)
	// params lists the parameters that matter, for the report.
	params(c *Config) map[string]any
}

// Workloads lists the workloads.
func Workloads() []WorkloadInfo {
	out := make([]WorkloadInfo, len(registry))
	for i, d := range registry {
		out[i] = d.WorkloadInfo
	}
	return out
}

func lookup(name string) (*workloadDef, bool) {
	for i := range registry {
		if registry[i].Name == name {
			return &registry[i], true
		}
	}
	return nil, false
}

// env is what a running workload shares with the runner.
type env struct {
	cfg     *Config
	st      *stats
	run     string // the run's znode, under cfg.Root
	payload []byte
	admin   *Conn   // setup and teardown
	conns   []*Conn // load connections of the request workloads
	notes   []string
	extra   map[string]float64

	mu    sync.Mutex
	alive []*Conn // sessions the pinger keeps alive
}

// keepAlive adds sessions to the pinger.
func (e *env) keepAlive(cs ...*Conn) {
	e.mu.Lock()
	e.alive = append(e.alive, cs...)
	e.mu.Unlock()
}

// pinger pings every kept-alive session a few times per session timeout,
// so that idle sessions (watchers, idle sessions, the setup session while
// the load runs) do not expire. The timeout is the one the server
// granted the setup session, which may be shorter than the one requested
// (a server's maxSessionTimeout; 2 s on zktest's servers).
func (e *env) pinger(stop <-chan struct{}) {
	every := e.cfg.SessionTimeout
	if g := e.admin.SessionTimeout(); g > 0 && g < every {
		every = g
	}
	t := time.NewTicker(max(every/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		e.mu.Lock()
		cs := append([]*Conn(nil), e.alive...)
		e.mu.Unlock()
		for _, c := range cs {
			c.Ping()
		}
	}
}

// Run runs one benchmark: setup, warm-up, measurement, teardown. It stops
// early when ctx is cancelled (the result then covers the time measured).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.Defaults()
	def, ok := lookup(cfg.Workload)
	if !ok {
		return nil, fmt.Errorf("unknown workload %q (want one of %s)", cfg.Workload, strings.Join(workloadNames(), ", "))
	}
	if err := cfg.validate(def); err != nil {
		return nil, err
	}
	w := def.make()
	var suffix [4]byte
	rand.Read(suffix[:])
	e := &env{
		cfg:     &cfg,
		st:      newStats(),
		run:     cfg.Root + "/" + cfg.Workload + "-" + hex.EncodeToString(suffix[:]),
		payload: make([]byte, cfg.Size),
		extra:   map[string]float64{},
	}
	for i := range e.payload {
		e.payload[i] = byte('a' + i%26)
	}
	admin, err := dial(cfg.serverFor(0), dialOptions{tls: cfg.TLS, timeout: cfg.SessionTimeout})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.serverFor(0), err)
	}
	e.admin = admin
	defer admin.Close()
	e.keepAlive(admin)
	stopPing := make(chan struct{})
	go e.pinger(stopPing)
	defer close(stopPing)

	if err := ensure(admin, cfg.Root); err != nil {
		return nil, err
	}
	if err := ensure(admin, e.run); err != nil {
		return nil, err
	}
	progress(cfg.Progress, "%s: setting up", cfg.Workload)
	setupErr := w.setup(ctx, e)
	defer func() {
		tctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		w.teardown(tctx, e)
		for _, c := range e.conns {
			c.Close()
		}
		deleteTree(e.admin, e.run, 4)
	}()
	if setupErr != nil {
		return nil, fmt.Errorf("%s: setup: %w", cfg.Workload, setupErr)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if cfg.AfterSetup != nil {
		cfg.AfterSetup()
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.run(runCtx, e) }()

	stopRep := make(chan struct{})
	repDone := make(chan struct{})
	go e.report(stopRep, repDone)

	begin, stop := e.st.begin, e.st.stop
	if cfg.MeasureBegin != nil {
		begin = func() { e.st.begin(); cfg.MeasureBegin() }
	}
	if cfg.MeasureEnd != nil {
		stop = func() { e.st.stop(); cfg.MeasureEnd() }
	}
	finished, runErr := Phases(ctx, done, cfg.Warmup, cfg.Duration, begin, stop)
	cancel()
	close(stopRep)
	<-repDone
	if !finished {
		select {
		case runErr = <-done:
		case <-time.After(30 * time.Second):
			// A request that never gets its reply: break the connections.
			for _, c := range e.conns {
				c.abort()
			}
			select {
			case runErr = <-done:
			case <-time.After(10 * time.Second):
			}
			if runErr == nil {
				runErr = errors.New("the workload did not stop within 30 s of the end")
			}
		}
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return nil, fmt.Errorf("%s: %w", cfg.Workload, runErr)
	}
	if cfg.AfterLoad != nil {
		cfg.AfterLoad()
	}
	return e.result(def, w), nil
}

// Check reports a configuration that Run would refuse (unknown workload,
// a flag that does not apply to it, a bad value).
func (c Config) Check() error {
	c.Defaults()
	def, ok := lookup(c.Workload)
	if !ok {
		return fmt.Errorf("unknown workload %q (want one of %s)", c.Workload, strings.Join(workloadNames(), ", "))
	}
	return c.validate(def)
}

func (c *Config) validate(def *workloadDef) error {
	for _, a := range c.servers() {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("bad server address %q in %q: want host:port[,host:port...]", a, c.Server)
		}
	}
	switch c.Client {
	case "raw", "zk", "gozk", "curator":
	default:
		return fmt.Errorf("unknown client %q (want raw, zk, gozk or curator)", c.Client)
	}
	if c.Client == "curator" && c.Workload != "lock" {
		return fmt.Errorf("-client curator is only for lock")
	}
	if c.Client == "curator" && c.TLS != nil {
		return fmt.Errorf("-client curator does not connect over TLS")
	}
	if c.Client != "raw" && c.Workload != "get" && c.Workload != "set" && c.Workload != "mixed" && c.Workload != "lock" {
		return fmt.Errorf("-client %s is only for get, set, mixed and lock", c.Client)
	}
	if c.Rate > 0 && !def.request && !(c.Workload == "sessions" && c.Mode == "idle") {
		return fmt.Errorf("-rate is only for the request workloads (get, set, create, delete, children, multi, mixed) and sessions -mode idle")
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		return fmt.Errorf("bad rate %v", c.Rate)
	}
	switch c.Workload {
	case "create":
		if c.Mode != "persistent" && c.Mode != "ephemeral-sequential" {
			return fmt.Errorf("create: -mode must be persistent or ephemeral-sequential, not %q", c.Mode)
		}
	case "sessions":
		if c.Mode != "churn" && c.Mode != "idle" {
			return fmt.Errorf("sessions: -mode must be churn or idle, not %q", c.Mode)
		}
	default:
		if c.Mode != "" {
			return fmt.Errorf("-mode is only for create and sessions")
		}
	}
	if !strings.HasPrefix(c.Root, "/") || c.Root == "/" || strings.HasSuffix(c.Root, "/") {
		return fmt.Errorf("bad root %q: want an absolute path such as /zkgo-bench", c.Root)
	}
	if c.Size > 512<<10 {
		return fmt.Errorf("payload size %d is too large (at most 512 KiB)", c.Size)
	}
	return nil
}

// servers returns the addresses in Server.
func (c *Config) servers() []string {
	parts := strings.Split(c.Server, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// serverFor returns the address session i connects to: round-robin over
// the servers.
func (c *Config) serverFor(i int) string {
	s := c.servers()
	return s[i%len(s)]
}

// multiServer reports whether Server lists more than one address.
func (c *Config) multiServer() bool { return strings.Contains(c.Server, ",") }

func workloadNames() []string {
	var names []string
	for _, d := range registry {
		names = append(names, d.Name)
	}
	return names
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// report prints the progress line once a second (the line is still
// computed without Progress: the flush keeps the totals current).
func (e *env) report(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	start, last := time.Now(), time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			tk := e.st.tick()
			el := now.Sub(last).Seconds()
			last = now
			var phase string
			switch {
			case tk.measuring:
				phase = fmt.Sprintf("%3.0fs/%.0fs", now.Sub(tk.start).Seconds(), e.cfg.Duration.Seconds())
			case tk.started:
				continue // finished
			default:
				phase = fmt.Sprintf("warm-up %.0fs", now.Sub(start).Seconds())
			}
			progress(e.cfg.Progress, "%s %s  %s %s/s  p50 %s  p99 %s  errors %d",
				e.cfg.Workload, phase, groupDigits(int64(float64(tk.ops)/el)), e.unitName(), fmtMs(tk.p50), fmtMs(tk.p99), tk.errs)
		}
	}
}

func (e *env) unitName() string {
	if e.cfg.Workload == "sessions" && e.cfg.Mode == "idle" {
		return "requests"
	}
	if d, ok := lookup(e.cfg.Workload); ok {
		return d.Unit + "s"
	}
	return "ops"
}

func (e *env) result(def *workloadDef, w workload) *Result {
	st := e.st
	st.mu.Lock()
	defer st.mu.Unlock()
	r := &Result{
		Workload:  e.cfg.Workload,
		Params:    w.params(e.cfg),
		Server:    e.cfg.Server,
		Client:    e.cfg.Client,
		Unit:      def.Unit,
		LatencyOf: def.LatencyOf,
		WarmupSec: e.cfg.Warmup.Seconds(),
		Notes:     e.notes,
	}
	switch def.Name {
	case "get", "set", "mixed":
	case "lock":
		if r.Client != "gozk" && r.Client != "curator" {
			r.Client = "zk"
		}
	case "latch", "selector":
		r.Client = "zk"
	default:
		r.Client = "raw"
	}
	if u, ok := w.(interface {
		unit(*Config) (string, string)
	}); ok {
		r.Unit, r.LatencyOf = u.unit(e.cfg)
	}
	if len(e.extra) > 0 {
		r.Extra = e.extra
	}
	el := st.end.Sub(st.start).Seconds()
	if st.external {
		el = st.extWindow.Seconds()
	}
	r.DurationSec = el
	all := newHist()
	r.ByKind = map[string]KindResult{}
	for _, s := range st.series {
		total, errs := s.total, s.errs
		if s.ext != nil {
			total, errs = s.ext, s.extErrs
		}
		k := KindResult{Ops: total.TotalCount(), Errors: errs, Latency: summarize(total), Aux: s.aux()}
		if el > 0 {
			k.OpsPerSec = float64(k.Ops) / el
		}
		r.ByKind[s.name] = k
		if !k.Aux {
			all.Merge(total)
			r.Ops += k.Ops
			r.Errors += k.Errors
		}
	}
	if len(st.series) == 1 {
		r.ByKind = nil
	}
	if r.Ops == 0 && def.Name == "delete" {
		r.Notes = append(r.Notes, "every znode was deleted during the warm-up: raise -count or shorten -warmup")
	}
	if el > 0 {
		r.OpsPerSec = float64(r.Ops) / el
	}
	r.Latency = summarize(all)
	return r
}

// Print writes the result for people.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "workload  %s  %s\n", r.Workload, formatParams(r.Params))
	fmt.Fprintf(w, "server    %s  (client %s)\n", r.Server, r.Client)
	fmt.Fprintf(w, "measured  %.2f s after %.1f s warm-up\n", r.DurationSec, r.WarmupSec)
	fmt.Fprintf(w, "%-9s %s/s  (%s %ss, %d errors)\n", "rate", groupDigits(int64(math.Round(r.OpsPerSec))), groupDigits(r.Ops), r.Unit, r.Errors)
	fmt.Fprintf(w, "latency   %s\n          %s\n", r.LatencyOf, formatLatency(r.Latency))
	if len(r.ByKind) > 0 {
		kinds := make([]string, 0, len(r.ByKind))
		for k := range r.ByKind {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			kr := r.ByKind[k]
			aux := ""
			if kr.Aux {
				aux = " (not counted above)"
			}
			fmt.Fprintf(w, "  %-8s %s/s, %d errors%s\n           %s\n", k, groupDigits(int64(math.Round(kr.OpsPerSec))), kr.Errors, aux, formatLatency(kr.Latency))
		}
	}
	if len(r.Extra) > 0 {
		keys := make([]string, 0, len(r.Extra))
		for k := range r.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s = %.4g\n", k, r.Extra[k])
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func formatLatency(l Latency) string {
	return fmt.Sprintf("p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms  mean %.3f ms",
		l.P50, l.P90, l.P99, l.P999, l.Max, l.Mean)
}

func formatParams(p map[string]any) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%v", k, p[k])
	}
	return b.String()
}

func fmtMs(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }

func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// firstError keeps the first error set (any concrete type).
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// codeError is a ZooKeeper error code returned by the server: counted as a
// failed operation, not a reason to stop.
type codeError proto.ErrCode

func (c codeError) Error() string { return fmt.Sprintf("server error %v", proto.ErrCode(c)) }

// errStop ends a worker that has nothing left to do (delete).
var errStop = errors.New("bench: worker done")

// check turns a reply into an error: codeError for a non-zero code.
func check(code proto.ErrCode, err error) error {
	if err != nil {
		return err
	}
	if code != proto.ErrOk {
		return codeError(code)
	}
	return nil
}

// Phases waits out a run's warm-up and then its measured window, calling
// begin when the warm-up ends and stop when the window does. If the run
// reports on done before that (an error, or its end), Phases returns it
// as err with finished true; it also returns once ctx is done.
func Phases(ctx context.Context, done <-chan error, warmup, window time.Duration, begin, stop func()) (finished bool, err error) {
	wait := func(d time.Duration) {
		if finished || d <= 0 {
			return
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case err = <-done:
			finished = true
		case <-t.C:
		case <-ctx.Done():
		}
	}
	wait(warmup)
	begin()
	wait(window)
	stop()
	return finished, err
}
