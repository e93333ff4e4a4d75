package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/proto"
)

var registry = []workloadDef{
	{WorkloadInfo{"get", "getData of -keys keys chosen uniformly (-keys 1: one hot key)", "request", "request"}, true, func() workload { return &kvLoad{kind: "get"} }},
	{WorkloadInfo{"set", "setData of -size bytes on -keys keys chosen uniformly", "request", "request"}, true, func() workload { return &kvLoad{kind: "set"} }},
	{WorkloadInfo{"create", "create znodes of -size bytes (-mode persistent or ephemeral-sequential)", "request", "request"}, true, func() workload { return &createLoad{} }},
	{WorkloadInfo{"delete", "delete -count znodes created beforehand (ends early when all are gone)", "request", "request"}, true, func() workload { return &deleteLoad{} }},
	{WorkloadInfo{"children", "getChildren of a znode with -children children", "request", "request"}, true, func() workload { return &childrenLoad{} }},
	{WorkloadInfo{"multi", "multi of -multi-ops setData ops on one worker's znodes", "request", "request"}, true, func() workload { return &multiLoad{} }},
	{WorkloadInfo{"mixed", "getData and setData on -keys keys, -ratio reads per write", "request", "request"}, true, func() workload { return &kvLoad{kind: "mixed"} }},
	{WorkloadInfo{"watch", "setData of a znode watched by -watchers sessions; each re-watches when notified", "notification", "setData sent → watcher notified"}, false, func() workload { return &watchLoad{} }},
	{WorkloadInfo{"sessions", "-mode churn: connect+close; -mode idle: getData while -sessions idle sessions are open", "session", "connect+closeSession"}, false, func() workload { return &sessionsLoad{} }},
	{WorkloadInfo{"lock", "-contenders sessions take turns at one lock (recipe/lock Mutex, Curator's InterProcessMutex)", "handoff", "wait for the lock"}, false, func() workload { return &lockLoad{} }},
	{WorkloadInfo{"latch", "graceful leader handover between two LeaderLatches (recipe/leader)", "handover", "leader's Close → follower leads"}, false, func() workload { return &latchLoad{} }},
	{WorkloadInfo{"selector", "-participants LeaderSelectors take turns (auto-requeue), each holding -hold", "turn", "end of one turn → start of the next"}, false, func() workload { return &selectorLoad{} }},
}

var openACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}

// ensure creates path (a persistent, empty znode) unless it exists.
func ensure(c *Conn, path string) error {
	code, err := c.Do(proto.OpCreate, &proto.CreateRequest{Path: path, ACL: openACL}, nil)
	if err != nil {
		return err
	}
	if code != proto.ErrOk && code != proto.ErrNodeExists {
		return fmt.Errorf("create %s: %v", path, code)
	}
	return nil
}

// bulk sends n requests, spread over conns, at most window at a time, and
// waits for them. ok lists the error codes accepted besides ErrOk.
func bulk(ctx context.Context, conns []*Conn, n, window int, mk func(i int) (proto.OpCode, proto.Record), ok ...proto.ErrCode) error {
	if n == 0 {
		return nil
	}
	sem := make(chan struct{}, window)
	var wg sync.WaitGroup
	var first firstError
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		if first.get() != nil {
			<-sem
			break
		}
		op, req := mk(i)
		wg.Add(1)
		err := conns[i%len(conns)].Go(op, req, nil, func(code proto.ErrCode, err error) {
			if err == nil && code != proto.ErrOk {
				accepted := false
				for _, c := range ok {
					accepted = accepted || c == code
				}
				if !accepted {
					err = fmt.Errorf("%v", code)
				}
			}
			if err != nil {
				first.set(err)
			}
			<-sem
			wg.Done()
		})
		if err != nil {
			wg.Done()
			<-sem
			first.set(err)
		}
	}
	wg.Wait()
	if err := first.get(); err != nil {
		return err
	}
	return nil
}

