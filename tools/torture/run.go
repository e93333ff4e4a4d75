package torture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/tools/torture/check"
	"github.com/zkgo/zkgo/tools/torture/faultnet"
	"github.com/zkgo/zkgo/zk"
)

// Config is one torture run.
type Config struct {
	// Binary is a zkgo built with -tags zkgofaults (its server reads the
	// fault controls from the environment); the members run it.
	Binary string
	// Dir receives the members' data and logs, and the report.
	Dir string
	// Members is the ensemble's size (3 or 5).
	Members int
	// Duration is how long faults are injected; the clients run through it
	// and a quiet phase after it.
	Duration time.Duration
	// Seed chooses the schedule (0: a random one, reported).
	Seed uint64
	// Kinds are the fault kinds to use (nil: all).
	Kinds []Kind
	// SessionTimeout is the clients' session timeout (default 3 s).
	SessionTimeout time.Duration
	// Logger receives progress (nil: discarded).
	Logger *slog.Logger
	// Break makes workloads misbehave on purpose, to show that the
	// checkers catch it (tests only): "fence" — a lock client writes its
	// token to the fence once more after its hold ended, unconditionally
	// (a holder that ignores the fence); "read" — a register client
	// records one read in fifty with data nobody wrote (a forged
	// response); "fifo" — the raw session records two replies in one
	// batch in one in fifty as come in the other order. Comma-separated.
	Break string
}

// env is what workloads get from a run.
type env struct {
	start     time.Time
	seed      uint64
	rec       *check.Recorder
	connect   func(ctx context.Context, client int, opts ...zk.Option) (*zk.Conn, error)
	direct    string   // every member's client address, not proxied
	clientVia []string // client k's connection string (its proxies)
	ops       *opCounter
	timeout   time.Duration   // session timeout
	broken    map[string]bool // Config.Break
	log       *slog.Logger
	dir       string

	gate atomic.Pointer[gate] // ClientPause's trap, when armed
	// lastLock is when a lock client last acquired the lock (Recorder
	// time), for ClientPause's note when no holder came.
	lastLock atomic.Int64
}

// workload is one family of clients with its own checker(s). start runs
// in its own goroutines until ctx ends; check runs after every client has
// stopped and the ensemble is healthy again.
type workload interface {
	name() string
	clients() int
	start(ctx context.Context, env *env, firstClient int, wg *sync.WaitGroup)
	check(ctx context.Context, env *env) []check.Result
}

