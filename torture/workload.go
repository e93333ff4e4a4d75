package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/zkgo/zkgo/internal/linearize"
	"github.com/zkgo/zkgo/torture/check"
	"github.com/zkgo/zkgo/zk"
)

// The workloads' znodes live under root.
const root = "/torture"

// defaultWorkloads are the clients of a run, each with its checker.
func defaultWorkloads() []workload {
	return []workload{
		&registers{n: 4, keys: 5},
		&sequential{n: 2},
		&ephemerals{owners: 2},
		&watches{},
		&sessions{n: 2},
		&locks{n: 3},
		&leaders{n: 3},
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
// read) and creates of a few znodes; checked for linearizability.
type registers struct {
	n, keys int
}

func (w *registers) name() string { return "registers" }
func (w *registers) clients() int { return w.n }

func (w *registers) key(i int) string { return fmt.Sprintf("%s/reg/k%d", root, i) }

func (w *registers) start(ctx context.Context, e *env, first int, wg *sync.WaitGroup) {
	for id := 0; id < w.n; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx, e, first+id, id)
		}()
	}
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
	for i := 0; ctx.Err() == nil; i++ {
		key := w.key(rng.IntN(w.keys))
		data := fmt.Sprintf("%d.%d", id, i)
		var out linearize.Output
		err := e.op(ctx, func(ctx context.Context) error {
			var err error
			switch r := rng.IntN(10); {
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
		if lost(conn, err) {
			conn.Close()
			if conn, err = e.dial(ctx, client); err != nil {
				return
			}
			lc = e.rec.Registers().Client(id, conn)
		}
	}
}

func (w *registers) check(ctx context.Context, e *env) []check.Result {
	// A last session reads every register, so an acknowledged write lost
	// after its last read shows too.
	conn, err := zk.Connect(ctx, e.direct)
	if err == nil {
		lc := e.rec.Registers().Client(w.n, conn)
		for k := 0; k < w.keys; k++ {
			for try := 0; try < 20; try++ {
				out, _ := lc.Get(ctx, w.key(k))
				if out.Status != linearize.Unknown {
					break
				}
			}
		}
		conn.Close()
	}
	return []check.Result{check.Registers(e.rec.Registers().History(), check.RegisterOptions{
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
	for id := 0; id < w.n; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx, e, first+id)
		}()
	}
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
		if i%10 == 9 {
			l := check.SeqListing{Client: name, Parent: parent, Call: e.rec.Now()}
			var names []string
			err := e.op(ctx, func(ctx context.Context) error {
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