// deleteTree deletes path and its descendants, listing the znodes of the
// first depth levels below path (deeper znodes must be leaves). It is
// best effort and bounded in time by the connection's replies.
func deleteTree(c *Conn, path string, depth int) error {
	levels := [][]string{{path}}
	for d := 0; d < depth; d++ {
		var next []string
		var mu sync.Mutex
		parents := levels[d]
		var firstErr error
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for _, p := range parents {
			sem <- struct{}{}
			wg.Add(1)
			resp := &proto.GetChildrenResponse{}
			err := c.Go(proto.OpGetChildren, &proto.GetChildrenRequest{Path: p}, resp, func(code proto.ErrCode, err error) {
				defer func() { <-sem; wg.Done() }()
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				if code != proto.ErrOk {
					return
				}
				mu.Lock()
				for _, ch := range resp.Children {
					next = append(next, p+"/"+ch)
				}
				mu.Unlock()
			})
			if err != nil {
				wg.Done()
				return err
			}
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		if len(next) == 0 {
			break
		}
		levels = append(levels, next)
	}
	for d := len(levels) - 1; d >= 0; d-- {
		ps := levels[d]
		err := bulk(context.Background(), []*Conn{c}, len(ps), 512, func(i int) (proto.OpCode, proto.Record) {
			return proto.OpDelete, &proto.DeleteRequest{Path: ps[i], Version: -1}
		}, proto.ErrNoNode, proto.ErrNotEmpty)
		if err != nil {
			return err
		}
	}
	return nil
}

// dialAll opens n sessions, par at a time; session i connects to
// addrs[i mod len(addrs)]. With several addresses (an ensemble), each
// session then syncs its member with the leader (not timed), so that its
// reads see what was written through another member before it connected.
func dialAll(ctx context.Context, addrs []string, n, par int, o dialOptions, each func(i int, c *Conn, took time.Duration)) ([]*Conn, error) {
	conns := make([]*Conn, n)
	var wg sync.WaitGroup
	var first firstError
	var next atomic.Int64
	if par > n {
		par = n
	}
	for g := 0; g < par; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil || first.get() != nil {
					return
				}
				t0 := time.Now()
				c, err := dial(addrs[i%len(addrs)], o)
				if err != nil {
					first.set(err)
					return
				}
				took := time.Since(t0)
				conns[i] = c
				if len(addrs) > 1 {
					if err := check(c.Do(proto.OpSync, &proto.SyncRequest{Path: "/"}, nil)); err != nil {
						first.set(fmt.Errorf("sync on %s: %w", addrs[i%len(addrs)], err))
						return
					}
				}
				if each != nil {
					each(i, c, took)
				}
			}
		}()
	}
	wg.Wait()
	err := first.get()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		closeAll(conns)
		return nil, err
	}
	return conns, nil
}

// closeAll closes sessions concurrently (closeSession, then the socket),
// waiting at most a minute.
func closeAll(conns []*Conn) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for _, c := range conns {
		if c == nil {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		c.CloseAsync(func(error) { <-sem; wg.Done() })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
	}
}

// dialLoad opens the load connections of a request workload.
func (e *env) dialLoad(ctx context.Context) error {
	cs, err := dialAll(ctx, e.cfg.servers(), e.cfg.Connections, 16, dialOptions{tls: e.cfg.TLS, timeout: e.cfg.SessionTimeout}, nil)
	if err != nil {
		return err
	}
	e.conns = cs
	return nil
}

// worker is one closed- or open-loop request generator.
type worker struct {
	id   int
	conn *Conn
	kv   kvClient
	rng  *rand.Rand
	n    int // operations started
}

// opFunc performs one operation and returns the series it belongs to.
// A codeError counts as a failed operation; errStop ends the worker; any
// other error ends the run.
type opFunc func(w *worker) (*series, error)

