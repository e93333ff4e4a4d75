package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tools/bench"
	"github.com/zkgo/zkgo/zk"
)

// Wide parents (-wide N): a fresh standalone server of each kind gets N
// persistent children of 100 bytes under one parent, created pipelined over
// 16 sessions as the memory measurement loads its znodes. Then, per server:
// the create rate and the RSS growth per child; what getChildren of that
// parent does to each client at its default reply limit (jute.maxbuffer:
// the list of a million names is far larger) and whether the session, the
// server and the other clients come through; getChildren with a client
// whose limit is raised, and at sizes that fit; getAllChildrenNumber and
// exists on the parent; and a second session's get and set latency while
// the parent exists. Every run starts a fresh server; runs alternate which
// server goes first.

const (
	wideParent = "/wide"
	wideData   = 100
	// wideRaised is the reply limit of the raised clients.
	wideRaised = 256 << 20
	// wideCalls is how many times each latency is sampled.
	wideCalls = 20
)

// wideName is the i-th child's name: item-0000000000, item-0000000001, …
func wideName(i int) string { return fmt.Sprintf("item-%010d", i) }

// childrenBytes is the length field of the getChildren2 reply frame (op 12,
// what zkgo's Go client and zkCli's ls send) listing n children named by
// wideName: the 16-byte reply header, the vector's count, each name with
// its 4-byte length, and the parent's 68-byte Stat. getChildren (op 8) has
// no Stat: 68 bytes less.
func childrenBytes(n int) int64 { return 16 + 4 + int64(n)*(4+15) + 68 }

// latStats summarizes sequential calls.
type latStats struct {
	N      int           `json:"n"`
	Errors int           `json:"errors"`
	P50    time.Duration `json:"p50_ns"`
	P99    time.Duration `json:"p99_ns"`
	Max    time.Duration `json:"max_ns"`
	Err    string        `json:"first_error,omitempty"`
}

func summarize(lats []time.Duration, errs int, first error) latStats {
	s := latStats{N: len(lats), Errors: errs}
	if first != nil {
		s.Err = first.Error()
	}
	if len(lats) == 0 {
		return s
	}
	slices.Sort(lats)
	s.P50 = lats[len(lats)/2]
	s.P99 = lats[min(len(lats)-1, len(lats)*99/100)]
	s.Max = lats[len(lats)-1]
	return s
}

// timeCalls runs f n times in a row.
func timeCalls(n int, f func() error) latStats {
	var lats []time.Duration
	errs := 0
	var first error
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if err := f(); err != nil {
			errs++
			if first == nil {
				first = err
			}
			continue
		}
		lats = append(lats, time.Since(t0))
	}
	return summarize(lats, errs, first)
}

// outcome is what one client saw asking for the wide parent's children.
type outcome struct {
	Client      string        `json:"client"`
	Err         string        `json:"error,omitempty"`
	Took        time.Duration `json:"took_ns"`
	Listed      int           `json:"listed"`
	SessionKept string        `json:"session_kept,omitempty"` // a getData afterwards on the same client
	Reconnects  int           `json:"reconnects"`             // connection losses seen by the client
	Health      string        `json:"server_health"`          // ruok, srvr after the attempt
}

type wideResult struct {
	Server    string           `json:"server"`
	Repeat    int              `json:"repeat"`
	N         int              `json:"children"`
	RSSBefore int64            `json:"rss_before"`
	RSSAfter  int64            `json:"rss_after"`
	HeapAfter int64            `json:"java_heap_after,omitempty"`
	LoadSec   float64          `json:"load_s"`
	Outcomes  []outcome        `json:"outcomes"`
	ServerLog []string         `json:"server_log"` // new log lines during the default-limit attempts
	ProbeMax  time.Duration    `json:"probe_max_ns"`
	ProbeErrs int              `json:"probe_errors"`
	RSSPeak   int64            `json:"rss_peak"` // during the getChildren phases
	Raised    latStats         `json:"raised"`   // getChildren, zkgo's Go client with a raised limit
	RaisedN   int              `json:"raised_listed"`
	Small     map[int]latStats `json:"small"`
	AllNum    latStats         `json:"get_all_children_number"`
	AllNumVal int              `json:"get_all_children_number_value"`
	Exists    latStats         `json:"exists"`
	NumChild  int32            `json:"num_children"`
	GetParent latStats         `json:"get_parent"`
	IdleGet   latStats         `json:"idle_get"`
	IdleSet   latStats         `json:"idle_set"`
	BusyGet   latStats         `json:"busy_get"` // during the raised getChildren calls
	BusySet   latStats         `json:"busy_set"`
	RSSEnd    int64            `json:"rss_end"`
	Err       string           `json:"error,omitempty"`
}