// Run runs one torture run and returns its report (also written to
// cfg.Dir). The error is for a run that could not be carried out (the
// ensemble did not start); a checker's violation is in the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Members == 0 {
		cfg.Members = 3
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 3 * time.Second
	}
	if cfg.Kinds == nil {
		cfg.Kinds = AllKinds()
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	works := defaultWorkloads()
	nclients := 0
	for _, w := range works {
		nclients += w.clients()
	}
	sched := NewSchedule(cfg.Seed, cfg.Duration, cfg.Kinds, cfg.Members, nclients, cfg.SessionTimeout)
	rep := &Report{Seed: cfg.Seed, Members: cfg.Members, Clients: nclients, Duration: cfg.Duration, Started: time.Now()}
	for _, f := range sched.Faults {
		rep.Schedule = append(rep.Schedule, f.String())
	}
	log.Info("torture: schedule", "seed", cfg.Seed, "faults", len(sched.Faults), "dir", cfg.Dir)

	fn := faultnet.New(cfg.Seed, nil)
	defer fn.Close()
	e, err := newEnsemble(cfg.Binary, cfg.Dir, cfg.Members, nclients, fn, "")
	if err != nil {
		return nil, err
	}
	defer e.stopAll()
	for i := 0; i < cfg.Members; i++ {
		if err := e.start(i); err != nil {
			return nil, err
		}
	}
	clientAddrs := e.clientVia
	direct := strings.Join(e.clientAddrs, ",")
	if err := waitWritable(ctx, direct, 60*time.Second); err != nil {
		return nil, fmt.Errorf("the ensemble did not start: %w (logs in %s)", err, cfg.Dir)
	}

	if err := setupTree(ctx, direct); err != nil {
		return nil, fmt.Errorf("creating the workloads' znodes: %w", err)
	}

	var mu sync.Mutex // guards rep.Events and rep.Notes from the helpers' goroutines
	start := time.Now()
	ev := &env{
		start: start,
		seed:  cfg.Seed,
		rec:   check.NewRecorder(start),
		connect: func(ctx context.Context, client int, opts ...zk.Option) (*zk.Conn, error) {
			opts = append([]zk.Option{zk.WithSessionTimeout(cfg.SessionTimeout)}, opts...)
			return zk.Connect(ctx, clientAddrs[client], opts...)
		},
		direct:    direct,
		clientVia: clientAddrs,
		ops:       newOpCounter(start),
		timeout:   cfg.SessionTimeout,
		broken:    map[string]bool{},
		log:       log,
		dir:       cfg.Dir,
	}
	for _, b := range strings.Split(cfg.Break, ",") {
		if b != "" {
			ev.broken[b] = true
		}
	}
	event := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		what := fmt.Sprintf(format, args...)
		rep.Events = append(rep.Events, Event{At: time.Since(start), What: what})
		log.Info("torture: " + what)
	}
	note := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		rep.Notes = append(rep.Notes, fmt.Sprintf(format, args...))
	}

	// The clients run from now until the quiet phase after the faults.
	wctx, stopClients := context.WithCancel(ctx)
	var wg sync.WaitGroup
	first := 0
	for _, w := range works {
		w.start(wctx, ev, first, &wg)
		first += w.clients()
	}

	minority := check.Result{Name: "minority", OK: true}
	in := &injector{e: e, clients: nclients, rng: rand.New(rand.NewPCG(cfg.Seed, 2)), event: event, note: note, freeze: ev.freeze}
	for _, f := range sched.Faults {
		if err := sleepUntil(ctx, start.Add(f.At)); err != nil {
			break
		}
		desc, undo, err := in.apply(ctx, f)
		if err != nil {
			note("%v: not applied: %v", f, err)
			continue
		}
		event("fault: %v: %s", f.Kind, desc)
		// Availability during the fault: how long until a write is
		// acknowledged (the failover time when the fault took the
		// leader away).
		during := make(chan time.Duration, 1)
		pctx, stopProbe := context.WithDeadline(ctx, start.Add(f.At+f.For))
		go func() { during <- recoverTime(pctx, direct, f.For) }()
		// A member cut off from the majority serves nobody: once it had
		// time to notice (an election timeout and then some), a session
		// asked of it directly is refused.
		if ms := in.minorityOf(f, desc); len(ms) > 0 && f.For > minorityGrace+time.Second {
			sleepUntil(ctx, start.Add(f.At+minorityGrace))
			for _, m := range ms {
				minority.Checked++
				if c, err := rawzk.Dial(e.clientAddrs[m], rawzk.Options{Timeout: cfg.SessionTimeout}); err == nil {
					c.Close()
					if minority.OK {
						minority.OK = false
						minority.Problem = fmt.Sprintf("member %d, cut off from the majority for %v, accepted a session", m+1, minorityGrace)
						minority.Evidence = []string{f.String()}
					}
				}
			}
		}
		sleepUntil(ctx, start.Add(f.At+f.For))
		stopProbe()
		failover := <-during
		if err := undo(); err != nil {
			note("%v: not removed cleanly: %v", f, err)
		}
		event("healed: %v", f.Kind)
		took := recoverTime(ctx, direct, 10*time.Second)
		rep.Recoveries = append(rep.Recoveries, Recovery{Fault: f.String(), During: failover, Took: took})
		if took >= 0 {
			event("writes acknowledged again %v after the fault's removal", took.Round(time.Millisecond))
		}
		// Members that stopped by themselves outside a disk fault are
		// findings too; start them again so the run goes on.
		for i := 0; i < e.n; i++ {
			if stopped, err := e.exited(i); stopped && err != nil && ctx.Err() == nil {
				note("member %d exited (%v) after %v; started again", i+1, err, f)
				e.start(i)
			}
		}
	}
	sleepUntil(ctx, start.Add(cfg.Duration))
	fn.HealAll()
	// Every member runs again (a last disk fault or kill is undone above).
	for i := 0; i < e.n; i++ {
		if !e.running(i) {
			e.start(i)
		}
	}
	// A quiet phase: the clients go on against a healthy ensemble, so
	// that what the faults broke shows in their histories.
	event("quiet phase")
	sleepUntil(ctx, time.Now().Add(3*time.Second))
	stopClients()
	wg.Wait()
	event("clients stopped")

	if err := waitWritable(ctx, direct, 30*time.Second); err != nil {
		note("the ensemble did not take writes after the run: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for _, w := range works {
		t := time.Now()
		res := w.check(cctx, ev)
		log.Info("torture: checked", "workload", w.name(), "took", time.Since(t).Round(time.Millisecond))
		rep.Results = append(rep.Results, res...)
	}
	minority.Notes = append(minority.Notes, fmt.Sprintf("%d sessions asked of members cut off from the majority for %v", minority.Checked, minorityGrace))
	rep.Results = append(rep.Results, minority)
	rep.Results = append(rep.Results, leftoverSessions(ctx, e, cfg.SessionTimeout))
	rep.Seconds, rep.Ops = ev.ops.seconds()
	rep.Elapsed = time.Since(rep.Started)
	if _, err := rep.Write(cfg.Dir); err != nil {
		return rep, err
	}
	return rep, nil
}