// loop runs cfg.Workers workers until ctx is done (or all of them stop).
func (e *env) loop(ctx context.Context, prepare func(w *worker), op opFunc) error {
	n := e.cfg.Workers
	var interval time.Duration
	if e.cfg.Rate > 0 {
		interval = time.Duration(float64(n) / e.cfg.Rate * float64(time.Second))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var first firstError
	start := time.Now()
	for i := 0; i < n; i++ {
		w := &worker{id: i, rng: rand.New(rand.NewPCG(uint64(i)+1, uint64(start.UnixNano())))}
		if len(e.conns) > 0 {
			w.conn = e.conns[i%len(e.conns)]
		}
		if prepare != nil {
			prepare(w)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Open loop: worker i's k-th request is due at
			// start + (k + i/n) * interval.
			next := start.Add(interval * time.Duration(i) / time.Duration(n))
			for ctx.Err() == nil {
				var t0 time.Time
				if interval > 0 {
					// A worker behind its schedule (its previous
					// reply came late) measures from when the
					// request was due: the server's delay counts
					// (no coordinated omission). A worker that
					// slept measures from its wake-up: a Go
					// timer fires up to ~1 ms late in an idle
					// process (the runtime waits in epoll with a
					// millisecond timeout), a delay of this
					// process that is not the server's.
					t0 = next
					if d := time.Until(next); d > 0 {
						t := time.NewTimer(d)
						select {
						case <-t.C:
						case <-ctx.Done():
							t.Stop()
							return
						}
						t0 = time.Now()
					}
					next = next.Add(interval)
				} else {
					t0 = time.Now()
				}
				s, err := op(w)
				w.n++
				if !settle(ctx, cancel, &first, s, err, t0) {
					return
				}
			}
		}()
	}
	wg.Wait()
	err := first.get()
	return err
}

// asyncOp starts worker w's next operation on w.conn with Conn.Queue and
// reports its outcome (as opFunc returns it) to done: on the connection's
// reader goroutine, or at once if nothing could be sent.
type asyncOp func(w *worker, done func(*series, error))

// loopRaw runs op as cfg.Workers workers on the load connections. Closed
// loop, the workers are callbacks: each reply's callback records it and
// queues the worker's next request, and the connection's reader writes the
// requests queued while it handled one read's replies in one system call.
// The load generator thus costs little per request (it shares the machine
// with the server it measures) and the server sees what a pipelining client
// sends. Open loop (-rate), each worker is a goroutine as in loop.
func (e *env) loopRaw(ctx context.Context, prepare func(w *worker), op asyncOp) error {
	if e.cfg.Rate > 0 {
		return e.loop(ctx, prepare, func(w *worker) (*series, error) {
			type outcome struct {
				s   *series
				err error
			}
			ch := make(chan outcome, 1)
			op(w, func(s *series, err error) { ch <- outcome{s, err} })
			w.conn.Flush()
			o := <-ch
			return o.s, o.err
		})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var first firstError
	seed := uint64(time.Now().UnixNano())
	for i := 0; i < e.cfg.Workers; i++ {
		w := &worker{id: i, rng: rand.New(rand.NewPCG(uint64(i)+1, seed)), conn: e.conns[i%len(e.conns)]}
		if prepare != nil {
			prepare(w)
		}
		var t0 time.Time
		var next func()
		done := func(s *series, err error) {
			w.n++
			if !settle(ctx, cancel, &first, s, err, t0) {
				wg.Done()
				return
			}
			next()
		}
		next = func() {
			if ctx.Err() != nil {
				wg.Done()
				return
			}
			t0 = time.Now()
			op(w, done)
		}
		wg.Add(1)
		next()
	}
	for _, c := range e.conns {
		c.Flush()
	}
	wg.Wait()
	return first.get()
}

// queue sends one request of an asyncOp: a reply with an error code is a
// codeError, a broken connection its error.
func queue(w *worker, s *series, op proto.OpCode, req, resp proto.Record, done func(*series, error)) {
	err := w.conn.Queue(op, req, resp, func(code proto.ErrCode, err error) { done(s, check(code, err)) })
	if err != nil {
		done(s, err)
	}
}

// settle records the outcome of one operation started at t0 and reports
// whether its worker goes on: a codeError counts as a failed operation,
// errStop ends the worker, any other error ends the run (cancel) and is
// kept in first unless the run was already ending.
func settle(ctx context.Context, cancel context.CancelFunc, first *firstError, s *series, err error, t0 time.Time) bool {
	switch {
	case err == nil:
		s.record(time.Since(t0))
		return true
	case errors.Is(err, errStop):
		return false
	case isCode(err):
		s.fail()
		return true
	default:
		if ctx.Err() == nil {
			first.set(err)
		}
		cancel()
		return false
	}
}

func isCode(err error) bool {
	var c codeError
	return errors.As(err, &c)
}

// kvLoad is get, set and mixed.
type kvLoad struct {
	kind     string // get, set or mixed
	keys     []string
	get, set *series
	kvs      []kvClient
}

func (l *kvLoad) params(c *Config) map[string]any {
	p := map[string]any{"keys": c.Keys, "size": c.Size, "connections": c.Connections, "workers": c.Workers, "rate": rateParam(c)}
	if l.kind == "mixed" {
		p["ratio"] = fmt.Sprintf("%d:1", c.Ratio)
	}
	return p
}

func rateParam(c *Config) string {
	if c.Rate > 0 {
		return fmt.Sprintf("%g/s open loop", c.Rate)
	}
	return "closed loop"
}

func keyPath(run string, i int) string { return fmt.Sprintf("%s/k%07d", run, i) }

func (l *kvLoad) setup(ctx context.Context, e *env) error {
	l.keys = make([]string, e.cfg.Keys)
	for i := range l.keys {
		l.keys[i] = keyPath(e.run, i)
	}
	if err := bulk(ctx, []*Conn{e.admin}, len(l.keys), 512, func(i int) (proto.OpCode, proto.Record) {
		return proto.OpCreate, &proto.CreateRequest{Path: l.keys[i], Data: e.payload, ACL: openACL}
	}); err != nil {
		return err
	}
	switch l.kind {
	case "get":
		l.get = e.st.add("get")
	case "set":
		l.set = e.st.add("set")
	default:
		l.get, l.set = e.st.add("get"), e.st.add("set")
	}
	if e.cfg.Client == "raw" {
		return e.dialLoad(ctx)
	}
	kvs, err := dialKV(ctx, e.cfg)
	if err != nil {
		return err
	}
	l.kvs = kvs
	return nil
}

func (l *kvLoad) run(ctx context.Context, e *env) error {
	ratio := e.cfg.Ratio
	payload := e.payload
	next := func(w *worker) (key string, write bool) {
		key = l.keys[0]
		if len(l.keys) > 1 {
			key = l.keys[w.rng.IntN(len(l.keys))]
		}
		return key, l.kind == "set" || (l.kind == "mixed" && w.n%(ratio+1) == ratio)
	}
	if l.kvs == nil {
		return e.loopRaw(ctx, nil, func(w *worker, done func(*series, error)) {
			key, write := next(w)
			if write {
				queue(w, l.set, proto.OpSetData, &proto.SetDataRequest{Path: key, Data: payload, Version: -1}, nil, done)
				return
			}
			// The reply is read whole; its body is not decoded (see
			// childrenLoad).
			queue(w, l.get, proto.OpGetData, &proto.GetDataRequest{Path: key}, nil, done)
		})
	}
	return e.loop(ctx, func(w *worker) {
		w.kv = l.kvs[w.id%len(l.kvs)]
	}, func(w *worker) (*series, error) {
		key, write := next(w)
		if write {
			return l.set, w.kv.set(key, payload)
		}
		return l.get, w.kv.get(key)
	})
}

func (l *kvLoad) teardown(ctx context.Context, e *env) {
	for _, kv := range l.kvs {
		kv.close()
	}
}

// createLoad creates znodes under per-worker parents, 10,000 per parent.
type createLoad struct {
	created *series
	mode    proto.CreateMode
}

const perParent = 10000

func (l *createLoad) params(c *Config) map[string]any {
	return map[string]any{"mode": c.Mode, "size": c.Size, "connections": c.Connections, "workers": c.Workers, "rate": rateParam(c)}
}

func (l *createLoad) setup(ctx context.Context, e *env) error {
	l.mode = proto.ModePersistent
	if e.cfg.Mode == "ephemeral-sequential" {
		l.mode = proto.ModeEphemeralSequential
	}
	if err := bulk(ctx, []*Conn{e.admin}, e.cfg.Workers, 256, func(i int) (proto.OpCode, proto.Record) {
		return proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("%s/w%03d", e.run, i), ACL: openACL}
	}); err != nil {
		return err
	}
	l.created = e.st.add("create")
	return e.dialLoad(ctx)
}

func (l *createLoad) run(ctx context.Context, e *env) error {
	return e.loopRaw(ctx, nil, func(w *worker, done func(*series, error)) {
		chunk, i := w.n/perParent, w.n%perParent
		parent := fmt.Sprintf("%s/w%03d/c%04d", e.run, w.id, chunk)
		path := fmt.Sprintf("%s/n%05d", parent, i)
		if l.mode == proto.ModeEphemeralSequential {
			path = parent + "/e-"
		}
		create := func() {
			queue(w, l.created, proto.OpCreate, &proto.CreateRequest{Path: path, Data: e.payload, ACL: openACL, Flags: l.mode}, nil, done)
		}
		if i != 0 {
			create()
			return
		}
		// A new parent first; the create follows it (one session's
		// requests are applied in the order sent).
		queue(w, l.created, proto.OpCreate, &proto.CreateRequest{Path: parent, ACL: openACL}, nil, func(s *series, err error) {
			if err != nil {
				done(s, err)
				return
			}
			create()
		})
	})
}

func (l *createLoad) teardown(ctx context.Context, e *env) {
	closeAll(e.conns) // ephemerals go with their sessions
	e.conns = nil
}

// deleteLoad deletes znodes created in setup, each worker its own share.
type deleteLoad struct {
	deleted *series
	share   []int // znodes per worker
}

func (l *deleteLoad) params(c *Config) map[string]any {
	return map[string]any{"count": c.Count, "connections": c.Connections, "workers": c.Workers, "rate": rateParam(c)}
}

func deletePath(run string, w, i int) string {
	return fmt.Sprintf("%s/w%03d/c%04d/n%05d", run, w, i/perParent, i%perParent)
}

func (l *deleteLoad) setup(ctx context.Context, e *env) error {
	n := e.cfg.Workers
	l.share = make([]int, n)
	var parents []string
	for w := 0; w < n; w++ {
		l.share[w] = e.cfg.Count / n
		if w < e.cfg.Count%n {
			l.share[w]++
		}
		parents = append(parents, fmt.Sprintf("%s/w%03d", e.run, w))
		for c := 0; c*perParent < l.share[w]; c++ {
			parents = append(parents, fmt.Sprintf("%s/w%03d/c%04d", e.run, w, c))
		}
	}
	// Parents in order (a worker's directory before its chunks): one
	// session's requests are applied in the order sent.
	if err := bulk(ctx, []*Conn{e.admin}, len(parents), 256, func(i int) (proto.OpCode, proto.Record) {
		return proto.OpCreate, &proto.CreateRequest{Path: parents[i], ACL: openACL}
	}); err != nil {
		return err
	}
	if err := e.dialLoad(ctx); err != nil {
		return err
	}
	// The znodes, pipelined over the load connections.
	type wi struct{ w, i int }
	all := make([]wi, 0, e.cfg.Count)
	for w := 0; w < n; w++ {
		for i := 0; i < l.share[w]; i++ {
			all = append(all, wi{w, i})
		}
	}
	if err := bulk(ctx, e.conns, len(all), 1024, func(k int) (proto.OpCode, proto.Record) {
		return proto.OpCreate, &proto.CreateRequest{Path: deletePath(e.run, all[k].w, all[k].i), Data: e.payload, ACL: openACL}
	}); err != nil {
		return err
	}
	l.deleted = e.st.add("delete")
	return nil
}

func (l *deleteLoad) run(ctx context.Context, e *env) error {
	return e.loopRaw(ctx, nil, func(w *worker, done func(*series, error)) {
		if w.n >= l.share[w.id] {
			done(l.deleted, errStop)
			return
		}
		queue(w, l.deleted, proto.OpDelete, &proto.DeleteRequest{Path: deletePath(e.run, w.id, w.n), Version: -1}, nil, done)
	})
}

func (l *deleteLoad) teardown(ctx context.Context, e *env) {}

// childrenLoad lists a znode with many children.
type childrenLoad struct {
	parent string
	list   *series
}

func (l *childrenLoad) params(c *Config) map[string]any {
	return map[string]any{"children": c.Children, "connections": c.Connections, "workers": c.Workers, "rate": rateParam(c)}
}

func (l *childrenLoad) setup(ctx context.Context, e *env) error {
	l.parent = e.run + "/p"
	if err := ensure(e.admin, l.parent); err != nil {
		return err
	}
	if err := bulk(ctx, []*Conn{e.admin}, e.cfg.Children, 512, func(i int) (proto.OpCode, proto.Record) {
		return proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("%s/c%06d", l.parent, i), ACL: openACL}
	}); err != nil {
		return err
	}
	var resp proto.GetChildrenResponse
	if err := check(e.admin.Do(proto.OpGetChildren, &proto.GetChildrenRequest{Path: l.parent}, &resp)); err != nil {
		return err
	}
	if len(resp.Children) != e.cfg.Children {
		return fmt.Errorf("getChildren returned %d children, want %d", len(resp.Children), e.cfg.Children)
	}
	l.list = e.st.add("getChildren")
	return e.dialLoad(ctx)
}