func runWide(ctx context.Context, o options, bin, root string, n int) error {
	if _, err := apachezk.Classpath(); err != nil {
		return err
	}
	var results []wideResult
	for rep := 0; rep < o.repeats; rep++ {
		for _, name := range alternating(rep) {
			var s *server
			var err error
			if name == "zkgo" {
				s, err = newZkgo(bin, root)
			} else {
				s, err = newZooKeeper(root, o.heap)
			}
			if err != nil {
				return err
			}
			logf("wide parent, %s, run %d: %d children", name, rep+1, n)
			r := wideOn(ctx, s, n)
			r.Repeat = rep
			s.kill()
			os.RemoveAll(s.dir)
			if r.Err != "" {
				logf("  %s: %s", name, r.Err)
			}
			results = append(results, r)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	fmt.Print(wideReport(results, n, o.heap))
	return nil
}

func wideOn(ctx context.Context, s *server, n int) (r wideResult) {
	r.Server, r.N = s.name, n
	if _, err := s.start(2 * time.Minute); err != nil {
		r.Err = err.Error()
		return r
	}
	time.Sleep(3 * time.Second)
	r.RSSBefore, _ = rssBytes(s.pid())

	// 1. The load.
	t0 := time.Now()
	lctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	err := bench.PopulateChildren(lctx, s.addr(), wideParent, n, wideData, 16, wideName)
	cancel()
	r.LoadSec = time.Since(t0).Seconds()
	if err != nil {
		r.Err = "load: " + err.Error()
		return r
	}
	time.Sleep(5 * time.Second)
	r.RSSAfter, _ = rssBytes(s.pid())
	if s.name == "zookeeper" {
		r.HeapAfter, _ = javaHeapUsed(s.pid())
	}
	logf("  %s: %d children in %.1f s (%.0f/s), RSS %.1f → %.1f MiB (%.0f B/child)", s.name, n, r.LoadSec, float64(n)/r.LoadSec,
		mib(r.RSSBefore), mib(r.RSSAfter), float64(r.RSSAfter-r.RSSBefore)/float64(n))

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dialZK := func(opts ...zk.Option) (*zk.Conn, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return zk.Connect(cctx, []string{s.addr()}, append([]zk.Option{zk.WithSessionTimeout(30 * time.Second), zk.WithLogger(quiet)}, opts...)...)
	}
	// A probe session reads a small znode every 10 ms through all the
	// getChildren phases: the other clients' view. An RSS sampler
	// records the peak.
	probe, err := dialZK()
	if err != nil {
		r.Err = "probe session: " + err.Error()
		return r
	}
	defer probe.Close()
	if _, err := probe.Create(ctx, "/wide-probe", make([]byte, wideData), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		r.Err = "probe znode: " + err.Error()
		return r
	}
	var pmu sync.Mutex
	probeCtx, stopProbe := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Add(2)
	go func() {
		defer bg.Done()
		for probeCtx.Err() == nil {
			t := time.Now()
			rctx, cancel := context.WithTimeout(probeCtx, 30*time.Second)
			_, _, err := probe.Get(rctx, "/wide-probe")
			cancel()
			d := time.Since(t)
			pmu.Lock()
			if err != nil && probeCtx.Err() == nil {
				r.ProbeErrs++
			}
			r.ProbeMax = max(r.ProbeMax, d)
			pmu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	go func() {
		defer bg.Done()
		for probeCtx.Err() == nil {
			if v, err := rssBytes(s.pid()); err == nil {
				pmu.Lock()
				r.RSSPeak = max(r.RSSPeak, v)
				pmu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	stopBG := func() { stopProbe(); bg.Wait() }
	defer stopBG()

	// 2. getChildren at each client's default limit.
	logSizes := logOffsets(s)
	health := func() string { return serverHealth(s) }
	r.Outcomes = append(r.Outcomes, wideZK(ctx, dialZK, health, "zkgo zk, default limit (4 MiB)"))
	r.Outcomes = append(r.Outcomes, wideGozk(ctx, s.addr(), health, "go-zookeeper, default (no limit)", 0))
	r.Outcomes = append(r.Outcomes, wideGozk(ctx, s.addr(), health, "go-zookeeper, WithMaxBufferSize(1 MiB)", 1<<20))
	r.Outcomes = append(r.Outcomes, wideZkCli(ctx, s.addr(), health, "Java zkCli.sh ls, default jute.maxbuffer", ""))
	r.Outcomes = append(r.Outcomes, wideJava(ctx, s.addr(), health, "Java ZooKeeperMain ls (zkCli.sh's class, logging to stderr), default jute.maxbuffer"))
	r.Outcomes = append(r.Outcomes, wideCliMt(ctx, s.addr(), health, "C cli_mt ls"))
	r.Outcomes = append(r.Outcomes, wideZkCli(ctx, s.addr(), health, fmt.Sprintf("Java zkCli.sh ls, -Djute.maxbuffer=%d", wideRaised), fmt.Sprintf("-Djute.maxbuffer=%d", wideRaised)))
	r.ServerLog = newLogLines(s, logSizes)
	for _, oc := range r.Outcomes {
		logf("  %s: %s: listed %d, took %v, err %q, session %s, reconnects %d, health %s", s.name, oc.Client, oc.Listed,
			oc.Took.Round(time.Millisecond), oc.Err, oc.SessionKept, oc.Reconnects, oc.Health)
	}

	// 3. getChildren with a raised limit, while a second session gets and
	// sets; then the same session alone.
	big, err := dialZK(zk.WithMaxFrameSize(wideRaised))
	if err != nil {
		r.Err = "raised client: " + err.Error()
		return r
	}
	defer big.Close()
	other, err := dialZK()
	if err != nil {
		r.Err = "second session: " + err.Error()
		return r
	}
	defer other.Close()
	busyCtx, stopBusy := context.WithCancel(ctx)
	var busy sync.WaitGroup
	busy.Add(1)
	go func() {
		defer busy.Done()
		r.BusyGet, r.BusySet = getSetLoop(busyCtx, other, time.Hour)
	}()
	r.Raised = timeCalls(wideCalls, func() error {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		kids, _, err := big.Children(cctx, wideParent)
		r.RaisedN = len(kids)
		return err
	})
	stopBusy()
	busy.Wait()
	logf("  %s: getChildren, raised limit: %d names, p50 %v max %v (%d errors %s); meanwhile get p99 %v set p99 %v",
		s.name, r.RaisedN, r.Raised.P50, r.Raised.Max, r.Raised.Errors, r.Raised.Err, r.BusyGet.P99, r.BusySet.P99)
	r.IdleGet, r.IdleSet = getSetLoop(ctx, other, 2*time.Second)

	// 4. The parent's count and stat.
	r.AllNum = timeCalls(wideCalls, func() error {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		v, err := other.GetAllChildrenNumber(cctx, wideParent)
		r.AllNumVal = v
		return err
	})
	r.Exists = timeCalls(wideCalls, func() error {
		st, err := other.Exists(ctx, wideParent)
		if st != nil {
			r.NumChild = st.NumChildren
		}
		return err
	})
	r.GetParent = timeCalls(wideCalls, func() error {
		_, _, err := other.Get(ctx, wideParent)
		return err
	})

	// 5. Smaller parents, whose lists fit every client's default limit.
	r.Small = map[int]latStats{}
	for _, m := range []int{10000, 50000} {
		p := fmt.Sprintf("%s%d", wideParent, m)
		if err := bench.PopulateChildren(ctx, s.addr(), p, m, wideData, 16, wideName); err != nil {
			r.Err = fmt.Sprintf("load %s: %v", p, err)
			return r
		}
		r.Small[m] = timeCalls(wideCalls, func() error {
			kids, _, err := other.Children(ctx, p)
			if err == nil && len(kids) != m {
				err = fmt.Errorf("%d children listed, %d expected", len(kids), m)
			}
			return err
		})
	}
	stopBG()
	r.RSSEnd, _ = rssBytes(s.pid())
	if !s.alive() {
		r.Err = "the server died:\n" + s.logTail()
	}
	return r
}

// getSetLoop alternates getData and setData of 100 bytes on /wide-probe
// for d or until ctx ends.
func getSetLoop(ctx context.Context, c *zk.Conn, d time.Duration) (get, set latStats) {
	var gl, sl []time.Duration
	ge, se := 0, 0
	var gf, sf error
	data := make([]byte, wideData)
	end := time.Now().Add(d)
	for ctx.Err() == nil && time.Now().Before(end) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		t := time.Now()
		if _, _, err := c.Get(cctx, "/wide-probe"); err != nil {
			if ctx.Err() == nil {
				ge++
				gf = cmp(gf, err)
			}
		} else {
			gl = append(gl, time.Since(t))
		}
		t = time.Now()
		if _, err := c.Set(cctx, "/wide-probe", data, -1); err != nil {
			if ctx.Err() == nil {
				se++
				sf = cmp(sf, err)
			}
		} else {
			sl = append(sl, time.Since(t))
		}
		cancel()
	}
	return summarize(gl, ge, gf), summarize(sl, se, sf)
}

func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// serverHealth asks ruok and srvr and reads the RSS.
func serverHealth(s *server) string {
	var parts []string
	if r, err := apachezk.FourLetterWord(s.addr(), "ruok", 5*time.Second); err != nil {
		parts = append(parts, "ruok: "+err.Error())
	} else {
		parts = append(parts, "ruok "+strings.TrimSpace(r))
	}
	if r, err := apachezk.FourLetterWord(s.addr(), "srvr", 5*time.Second); err != nil || !strings.Contains(r, "Mode:") {
		parts = append(parts, fmt.Sprintf("srvr failed (%v)", err))
	} else {
		parts = append(parts, "srvr ok")
	}
	if v, err := rssBytes(s.pid()); err == nil {
		parts = append(parts, fmt.Sprintf("RSS %.0f MiB", mib(v)))
	}
	return strings.Join(parts, ", ")
}

// wideZK lists the wide parent with zkgo's Go client at its default limit,
// then reads the parent on the same client.
func wideZK(ctx context.Context, dial func(...zk.Option) (*zk.Conn, error), health func() string, label string) outcome {
	oc := outcome{Client: label}
	c, err := dial()
	if err != nil {
		oc.Err = "connect: " + err.Error()
		return oc
	}
	defer c.Close()
	sid, sus := c.SessionID(), c.Suspensions()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	t0 := time.Now()
	kids, _, err := c.Children(cctx, wideParent)
	oc.Took = time.Since(t0)
	cancel()
	oc.Listed = len(kids)
	if err != nil {
		oc.Err = err.Error()
	}
	cctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	_, _, gerr := c.Get(cctx, wideParent)
	cancel()
	oc.Reconnects = int(c.Suspensions() - sus)
	switch {
	case gerr != nil:
		oc.SessionKept = "getData failed: " + gerr.Error()
	case c.SessionID() == sid:
		oc.SessionKept = "yes (getData ok, same session)"
	default:
		oc.SessionKept = "getData ok on a new session"
	}
	oc.Health = health()
	return oc
}

// wideGozk does the same with go-zookeeper, with maxBuf as its
// WithMaxBufferSize (0: its default, no limit).
func wideGozk(ctx context.Context, addr string, health func() string, label string, maxBuf int) outcome {
	oc := outcome{Client: label}
	var c *gozk.Conn
	var events <-chan gozk.Event
	var err error
	if maxBuf > 0 {
		c, events, err = gozk.Connect([]string{addr}, 30*time.Second, gozk.WithLogger(gozkQuiet{}), gozk.WithMaxBufferSize(maxBuf))
	} else {
		c, events, err = gozk.Connect([]string{addr}, 30*time.Second, gozk.WithLogger(gozkQuiet{}))
	}
	if err != nil {
		oc.Err = "connect: " + err.Error()
		return oc
	}
	defer c.Close()
	var mu sync.Mutex
	disconnects := 0
	go func() {
		for ev := range events {
			if ev.Type == gozk.EventSession && ev.State == gozk.StateDisconnected {
				mu.Lock()
				disconnects++
				mu.Unlock()
			}
		}
	}()
	deadline := time.Now().Add(15 * time.Second)
	for c.State() != gozk.StateHasSession {
		if time.Now().After(deadline) || ctx.Err() != nil {
			oc.Err = "no session"
			return oc
		}
		time.Sleep(time.Millisecond)
	}
	sid := c.SessionID()
	type res struct {
		kids []string
		err  error
	}
	done := make(chan res, 1)
	t0 := time.Now()
	go func() {
		kids, _, err := c.Children(wideParent)
		done <- res{kids, err}
	}()
	select {
	case x := <-done:
		oc.Took = time.Since(t0)
		oc.Listed = len(x.kids)
		if x.err != nil {
			oc.Err = x.err.Error()
		}
	case <-time.After(time.Minute):
		oc.Took = time.Since(t0)
		oc.Err = "no answer within a minute"
	}
	gdone := make(chan error, 1)
	go func() { _, _, err := c.Get(wideParent); gdone <- err }()
	select {
	case gerr := <-gdone:
		switch {
		case gerr != nil:
			oc.SessionKept = "getData failed: " + gerr.Error()
		case c.SessionID() == sid:
			oc.SessionKept = "yes (getData ok, same session)"
		default:
			oc.SessionKept = "getData ok on a new session"
		}
	case <-time.After(30 * time.Second):
		oc.SessionKept = "getData: no answer within 30 s"
	}
	mu.Lock()
	oc.Reconnects = disconnects
	mu.Unlock()
	oc.Health = health()
	return oc
}

type gozkQuiet struct{}

func (gozkQuiet) Printf(string, ...any) {}

// runTool runs argv (in its own process group, killed after timeout) and
// returns its output and how long it ran.
func runTool(ctx context.Context, timeout time.Duration, env []string, argv ...string) (out []byte, took time.Duration, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(timeout):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = fmt.Errorf("still running after %v (killed)", timeout)
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = ctx.Err()
	}
	return buf.Bytes(), time.Since(t0), err
}

// interesting returns the lines of out that say what went wrong (at most
// a few, each cut short).
func interesting(out []byte) string {
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "at ") || strings.Contains(l, "item-") || strings.HasPrefix(l, "SLF4J:") {
			continue
		}
		ll := strings.ToLower(l)
		if strings.Contains(ll, "exception") || strings.Contains(ll, "error") || strings.Contains(ll, "packet len") ||
			strings.Contains(ll, "connectionloss") || strings.Contains(ll, "failed") || strings.Contains(ll, "too large") {
			if len(l) > 240 {
				l = l[:240] + "…"
			}
			if !slices.Contains(keep, l) {
				keep = append(keep, l)
			}
		}
		if len(keep) == 4 {
			break
		}
	}
	return strings.Join(keep, " / ")
}

// wideZkCli runs Apache's zkCli.sh "ls /wide" once (a JVM start included
// in the time) with extra JVM flags in CLIENT_JVMFLAGS.
func wideZkCli(ctx context.Context, addr string, health func() string, label, jvmFlags string) outcome {
	oc := outcome{Client: label}
	const cli = "/usr/share/zookeeper/bin/zkCli.sh"
	if _, err := os.Stat(cli); err != nil {
		oc.Err = "not run: " + err.Error()
		return oc
	}
	var env []string
	if jvmFlags != "" {
		env = append(env, "CLIENT_JVMFLAGS="+jvmFlags)
	}
	out, took, err := runTool(ctx, 2*time.Minute, env, cli, "-server", addr, "ls", wideParent)
	return oneShot(oc, out, took, err, health)
}

// wideJava runs zkCli.sh's class, org.apache.zookeeper.ZooKeeperMain, in
// a JVM of its own with slf4j-simple logging at WARN to stderr, to show
// the client's own log line.
func wideJava(ctx context.Context, addr string, health func() string, label string) outcome {
	oc := outcome{Client: label}
	java, err := apachezk.FindJava()
	if err != nil {
		oc.Err = "not run: " + err.Error()
		return oc
	}
	cp, err := apachezk.Classpath()
	if err != nil {
		oc.Err = "not run: " + err.Error()
		return oc
	}
	out, took, err := runTool(ctx, 2*time.Minute, nil, java, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp,
		"org.apache.zookeeper.ZooKeeperMain", "-server", addr, "ls", wideParent)
	return oneShot(oc, out, took, err, health)
}

// wideCliMt runs the C client's cli_mt -c "ls /wide".
func wideCliMt(ctx context.Context, addr string, health func() string, label string) outcome {
	oc := outcome{Client: label}
	const cli = "/usr/lib/zookeeper/bin/cli_mt"
	if _, err := os.Stat(cli); err != nil {
		oc.Err = "not run: " + err.Error()
		return oc
	}
	out, took, err := runTool(ctx, 2*time.Minute, nil, cli, "-h", addr, "-c", "ls "+wideParent)
	return oneShot(oc, out, took, err, health)
}

// oneShot completes the outcome of a client run as a process of its own
// (a command-line tool): what it listed, what it said, the server's
// health after it.
func oneShot(oc outcome, out []byte, took time.Duration, err error, health func() string) outcome {
	oc.Took = took
	oc.Listed = bytes.Count(out, []byte("item-"))
	msg := interesting(out)
	if err != nil {
		msg = strings.TrimPrefix(msg+" / exit: "+err.Error(), " / ")
	}
	oc.Err = msg
	oc.SessionKept = "n/a (one-shot process)"
	oc.Health = health()
	return oc
}

var serverLogs = []string{"console.log", "zookeeper.log"}

func logOffsets(s *server) map[string]int64 {
	m := map[string]int64{}
	for _, f := range serverLogs {
		if fi, err := os.Stat(filepath.Join(s.dir, f)); err == nil {
			m[f] = fi.Size()
		}
	}
	return m
}

// newLogLines returns the distinct lines the server logged since offsets
// (at most 12, each cut short; not the C client's "old client" notices).
func newLogLines(s *server, offsets map[string]int64) []string {
	var out []string
	for _, f := range serverLogs {
		data, err := os.ReadFile(filepath.Join(s.dir, f))
		if err != nil || int64(len(data)) <= offsets[f] {
			continue
		}
		for _, l := range strings.Split(string(data[offsets[f]:]), "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "at ") || strings.Contains(l, "Connection request from old client") {
				continue
			}
			if len(l) > 300 {
				l = l[:300] + "…"
			}
			if !slices.Contains(out, l) && len(out) < 12 {
				out = append(out, f+": "+l)
			}
		}
	}
	return out
}

// wideReport is the Markdown report: one table with both servers side by
// side (every run's figure, runs in order), then each client's outcome.
func wideReport(rs []wideResult, n int, heap string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nWide parent: %d persistent children of %d bytes under %s (names %s … %s), created pipelined over 16 sessions (2,048 in flight) on a fresh standalone server of each kind (ZooKeeper -Xms%s -Xmx%s; zkgo durable; both forceSync=yes, loopback). Figures per run, in run order.\n\n",
		n, wideData, wideParent, wideName(0), wideName(n-1), heap, heap)
	by := map[string][]wideResult{}
	for _, r := range rs {
		by[r.Server] = append(by[r.Server], r)
	}
	zkr, zgr := by["zookeeper"], by["zkgo"]
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }
	type row struct {
		label string
		f     func(wideResult) (string, float64) // text, value for the ratio (0: none)
	}
	lat := func(f func(wideResult) latStats) func(wideResult) (string, float64) {
		return func(r wideResult) (string, float64) {
			s := f(r)
			t := ms(s.P50) + " / " + ms(s.P99)
			if s.Errors > 0 {
				t += fmt.Sprintf(" (%d errors: %s)", s.Errors, s.Err)
			}
			return t, float64(s.P50)
		}
	}
	rows := []row{
		{"create rate, children/s", func(r wideResult) (string, float64) {
			v := float64(r.N) / r.LoadSec
			return fmt.Sprintf("%.0f (%.1f s)", v, r.LoadSec), v
		}},
		{"RSS before → 5 s after the load, MiB", func(r wideResult) (string, float64) {
			return fmt.Sprintf("%.0f → %.0f", mib(r.RSSBefore), mib(r.RSSAfter)), 0
		}},
		{"RSS growth per child, B", func(r wideResult) (string, float64) {
			v := float64(r.RSSAfter-r.RSSBefore) / float64(r.N)
			return fmt.Sprintf("%.0f", v), v
		}},
		{"Java heap after a full GC, per child, B", func(r wideResult) (string, float64) {
			if r.HeapAfter == 0 {
				return "—", 0
			}
			return fmt.Sprintf("%.0f", float64(r.HeapAfter)/float64(r.N)), 0
		}},
		{"getChildren2 reply frame length, bytes (16 + 4 + N×19 + 68)", func(r wideResult) (string, float64) {
			return fmt.Sprintf("%d", childrenBytes(r.N)), 0
		}},
		{fmt.Sprintf("getChildren of %d, raised limit (%d MiB, zkgo's Go client), p50 / p99 ms of %d", n, wideRaised>>20, wideCalls), lat(func(r wideResult) latStats { return r.Raised })},
		{"  names listed", func(r wideResult) (string, float64) { return fmt.Sprintf("%d", r.RaisedN), 0 }},
		{"  meanwhile, a second session's get p50 / p99 ms", lat(func(r wideResult) latStats { return r.BusyGet })},
		{"  meanwhile, a second session's set p50 / p99 ms", lat(func(r wideResult) latStats { return r.BusySet })},
	}
	for _, m := range []int{10000, 50000} {
		rows = append(rows, row{fmt.Sprintf("getChildren of %d (%d B), p50 / p99 ms of %d", m, childrenBytes(m), wideCalls),
			lat(func(r wideResult) latStats { return r.Small[m] })})
	}
	rows = append(rows,
		row{fmt.Sprintf("getAllChildrenNumber of the parent, p50 / p99 ms of %d", wideCalls), lat(func(r wideResult) latStats { return r.AllNum })},
		row{"  value", func(r wideResult) (string, float64) { return fmt.Sprintf("%d", r.AllNumVal), 0 }},
		row{fmt.Sprintf("exists of the parent, p50 / p99 ms of %d", wideCalls), lat(func(r wideResult) latStats { return r.Exists })},
		row{"  numChildren", func(r wideResult) (string, float64) { return fmt.Sprintf("%d", r.NumChild), 0 }},
		row{fmt.Sprintf("getData of the parent, p50 / p99 ms of %d", wideCalls), lat(func(r wideResult) latStats { return r.GetParent })},
		row{"second session alone, 2 s: get p50 / p99 ms", lat(func(r wideResult) latStats { return r.IdleGet })},
		row{"second session alone, 2 s: set p50 / p99 ms", lat(func(r wideResult) latStats { return r.IdleSet })},
		row{"probe get every 10 ms through the getChildren phases: max ms, errors", func(r wideResult) (string, float64) {
			return fmt.Sprintf("%s, %d", ms(r.ProbeMax), r.ProbeErrs), 0
		}},
		row{"RSS: peak during the getChildren phases → at the end, MiB", func(r wideResult) (string, float64) {
			return fmt.Sprintf("%.0f → %.0f", mib(r.RSSPeak), mib(r.RSSEnd)), 0
		}},
	)
	b.WriteString("| | ZooKeeper | zkgo | zkgo/ZK (median over runs; latencies: p50) |\n|---|--:|--:|--:|\n")
	for _, rw := range rows {
		col := func(rs []wideResult) (string, []float64) {
			var ts []string
			var vs []float64
			for _, r := range rs {
				if r.Err != "" && r.RSSAfter == 0 {
					ts = append(ts, "error")
					continue
				}
				t, v := rw.f(r)
				ts = append(ts, t)
				if v != 0 {
					vs = append(vs, v)
				}
			}
			return strings.Join(ts, "; "), vs
		}
		zt, zv := col(zkr)
		gt, gv := col(zgr)
		ratio := ""
		if len(zv) > 0 && len(gv) > 0 {
			ratio = fmt.Sprintf("%.2f×", median(gv)/median(zv))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", rw.label, zt, gt, ratio)
	}
	b.WriteString("\nEach client's getChildren of the wide parent at its default reply limit (and two raised), per run:\n\n")
	b.WriteString("| server | run | client | names listed | took | error | session afterwards | reconnects | server afterwards |\n|---|--:|---|--:|--:|---|---|--:|---|\n")
	for _, r := range rs {
		for _, oc := range r.Outcomes {
			fmt.Fprintf(&b, "| %s | %d | %s | %d | %s s | %s | %s | %d | %s |\n", r.Server, r.Repeat+1, oc.Client, oc.Listed,
				fmt.Sprintf("%.2f", oc.Took.Seconds()), strings.ReplaceAll(oc.Err, "|", "\\|"), oc.SessionKept, oc.Reconnects, oc.Health)
		}
	}
	b.WriteString("\nServer log lines during those attempts:\n\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "- %s, run %d:", r.Server, r.Repeat+1)
		if len(r.ServerLog) == 0 {
			b.WriteString(" none\n")
			continue
		}
		b.WriteString("\n")
		for _, l := range r.ServerLog {
			fmt.Fprintf(&b, "  - `%s`\n", strings.ReplaceAll(l, "`", "'"))
		}
	}
	for _, r := range rs {
		if r.Err != "" {
			fmt.Fprintf(&b, "\n%s run %d failed: %s\n", r.Server, r.Repeat+1, r.Err)
		}
	}
	return b.String()
}