// minorityGrace is how long a member cut off from the majority may go on
// serving clients before it notices: several election timeouts (10 raft
// ticks of tickTime 100 ms; raft's check-quorum makes an isolated leader
// step down within one).
const minorityGrace = 3 * time.Second

// gate is the ClientPause fault's trap: the first client to reach a pause
// point while it is armed is frozen there until wake is closed.
type gate struct {
	client int           // who was caught (set before caught is closed)
	caught chan struct{} // closed when a client is frozen
	wake   chan struct{} // closed to let it go
}

// pausePoint freezes the calling client if ClientPause has armed the gate
// and no other client was caught yet.
func (e *env) pausePoint(client int) {
	g := e.gate.Swap(nil)
	if g == nil {
		return
	}
	g.client = client
	close(g.caught)
	<-g.wake
}

// freeze arms the gate and waits until a client is caught; it returns
// the client and what wakes it, or why none came. Lock handoffs stall
// after some faults (a holder's node stays until its session is gone),
// so it waits up to a few session timeouts.
func (e *env) freeze(ctx context.Context) (client int, resume func(), err error) {
	wait := max(15*time.Second, 3*e.timeout)
	g := &gate{caught: make(chan struct{}), wake: make(chan struct{})}
	e.gate.Store(g)
	select {
	case <-g.caught:
		return g.client, func() { close(g.wake) }, nil
	case <-time.After(wait):
	case <-ctx.Done():
	}
	if e.gate.CompareAndSwap(g, nil) {
		last := "no lock was taken yet"
		if at := e.lastLock.Load(); at != 0 {
			last = fmt.Sprintf("the lock was last taken at %v", time.Duration(at).Round(time.Millisecond))
		}
		// Where the lock clients are: every goroutine's stack.
		name := filepath.Join(e.dir, fmt.Sprintf("goroutines-%v.txt", time.Duration(e.rec.Now()).Round(time.Millisecond)))
		if f, err := os.Create(name); err == nil {
			pprof.Lookup("goroutine").WriteTo(f, 2)
			f.Close()
			last += "; goroutines in " + filepath.Base(name)
		}
		if q := e.lockQueue(ctx); q != "" {
			last += "; the lock's queue: " + q
		}
		return 0, nil, fmt.Errorf("no lock holder reached a fenced write within %v (%s)", wait, last)
	}
	<-g.caught // caught just now
	return g.client, func() { close(g.wake) }, nil
}

