package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkgo/zkgo/tests/framework/linearize"
	"github.com/zkgo/zkgo/tools/torture/check"
	"github.com/zkgo/zkgo/zk"
)

// The workloads' znodes live under root.
const root = "/torture"

// defaultWorkloads are the clients of a run, each with its checker.
func defaultWorkloads() []workload {
	return []workload{
		&registers{n: 4, keys: 6},
		&sequential{n: 2},
		&ephemerals{owners: 2},
		&watches{},
		&sessions{n: 2},
		&fifo{},
		&locks{n: 3},
		&leaders{n: 3},
	}
}

// goClients runs loop for clients first, first+1, ... first+n-1, each in
// a goroutine of its own counted by wg; id is the client's index in its
// workload.
func goClients(wg *sync.WaitGroup, first, n int, loop func(client, id int)) {
	for id := 0; id < n; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(first+id, id)
		}()
	}
}

// dial connects client k, retrying until ctx ends.
func (e *env) dial(ctx context.Context, k int) (*zk.Conn, error) {
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := e.connect(attempt, k)
		cancel()
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// lost reports whether conn's session is gone (a new one is needed).
func lost(conn *zk.Conn, err error) bool {
	return errors.Is(err, zk.ErrSessionExpired) || conn.State() == zk.StateLost
}

// op runs one request with a deadline and counts it.
func (e *env) op(ctx context.Context, fn func(ctx context.Context) error) error {
	octx, cancel := context.WithTimeout(ctx, 4*time.Second)
	err := fn(octx)
	cancel()
	if ctx.Err() == nil {
		e.ops.done(answered(err))
		if !answered(err) {
			// No answer: the ensemble or the link is in trouble; do not
			// pile up requests of unknown outcome while it lasts.
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return err
}

// rng returns client k's random source.
func (e *env) rng(k int) *rand.Rand { return rand.New(rand.NewPCG(e.seed, uint64(k)+100)) }

// ensurePath creates p and its parents, retrying through faults.
func (e *env) ensurePath(ctx context.Context, conn *zk.Conn, p string) error {
	for {
		err := e.op(ctx, func(ctx context.Context) error {
			err := conn.EnsurePath(ctx, p, zk.OpenACLUnsafe)
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		})
		if err == nil || ctx.Err() != nil || lost(conn, err) {
			return err
		}
	}
}

// registers: sync+getData reads, setData (plain and on the version last
// read) and creates of a few znodes; checked for linearizability. The
// znodes change every few seconds (a new generation): a write of unknown
// outcome can take effect at any later point, which the checker must try
// against every later operation on its znode; bounding a znode's life
// keeps that search small.
type registers struct {
	n, keys int
}

func (w *registers) name() string { return "registers" }
func (w *registers) clients() int { return w.n }

// generation is the registers' generation at run time since.
func generation(since time.Duration) int { return int(since / (5 * time.Second)) }

func (w *registers) key(gen, i int) string { return fmt.Sprintf("%s/reg/g%d/k%d", root, gen, i) }

func (w *registers) start(ctx context.Context, e *env, first int, wg *sync.WaitGroup) {
	goClients(wg, first, w.n, func(client, id int) { w.loop(ctx, e, client, id) })
}

func (w *registers) loop(ctx context.Context, e *env, client, id int) {
	rng := e.rng(client)
	conn, err := e.dial(ctx, client)
	if err != nil {
		return
	}
	defer func() { conn.Close() }()
	if e.ensurePath(ctx, conn, root+"/reg") != nil {
		return
	}
	lc := e.rec.Registers().Client(id, conn)
	versions := map[string]int32{}
	madeGen := -1
	for i := 0; ctx.Err() == nil; i++ {
		gen := generation(time.Since(e.start))
		if gen != madeGen {
			if e.ensurePath(ctx, conn, fmt.Sprintf("%s/reg/g%d", root, gen)) == nil {
				madeGen = gen
			}
		}
		key := w.key(gen, rng.IntN(w.keys))
		data := fmt.Sprintf("%d.%d", id, i)
		var out linearize.Output
		err := e.op(ctx, func(ctx context.Context) error {
			var err error
			switch r := rng.IntN(10); {
			case r < 4 && e.broken["read"] && i%50 == 0:
				out, err = forgedGet(ctx, e, conn, id, key)
			case r < 4:
				out, err = lc.Get(ctx, key)
			case r < 8:
				v := int32(-1)
				if last, ok := versions[key]; ok && rng.IntN(2) == 0 {
					v = last
				}
				out, err = lc.Set(ctx, key, data, v)
			default:
				out, err = lc.Create(ctx, key, data)
			}
			return err
		})
		if out.Status == linearize.OK && out.Version >= 0 {
			versions[key] = out.Version
		}
		// A few hundred operations a second in all: enough contention,
		// and a history the checker can search.
		time.Sleep(time.Duration(rng.IntN(4)) * time.Millisecond)

		if lost(conn, err) {
			conn.Close()
			if conn, err = e.dial(ctx, client); err != nil {
				return
			}
			lc = e.rec.Registers().Client(id, conn)
		}
	}
}

// forgedGet is a read recorded with data nobody wrote (Config.Break
// "read"): the register checker must catch it.
func forgedGet(ctx context.Context, e *env, conn *zk.Conn, id int, key string) (linearize.Output, error) {
	op := e.rec.Registers().Begin(id, linearize.Input{Kind: linearize.Get, Key: key})
	_, err := conn.Sync(ctx, key)
	var st *zk.Stat
	if err == nil {
		_, st, err = conn.Get(ctx, key)
	}
	if err != nil {
		op.End(linearize.Output{Status: linearize.Unknown}, err.Error())
		return linearize.Output{Status: linearize.Unknown}, err
	}
	out := linearize.Output{Status: linearize.OK, Data: "forged", Version: st.Version}
	op.End(out, "forged")
	return out, nil
}

func (w *registers) check(ctx context.Context, e *env) []check.Result {
	// A last session reads every register, so an acknowledged write lost
	// after its last read shows too.
	conn, err := zk.Connect(ctx, e.direct)
	if err == nil {
		lc := e.rec.Registers().Client(w.n, conn)
		for g := 0; g <= generation(time.Since(e.start)); g++ {
			for k := 0; k < w.keys; k++ {
				for try := 0; try < 20; try++ {
					out, _ := lc.Get(ctx, w.key(g, k))
					if out.Status != linearize.Unknown {
						break
					}
				}
			}
		}
		conn.Close()
	}
	h := e.rec.Registers().History()
	if err := writeRegisters(filepath.Join(e.dir, "registers.jsonl"), h); err != nil {
		e.log.Warn("torture: saving the register history", "err", err)
	}
	return []check.Result{check.Registers(h, check.RegisterOptions{
		Timeout: 2 * time.Minute, VisualizeDir: e.dir,
	})}
}

// sequential: persistent sequential creates under a parent that changes
// every few seconds (listings stay short), with listings; checked for
// unique, increasing suffixes with no reuse.
type sequential struct{ n int }

func (w *sequential) name() string { return "sequential" }
func (w *sequential) clients() int { return w.n }

func (w *sequential) start(ctx context.Context, e *env, first int, wg *sync.WaitGroup) {
	goClients(wg, first, w.n, func(client, id int) {
		// Every other client is go-zookeeper's: the guarantees hold for
		// clients other than ours.
		if id%2 == 1 {
			w.loopGozk(ctx, e, client)
			return
		}
		w.loop(ctx, e, client)
	})
}

func (w *sequential) parent(e *env) string {
	return fmt.Sprintf("%s/seq/p%d", root, time.Since(e.start)/(5*time.Second))
}

func (w *sequential) loop(ctx context.Context, e *env, client int) {
	name := fmt.Sprintf("c%d", client)
	conn, err := e.dial(ctx, client)
	if err != nil {
		return
	}
	defer func() { conn.Close() }()
	madeParent := ""
	for i := 0; ctx.Err() == nil; i++ {
		parent := w.parent(e)
		if parent != madeParent {
			if e.ensurePath(ctx, conn, parent) == nil {
				madeParent = parent
			}
		}
		prefix := fmt.Sprintf("%s-%d-", name, i)
		rec := check.SeqCreate{Client: name, Parent: parent, Prefix: prefix, Call: e.rec.Now()}
		var got string
		err := e.op(ctx, func(ctx context.Context) error {
			var err error
			got, err = conn.Create(ctx, parent+"/"+prefix, nil, zk.OpenACLUnsafe, zk.ModePersistentSequential)
			return err
		})
		rec.Return, rec.Outcome, rec.Name = e.rec.Now(), check.OutcomeOf(err), got
		e.rec.AddSeqCreate(rec)
		if i%25 == 24 {
			l := check.SeqListing{Client: name, Parent: parent, Call: e.rec.Now()}
			var names []string
			// sync first: a plain read may lag behind writes other
			// sessions had acknowledged (ZooKeeper's reads are
			// sequentially consistent, not linearizable).
			err := e.op(ctx, func(ctx context.Context) error {
				if _, err := conn.Sync(ctx, parent); err != nil {
					return err
				}
				var err error
				names, _, err = conn.Children(ctx, parent)
				return err
			})
			if err == nil {
				l.Return, l.Names = e.rec.Now(), names
				e.rec.AddSeqListing(l)
			}
		}
		if lost(conn, err) {
			conn.Close()
			if conn, err = e.dial(ctx, client); err != nil {
				return
			}
		}
	}
}

// loopGozk is loop with a go-zookeeper client (which reconnects, and
// starts a new session after an expiry, by itself).
func (w *sequential) loopGozk(ctx context.Context, e *env, client int) {
	name := fmt.Sprintf("c%d-gozk", client)
	conn, _, err := gozk.Connect(strings.Split(e.clientVia[client], ","), e.timeout, gozk.WithLogger(quiet{}))
	if err != nil {
		return
	}
	// go-zookeeper's requests take no context: closing the Conn ends the
	// one in flight at the end of the run.
	stop := context.AfterFunc(ctx, conn.Close)
	defer stop()
	defer conn.Close()
	madeParent := ""
	for i := 0; ctx.Err() == nil; i++ {
		parent := w.parent(e)
		if parent != madeParent {
			_, err := conn.Create(parent, nil, 0, gozk.WorldACL(gozk.PermAll))
			if err == nil || errors.Is(err, gozk.ErrNodeExists) {
				madeParent = parent
			}
		}
		prefix := fmt.Sprintf("%s-%d-", name, i)
		rec := check.SeqCreate{Client: name, Parent: parent, Prefix: prefix, Call: e.rec.Now()}
		got, err := conn.Create(parent+"/"+prefix, nil, gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
		rec.Return, rec.Outcome, rec.Name = e.rec.Now(), check.OutcomeOf(err), got
		e.rec.AddSeqCreate(rec)
		e.ops.done(rec.Outcome != check.Unknown)
		if rec.Outcome == check.Unknown {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if i%25 == 24 {
			l := check.SeqListing{Client: name, Parent: parent, Call: e.rec.Now()}
			if _, err := conn.Sync(parent); err == nil {
				if names, _, err := conn.Children(parent); err == nil {
					l.Return, l.Names = e.rec.Now(), names
					e.rec.AddSeqListing(l)
				}
			}
		}
	}
}

// quiet discards go-zookeeper's log.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

func (w *sequential) check(ctx context.Context, e *env) []check.Result {
	// A last listing of every parent shows which creates of unknown
	// outcome took effect.
	if conn, err := zk.Connect(ctx, e.direct); err == nil {
		parents, _, _ := conn.Children(ctx, root+"/seq")
		for _, p := range parents {
			l := check.SeqListing{Client: "final", Parent: root + "/seq/" + p, Call: e.rec.Now()}
			if names, _, err := conn.Children(ctx, l.Parent); err == nil {
				l.Return, l.Names = e.rec.Now(), names
				e.rec.AddSeqListing(l)
			}
		}
		conn.Close()
	}
	h := e.rec.History()
	return []check.Result{check.Sequential(h.Sequential, check.SequentialOptions{Durable: true})}
}