func (l *childrenLoad) run(ctx context.Context, e *env) error {
	req := &proto.GetChildrenRequest{Path: l.parent}
	// The reply is read but not decoded: decoding 1,000 names per request
	// would make the client, not the server, the bottleneck.
	return e.loopRaw(ctx, nil, func(w *worker, done func(*series, error)) {
		queue(w, l.list, proto.OpGetChildren, req, nil, done)
	})
}

func (l *childrenLoad) teardown(ctx context.Context, e *env) {}

// multiLoad: each multi sets MultiOps znodes of its worker.
type multiLoad struct {
	paths [][]string // per worker
	multi *series
}

func (l *multiLoad) params(c *Config) map[string]any {
	return map[string]any{"ops": c.MultiOps, "size": c.Size, "connections": c.Connections, "workers": c.Workers, "rate": rateParam(c)}
}

func (l *multiLoad) setup(ctx context.Context, e *env) error {
	var all []string
	l.paths = make([][]string, e.cfg.Workers)
	for w := range l.paths {
		for k := 0; k < e.cfg.MultiOps; k++ {
			p := fmt.Sprintf("%s/w%03d-%d", e.run, w, k)
			l.paths[w] = append(l.paths[w], p)
			all = append(all, p)
		}
	}
	if err := bulk(ctx, []*Conn{e.admin}, len(all), 512, func(i int) (proto.OpCode, proto.Record) {
		return proto.OpCreate, &proto.CreateRequest{Path: all[i], Data: e.payload, ACL: openACL}
	}); err != nil {
		return err
	}
	l.multi = e.st.add("multi")
	return e.dialLoad(ctx)
}

func (l *multiLoad) run(ctx context.Context, e *env) error {
	return e.loopRaw(ctx, nil, func(w *worker, done func(*series, error)) {
		req := &proto.MultiRequest{Ops: make([]proto.MultiOp, len(l.paths[w.id]))}
		for k, p := range l.paths[w.id] {
			req.Ops[k] = proto.MultiOp{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: p, Data: e.payload, Version: -1}}
		}
		resp := new(proto.MultiResponse)
		queue(w, l.multi, proto.OpMulti, req, resp, func(s *series, err error) {
			if err == nil {
				for _, r := range resp.Results {
					if r.Type == proto.OpError {
						err = codeError(r.Err)
						break
					}
				}
			}
			if err == nil && len(resp.Results) != len(req.Ops) {
				err = fmt.Errorf("multi: %d results for %d ops", len(resp.Results), len(req.Ops))
			}
			done(s, err)
		})
	})
}

func (l *multiLoad) teardown(ctx context.Context, e *env) {}