// setupTree creates the workloads' parents before any client starts (a
// watch on a parent must not see the parent's own creation).
func setupTree(ctx context.Context, servers string) error {
	c, err := zk.Connect(ctx, servers)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, p := range []string{root + "/reg", root + "/seq", root + "/eph", watchRoot, root + "/sess", fifoRoot, root + "/lock", root + "/latch"} {
		if err := c.EnsurePath(ctx, p, zk.OpenACLUnsafe); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	if _, err := c.Create(ctx, fencePath, []byte("0"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitWritable waits until a write through servers is acknowledged.
func waitWritable(ctx context.Context, servers string, limit time.Duration) error {
	if took := recoverTime(ctx, servers, limit); took < 0 {
		return fmt.Errorf("no write acknowledged within %v", limit)
	}
	return nil
}

// recoverTime measures how long until a write through servers (direct
// addresses) is acknowledged: -1 if none is within limit.
func recoverTime(ctx context.Context, servers string, limit time.Duration) time.Duration {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for ctx.Err() == nil {
		attempt, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		c, err := zk.Connect(attempt, servers, zk.WithSessionTimeout(4*time.Second))
		if err == nil {
			_, err = c.Create(attempt, "/torture-probe", nil, zk.OpenACLUnsafe, zk.ModePersistent)
			if errors.Is(err, zk.ErrNodeExists) {
				_, err = c.Set(attempt, "/torture-probe", nil, zk.AnyVersion)
			}
			c.Close()
		}
		cancelAttempt()
		if err == nil {
			return time.Since(start)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	return -1
}

// opCounter counts client operations per second of the run.
type opCounter struct {
	start time.Time
	mu    sync.Mutex // guards ok and failed
	ok    []int
	fail  []int
}

func newOpCounter(start time.Time) *opCounter { return &opCounter{start: start} }

// done counts one operation ending now; answered is false for one that
// got no answer (connection loss, timeout, expiry).
func (c *opCounter) done(answered bool) {
	s := int(time.Since(c.start) / time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.ok) <= s {
		c.ok = append(c.ok, 0)
		c.fail = append(c.fail, 0)
	}
	if answered {
		c.ok[s]++
	} else {
		c.fail[s]++
	}
}

func (c *opCounter) seconds() ([]Second, OpCounts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Second
	var n OpCounts
	for i := range c.ok {
		out = append(out, Second{OK: c.ok[i], Failed: c.fail[i]})
		n.OK += c.ok[i]
		n.Failed += c.fail[i]
	}
	n.Total = n.OK + n.Failed
	return out, n
}

// answered reports whether err is an answer the ensemble decided (nil,
// NoNode, BadVersion, ...), as opposed to none (connection loss, timeout,
// expiry, a cancelled request).
func answered(err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, zk.ErrConnectionLoss), errors.Is(err, zk.ErrSessionExpired),
		errors.Is(err, zk.ErrOperationTimeout), errors.Is(err, zk.ErrRequestTimeout),
		errors.Is(err, zk.ErrClosing), errors.Is(err, zk.ErrSessionMoved),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return false
	}
	if check.OutcomeOf(err) != check.Unknown {
		return true // a definite refusal, from either client
	}
	var ze *zk.Error
	return errors.As(err, &ze)
}

// leftoverSessions checks, once every client and checker has stopped,
// that the ensemble forgets every session within a bound: the clients
// closed theirs or stopped pinging, so each must end by a closeSession
// or by expiry (the session timeout, plus a retry of a closeSession lost
// in a change of leader, plus slack). A session that outlives its client
// keeps its ephemerals — a lock holder's node — for good.
func leftoverSessions(ctx context.Context, e *ensemble, timeout time.Duration) check.Result {
	res := check.Result{Name: "sessions-end", OK: true}
	bound := 2*max(timeout, 2*time.Second) + 10*time.Second
	deadline := time.Now().Add(bound)
	last := ""
	for {
		n, where := -1, ""
		for i := 0; i < e.n && n < 0; i++ {
			out, err := e.fourLetter(i, "mntr", time.Second)
			if err != nil {
				continue
			}
			for _, line := range strings.Split(out, "\n") {
				if v, ok := strings.CutPrefix(line, "zk_global_sessions\t"); ok {
					if k, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
						n, where = k, fmt.Sprintf("member %d", i+1)
					}
				}
			}
		}
		res.Checked = max(n, 0)
		if n == 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("every session ended within %v of the clients stopping", bound))
			return res
		}
		if n > 0 {
			last = fmt.Sprintf("%d sessions (%s's count)", n, where)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			res.OK = false
			if last == "" {
				last = "no member answered mntr"
			}
			res.Problem = fmt.Sprintf("%s still open %v after every client stopped: a session outlived its client", last, bound)
			if out, err := e.fourLetter(max(e.leader(), 0), "dump", time.Second); err == nil {
				res.Evidence = strings.Split(strings.TrimSpace(out), "\n")
			}
			return res
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lockQueue describes the lock workload's queue as a fresh session sees
// it: each node with its owner session and age ("" if it cannot be read).
func (e *env) lockQueue(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := zk.Connect(ctx, e.direct)
	if err != nil {
		return ""
	}
	defer c.Close()
	kids, _, err := c.Children(ctx, root+"/lock")
	if err != nil {
		return ""
	}
	sort.Strings(kids)
	var parts []string
	for _, k := range kids {
		st, err := c.Exists(ctx, root+"/lock/"+k)
		if err != nil || st == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s owner %#x czxid %#x age %v", k[max(0, len(k)-15):], st.EphemeralOwner, st.Czxid,
			time.Since(time.UnixMilli(st.Ctime)).Round(time.Second)))
	}
	return strings.Join(parts, ", ")
}
