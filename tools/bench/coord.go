package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/leader"
	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/zk"
)

// watchLoad: a setter changes one znode that Watchers sessions watch with a
// one-shot data watch (getData with watch); each watcher sets its watch
// again as soon as it is notified, and the next round starts when every
// watcher is notified and watching again. Latency: from sending setData to
// the notification's arrival at each watcher.
type watchLoad struct {
	key      string
	watchers []*Conn
	setter   *Conn
	notify   *series
	last     *series      // time until the last watcher of a round is notified
	t0       atomic.Int64 // round start, UnixNano
	pending  atomic.Int64 // notifications and re-registrations left in this round
	notified atomic.Int64
	n        atomic.Int64 // watchers
	roundEnd chan struct{}
	failed   firstError
}

func (l *watchLoad) params(c *Config) map[string]any {
	return map[string]any{"watchers": c.Watchers, "size": c.Size}
}

func (l *watchLoad) setup(ctx context.Context, e *env) error {
	l.key = e.run + "/watched"
	l.roundEnd = make(chan struct{}, 1)
	if err := check(e.admin.Do(proto.OpCreate, &proto.CreateRequest{Path: l.key, Data: e.payload, ACL: openACL}, nil)); err != nil {
		return err
	}
	l.notify = e.st.add("notify")
	l.last = e.st.addAux("all-notified")
	n := e.cfg.Watchers
	l.n.Store(int64(n))
	conns, err := dialAll(ctx, e.cfg.servers(), n, 32, dialOptions{tls: e.cfg.TLS, timeout: e.cfg.SessionTimeout, onEvent: l.onEvent}, nil)
	if err != nil {
		return err
	}
	l.watchers = conns
	e.keepAlive(conns...)
	setter, err := dial(e.cfg.serverFor(0), dialOptions{tls: e.cfg.TLS, timeout: e.cfg.SessionTimeout})
	if err != nil {
		return err
	}
	l.setter = setter
	// First registration.
	l.pending.Store(int64(n))
	for _, c := range conns {
		if err := l.rewatch(c); err != nil {
			return err
		}
	}
	return l.waitRound(ctx)
}

func (l *watchLoad) rewatch(c *Conn) error {
	return c.Go(proto.OpGetData, &proto.GetDataRequest{Path: l.key, Watch: true}, nil, func(code proto.ErrCode, err error) {
		if err == nil && code != proto.ErrOk {
			err = codeError(code)
		}
		if err != nil {
			l.failed.set(err)
			l.signal()
			return
		}
		l.done1()
	})
}

func (l *watchLoad) onEvent(c *Conn, ev proto.WatcherEvent) {
	if ev.Type != proto.EventNodeDataChanged || ev.Path != l.key {
		return
	}
	now := time.Now().UnixNano()
	d := time.Duration(now - l.t0.Load())
	l.notify.record(d)
	if l.notified.Add(1) == l.n.Load() {
		l.last.record(d)
	}
	if err := l.rewatch(c); err != nil {
		l.failed.set(err)
		l.signal()
	}
	l.done1()
}

func (l *watchLoad) done1() {
	if l.pending.Add(-1) == 0 {
		l.signal()
	}
}

func (l *watchLoad) signal() {
	select {
	case l.roundEnd <- struct{}{}:
	default:
	}
}

func (l *watchLoad) waitRound(ctx context.Context) error {
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-l.roundEnd:
	case <-t.C:
		return fmt.Errorf("watch: %d notifications or re-registrations missing after 30 s", l.pending.Load())
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := l.failed.get(); err != nil {
		return err
	}
	return nil
}

func (l *watchLoad) run(ctx context.Context, e *env) error {
	n := int64(len(l.watchers))
	for ctx.Err() == nil {
		l.notified.Store(0)
		l.pending.Store(2 * n)
		l.t0.Store(time.Now().UnixNano())
		if err := check(l.setter.Do(proto.OpSetData, &proto.SetDataRequest{Path: l.key, Data: e.payload, Version: -1}, nil)); err != nil {
			return err
		}
		if err := l.waitRound(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	return nil
}

func (l *watchLoad) teardown(ctx context.Context, e *env) {
	closeAll(append(l.watchers, l.setter))
}

// sessionsLoad: churn opens and closes sessions as fast as Workers
// goroutines can; idle holds Sessions idle sessions open (pinged) while
// Workers getData requests run on the load connections.
type sessionsLoad struct {
	cycle *series
	get   *series
	idle  []*Conn
	key   string
}

func (l *sessionsLoad) params(c *Config) map[string]any {
	if c.Mode == "idle" {
		return map[string]any{"mode": c.Mode, "sessions": c.Sessions, "connections": c.Connections, "workers": c.Workers}
	}
	return map[string]any{"mode": c.Mode, "workers": c.Workers}
}

func (l *sessionsLoad) unit(c *Config) (string, string) {
	if c.Mode == "idle" {
		return "request", fmt.Sprintf("getData while %d idle sessions are open", c.Sessions)
	}
	return "session", "connect+closeSession"
}

func (l *sessionsLoad) setup(ctx context.Context, e *env) error {
	if e.cfg.Mode == "churn" {
		l.cycle = e.st.add("connect+close")
		return nil
	}
	l.key = e.run + "/k"
	if err := check(e.admin.Do(proto.OpCreate, &proto.CreateRequest{Path: l.key, Data: e.payload, ACL: openACL}, nil)); err != nil {
		return err
	}
	h := newHist()
	var mu sync.Mutex
	t0 := time.Now()
	conns, err := dialAll(ctx, e.cfg.servers(), e.cfg.Sessions, e.cfg.Workers, dialOptions{tls: e.cfg.TLS, timeout: e.cfg.SessionTimeout}, func(_ int, _ *Conn, took time.Duration) {
		mu.Lock()
		h.RecordValue(min(max(int64(took), histLow), histHigh))
		mu.Unlock()
	})
	if err != nil {
		return err
	}
	el := time.Since(t0)
	l.idle = conns
	e.keepAlive(conns...)
	lat := summarize(h)
	e.extra["idle_sessions_opened_per_s"] = float64(len(conns)) / el.Seconds()
	e.extra["idle_session_connect_p50_ms"] = lat.P50
	e.extra["idle_session_connect_p99_ms"] = lat.P99
	l.get = e.st.add("get")
	return e.dialLoad(ctx)
}

func (l *sessionsLoad) run(ctx context.Context, e *env) error {
	if e.cfg.Mode == "idle" {
		req := &proto.GetDataRequest{Path: l.key}
		return e.loop(ctx, nil, func(w *worker) (*series, error) {
			return l.get, check(w.conn.Do(proto.OpGetData, req, nil))
		})
	}
	return e.loop(ctx, nil, func(w *worker) (*series, error) {
		c, err := dial(e.cfg.serverFor(w.id), dialOptions{tls: e.cfg.TLS, timeout: e.cfg.SessionTimeout})
		if err != nil {
			return l.cycle, err
		}
		return l.cycle, c.Close()
	})
}

func (l *sessionsLoad) teardown(ctx context.Context, e *env) { closeAll(l.idle) }

// connectZK opens n sessions of zkgo's Go client, session i on
// cfg.serverFor(i).
func connectZK(ctx context.Context, cfg *Config, n int) ([]*zk.Conn, error) {
	out := make([]*zk.Conn, 0, n)
	for i := 0; i < n; i++ {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		c, err := zk.Connect(cctx, cfg.serverFor(i), zk.WithSessionTimeout(cfg.SessionTimeout), zk.WithTLS(cfg.TLS))
		cancel()
		if err != nil {
			for _, c := range out {
				c.Close()
			}
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func closeZK(cs []*zk.Conn) {
	for _, c := range cs {
		c.Close()
	}
}

// lockLoad: Contenders sessions loop Lock, hold, Unlock on one lock:
// zkgo's recipe/lock Mutex (Curator's InterProcessMutex layout), or with
// -client gozk go-zookeeper's own Lock recipe (a client zkgo did not
// write: its handoffs are a chain of round trips of its own making), or
// with -client curator Apache Curator's InterProcessMutex itself, in a
// JVM (curator.go).
type lockLoad struct {
	conns   []*zk.Conn
	gz      []*gozk.Conn
	jvm     *curatorLock
	acquire *series
}

func (l *lockLoad) params(c *Config) map[string]any {
	return map[string]any{"contenders": c.Contenders, "hold": c.Hold.String()}
}

func (l *lockLoad) setup(ctx context.Context, e *env) error {
	l.acquire = e.st.add("acquire")
	if e.cfg.Client == "curator" {
		j, err := startCuratorLock(ctx, e.cfg, e.run+"/curator-lock")
		if err != nil {
			return err
		}
		l.jvm = j
		return nil
	}
	if e.cfg.Client == "gozk" {
		for i := range e.cfg.Contenders {
			c, err := dialGozk(ctx, e.cfg, e.cfg.serverFor(i))
			if err != nil {
				l.teardown(ctx, e)
				return err
			}
			l.gz = append(l.gz, c)
		}
		return nil
	}
	cs, err := connectZK(ctx, e.cfg, e.cfg.Contenders)
	if err != nil {
		return err
	}
	l.conns = cs
	return nil
}

func (l *lockLoad) run(ctx context.Context, e *env) error {
	if l.jvm != nil {
		return l.jvm.run(ctx, e, l.acquire)
	}
	if l.gz != nil {
		return l.runGozk(ctx, e)
	}
	path := e.run + "/lock"
	var wg sync.WaitGroup
	var first firstError
	for _, c := range l.conns {
		m := lock.NewMutex(c, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				_, err := m.Lock(ctx)
				if err != nil {
					if ctx.Err() == nil {
						first.set(err)
					}
					return
				}
				l.acquire.record(time.Since(t0))
				if e.cfg.Hold > 0 {
					time.Sleep(e.cfg.Hold)
				}
				uctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err = m.Unlock(uctx)
				cancel()
				if err != nil {
					first.set(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	err := first.get()
	return err
}

// runGozk is run with go-zookeeper's Lock. It has no context: a Lock
// waiting when the run ends returns once the holder unlocks, and the
// holders stop.
func (l *lockLoad) runGozk(ctx context.Context, e *env) error {
	path := e.run + "/gozk-lock"
	var wg sync.WaitGroup
	var first firstError
	for _, c := range l.gz {
		m := gozk.NewLock(c, path, gozk.WorldACL(gozk.PermAll))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				if err := m.Lock(); err != nil {
					first.set(fmt.Errorf("go-zookeeper Lock: %w", err))
					return
				}
				l.acquire.record(time.Since(t0))
				if e.cfg.Hold > 0 {
					time.Sleep(e.cfg.Hold)
				}
				if err := m.Unlock(); err != nil {
					first.set(fmt.Errorf("go-zookeeper Unlock: %w", err))
					return
				}
			}
		}()
	}
	wg.Wait()
	return first.get()
}

func (l *lockLoad) teardown(ctx context.Context, e *env) {
	if l.jvm != nil {
		l.jvm.stop()
	}
	closeZK(l.conns)
	for _, c := range l.gz {
		c.Close()
	}
}

// latchLoad: two LeaderLatches; the leader closes (graceful handover) and
// the time until the other one leads is measured; the closed one then
// rejoins behind the new leader.
type latchLoad struct {
	conns    []*zk.Conn
	handover *series
}

func (l *latchLoad) params(c *Config) map[string]any { return map[string]any{"participants": 2} }

func (l *latchLoad) setup(ctx context.Context, e *env) error {
	cs, err := connectZK(ctx, e.cfg, 2)
	if err != nil {
		return err
	}
	l.conns = cs
	l.handover = e.st.add("handover")
	return nil
}

func (l *latchLoad) run(ctx context.Context, e *env) error {
	path := e.run + "/latch"
	bg := context.Background()
	latches := []*leader.Latch{leader.NewLatch(l.conns[0], path, "a"), leader.NewLatch(l.conns[1], path, "b")}
	defer func() {
		for _, lt := range latches {
			cctx, cancel := context.WithTimeout(bg, 10*time.Second)
			lt.Close(cctx)
			cancel()
		}
	}()
	latches[0].Start()
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err := latches[0].Await(actx)
	cancel()
	if err != nil {
		return err
	}
	latches[1].Start()
	if err := waitParticipants(ctx, latches[0], 2); err != nil {
		return err
	}
	lead := 0
	for i := 0; ctx.Err() == nil; i++ {
		other := 1 - lead
		t0 := time.Now()
		cctx, cancel := context.WithTimeout(bg, 30*time.Second)
		if err := latches[lead].Close(cctx); err != nil {
			cancel()
			return err
		}
		_, err := latches[other].Await(cctx)
		cancel()
		if err != nil {
			return err
		}
		l.handover.record(time.Since(t0))
		latches[lead] = leader.NewLatch(l.conns[lead], path, fmt.Sprint(i))
		latches[lead].Start()
		if err := waitParticipants(ctx, latches[other], 2); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		lead = other
	}
	return nil
}

// waitParticipants waits until the election has n participants.
func waitParticipants(ctx context.Context, l *leader.Latch, n int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ps, err := l.Participants(ctx)
		if err != nil {
			return err
		}
		if len(ps) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("latch: %d participants after 30 s, want %d", len(ps), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (l *latchLoad) teardown(ctx context.Context, e *env) { closeZK(l.conns) }

// selectorLoad: Participants LeaderSelectors with auto-requeue take turns;
// each turn holds leadership for Hold. Latency: from the end of one turn
// to the start of the next (the handover).
type selectorLoad struct {
	conns   []*zk.Conn
	turn    *series
	lastEnd atomic.Int64
}

func (l *selectorLoad) params(c *Config) map[string]any {
	return map[string]any{"participants": c.Participants, "hold": c.Hold.String()}
}

func (l *selectorLoad) setup(ctx context.Context, e *env) error {
	cs, err := connectZK(ctx, e.cfg, e.cfg.Participants)
	if err != nil {
		return err
	}
	l.conns = cs
	l.turn = e.st.add("turn")
	return nil
}

func (l *selectorLoad) run(ctx context.Context, e *env) error {
	path := e.run + "/selector"
	var sels []*leader.Selector
	for i, c := range l.conns {
		s := leader.NewSelector(c, path, fmt.Sprint(i), func(fctx context.Context, g *recipe.Grant) error {
			start := time.Now()
			if last := l.lastEnd.Load(); last != 0 {
				l.turn.record(start.Sub(time.Unix(0, last)))
			}
			if e.cfg.Hold > 0 {
				select {
				case <-time.After(e.cfg.Hold):
				case <-fctx.Done():
				}
			}
			l.lastEnd.Store(time.Now().UnixNano())
			return nil
		}, leader.WithAutoRequeue())
		sels = append(sels, s)
	}
	for _, s := range sels {
		if err := s.Start(); err != nil {
			return err
		}
	}
	<-ctx.Done()
	for _, s := range sels {
		s.Close()
	}
	for _, s := range sels {
		if err := s.Err(); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, recipe.ErrClosed) {
			return err
		}
	}
	return nil
}

func (l *selectorLoad) teardown(ctx context.Context, e *env) { closeZK(l.conns) }
