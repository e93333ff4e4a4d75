package torture

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkgo/zkgo/tools/torture/check"
	"github.com/zkgo/zkgo/zk"
)

// ephemerals: owner sessions create ephemeral nodes (each path once),
// delete some, and end their sessions now and then; an observer session
// checks (sync, exists) recent paths. Checked: an ephemeral is there while
// its session lives and gone soon after it ends.
type ephemerals struct {
	owners int

	mu     sync.Mutex // guards recent
	recent []string   // paths created lately, for the observer
}

func (w *ephemerals) name() string { return "ephemerals" }
func (w *ephemerals) clients() int { return w.owners + 1 }

func (w *ephemerals) start(ctx context.Context, e *env, first int, wg *sync.WaitGroup) {
	goClients(wg, first, w.owners, func(client, _ int) { w.own(ctx, e, client) })
	goClients(wg, first+w.owners, 1, func(client, _ int) { w.observe(ctx, e, client) })
}

func (w *ephemerals) remember(p string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recent = append(w.recent, p)
	if len(w.recent) > 20 {
		w.recent = w.recent[len(w.recent)-20:]
	}
}

// own runs owner sessions one after another until ctx ends.
func (w *ephemerals) own(ctx context.Context, e *env, client int) {
	name := fmt.Sprintf("c%d", client)
	rng := e.rng(client)
	for gen := 0; ctx.Err() == nil; gen++ {
		conn, err := e.dial(ctx, client)
		if err != nil {
			return
		}
		if e.ensurePath(ctx, conn, root+"/eph") != nil {
			conn.Close()
			continue
		}
		sid := conn.SessionID()
		var lastOK int64
		var live []string
		end := check.SessionEnd{Client: name, Session: sid, Kind: check.SessionExpired}
		for i := 0; ctx.Err() == nil && i < 40+rng.IntN(40); i++ {
			call := e.rec.Now()
			var err error
			if len(live) > 3 || (len(live) > 0 && rng.IntN(5) == 0) {
				p := live[0]
				live = live[1:]
				err = e.op(ctx, func(ctx context.Context) error { return conn.Delete(ctx, p, zk.AnyVersion) })
				e.rec.AddEphemeralDelete(check.EphemeralDelete{Client: name, Session: sid, Path: p, Call: call, Return: e.rec.Now(), Outcome: check.OutcomeOf(err)})
			} else {
				p := fmt.Sprintf("%s/eph/%s-%d-%d", root, name, gen, i)
				err = e.op(ctx, func(ctx context.Context) error {
					_, err := conn.Create(ctx, p, nil, zk.OpenACLUnsafe, zk.ModeEphemeral)
					return err
				})
				e.rec.AddEphemeralCreate(check.EphemeralCreate{Client: name, Session: sid, Path: p, Call: call, Return: e.rec.Now(), Outcome: check.OutcomeOf(err)})
				if err == nil {
					live = append(live, p)
					w.remember(p)
				}
			}
			if answered(err) {
				lastOK = call
			}
			if lost(conn, err) {
				break
			}
			time.Sleep(time.Duration(20+rng.IntN(40)) * time.Millisecond)
		}
		// The session ends: closed (whether the server acknowledged the
		// close is not known, so it counts as an expiry seen now: its
		// nodes must be gone a session timeout after, plus the bound) or
		// expired.
		conn.Close()
		end.At, end.LastOK = e.rec.Now(), lastOK
		e.rec.AddSessionEnd(end)
	}
}

// observe checks recent paths from its own session.
func (w *ephemerals) observe(ctx context.Context, e *env, client int) {
	name := fmt.Sprintf("c%d", client)
	rng := e.rng(client)
	conn, err := e.dial(ctx, client)
	if err != nil {
		return
	}
	defer func() { conn.Close() }()
	for ctx.Err() == nil {
		w.mu.Lock()
		var p string
		if len(w.recent) > 0 {
			p = w.recent[rng.IntN(len(w.recent))]
		}
		w.mu.Unlock()
		if p != "" {
			ob := check.Observation{Client: name, Session: conn.SessionID(), Path: p, Call: e.rec.Now()}
			var st *zk.Stat
			err := e.op(ctx, func(ctx context.Context) error {
				if _, err := conn.Sync(ctx, p); err != nil {
					return err
				}
				var err error
				st, err = conn.Exists(ctx, p)
				return err
			})
			switch {
			case err == nil && st != nil:
				ob.Return, ob.Exists, ob.Owner = e.rec.Now(), true, st.EphemeralOwner
				e.rec.AddObservation(ob)
			case err == nil:
				ob.Return = e.rec.Now()
				e.rec.AddObservation(ob)
			}
			if lost(conn, err) {
				conn.Close()
				if conn, err = e.dial(ctx, client); err != nil {
					return
				}
			}
		}
		time.Sleep(time.Duration(30+rng.IntN(40)) * time.Millisecond)
	}
}

func (w *ephemerals) check(ctx context.Context, e *env) []check.Result {
	h := e.rec.History()
	return []check.Result{check.Ephemerals(h.Ephemerals, check.EphemeralOptions{
		SessionTimeout: e.timeout,
		// Generous: faults one after another can hold a session's expiry
		// back (an ensemble without a quorum expires nothing, a new
		// leader gives every session a full timeout again).
		Bound: 20 * time.Second,
	})}
}

// watches: one session holds a persistent recursive watch on a subtree
// another session writes to (creates with Create2, setData, deletes, each
// with its zxid). Checked: the events between reconnections are exactly
// the committed changes, in order.
type watches struct{}

func (w *watches) name() string { return "watches" }
func (w *watches) clients() int { return 2 }

func (w *watches) start(ctx context.Context, e *env, first int, wg *sync.WaitGroup) {
	wg.Add(2)
	go func() {
		defer wg.Done()
		w.watch(ctx, e, first)
	}()
	go func() {
		defer wg.Done()
		w.write(ctx, e, first+1)
	}()
}

const watchRoot = root + "/w"

func (w *watches) watch(ctx context.Context, e *env, client int) {
	name := fmt.Sprintf("c%d", client)
	for gen := 0; ctx.Err() == nil; gen++ {
		conn, err := e.dial(ctx, client)
		if err != nil {
			return
		}
		states, stop := conn.NotifyState()
		var wt *zk.Watcher
		err = e.op(ctx, func(ctx context.Context) error {
			var err error
			wt, err = conn.AddWatch(ctx, watchRoot, zk.AddWatchPersistentRecursive)
			return err
		})
		if err != nil {
			stop()
			conn.Close()
			continue
		}
		id := fmt.Sprintf("%s/%d", name, gen)
		e.rec.AddWatch(check.Watch{ID: id, Client: name, Path: watchRoot, Recursive: true, Added: e.rec.Now()})
	follow:
		for {
			select {
			case <-ctx.Done():
				break follow
			case s := <-states:
				switch s {
				case zk.StateSuspended:
					e.rec.AddConnChange(check.ConnChange{Client: name, At: e.rec.Now(), Connected: false})
				case zk.StateReconnected:
					e.rec.AddConnChange(check.ConnChange{Client: name, At: e.rec.Now(), Connected: true})
				case zk.StateLost, zk.StateClosed:
					break follow
				}
			case ev, ok := <-wt.Events():
				if !ok || ev.Type == zk.EventNotWatching {
					break follow
				}
				e.rec.AddWatchEvent(check.WatchEvent{Watch: id, At: e.rec.Now(), Change: check.Change(ev.Type), Path: ev.Path})
			}
		}
		stop()
		conn.Close()
	}
}

func (w *watches) write(ctx context.Context, e *env, client int) {
	name := fmt.Sprintf("c%d", client)
	rng := e.rng(client)
	conn, err := e.dial(ctx, client)
	if err != nil {
		return
	}
	defer func() { conn.Close() }()
	if e.ensurePath(ctx, conn, watchRoot) != nil {
		return
	}
	exists := map[string]bool{}
	for i := 0; ctx.Err() == nil; i++ {
		p := fmt.Sprintf("%s/n%d", watchRoot, rng.IntN(8))
		rec := check.Write{Client: name, Path: p, Call: e.rec.Now()}
		var err error
		switch {
		case !exists[p]:
			rec.Change = check.Created
			err = e.op(ctx, func(ctx context.Context) error {
				_, st, err := conn.Create2(ctx, p, []byte(fmt.Sprint(i)), zk.OpenACLUnsafe, zk.ModePersistent)
				if err == nil {
					rec.Zxid = st.Czxid
				}
				return err
			})
			exists[p] = err == nil || errors.Is(err, zk.ErrNodeExists)
		case rng.IntN(3) == 0:
			rec.Change = check.Deleted
			// A delete's zxid is not known (Conn.LastZxid may already
			// count a later ping): the checker places it by the events.
			err = e.op(ctx, func(ctx context.Context) error { return conn.Delete(ctx, p, zk.AnyVersion) })
			exists[p] = !(err == nil || errors.Is(err, zk.ErrNoNode))
		default:
			rec.Change = check.DataChanged
			err = e.op(ctx, func(ctx context.Context) error {
				st, err := conn.Set(ctx, p, []byte(fmt.Sprint(i)), zk.AnyVersion)
				if err == nil {
					rec.Zxid = st.Mzxid
				}
				return err
			})
			if errors.Is(err, zk.ErrNoNode) {
				exists[p] = false
			}
		}
		rec.Return, rec.Outcome = e.rec.Now(), check.OutcomeOf(err)
		e.rec.AddWrite(rec)
		if check.OutcomeOf(err) == check.Unknown {
			// Not known whether it exists now: find out.
			delete(exists, p)
			if _, err := conn.Exists(ctx, p); err == nil {
				exists[p] = true
			}
		}
		if lost(conn, err) {
			conn.Close()
			if conn, err = e.dial(ctx, client); err != nil {
				return
			}
		}
		time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond)
	}
}

func (w *watches) check(ctx context.Context, e *env) []check.Result {
	h := e.rec.History()
	return []check.Result{check.Watches(h.Watches, check.WatchOptions{Slop: 500 * time.Millisecond})}
}

// sessions: two sessions read and write a few znodes, recording the zxids
// each saw. Checked: no session reads older than what it has seen, its
// replies' zxids never go back.
type sessions struct{ n int }

func (w *sessions) name() string { return "sessions" }
func (w *sessions) clients() int { return w.n }

func (w *sessions) start(ctx context.Context, e *env, first int, wg *sync.WaitGroup) {
	goClients(wg, first, w.n, func(client, _ int) { w.loop(ctx, e, client) })
}

func (w *sessions) loop(ctx context.Context, e *env, client int) {
	name := fmt.Sprintf("c%d", client)
	rng := e.rng(client)
	conn, err := e.dial(ctx, client)
	if err != nil {
		return
	}
	defer func() { conn.Close() }()
	if e.ensurePath(ctx, conn, root+"/sess") != nil {
		return
	}
	for ctx.Err() == nil {
		p := fmt.Sprintf("%s/sess/k%d", root, rng.IntN(4))
		op := check.SessionOp{Client: name, Session: conn.SessionID(), Path: p, Seen: conn.LastZxid(), Call: e.rec.Now()}
		var err error
		switch r := rng.IntN(10); {
		case r < 5:
			op.Kind = check.OpRead
			var st *zk.Stat
			err = e.op(ctx, func(ctx context.Context) error { st, err = conn.Exists(ctx, p); return err })
			switch {
			case err == nil && st != nil:
				op.Outcome, op.Exists, op.Mzxid = check.OK, true, st.Mzxid
			case err == nil:
				op.Outcome = check.OK
			}
		case r < 7:
			op.Kind = check.OpCreate
			err = e.op(ctx, func(ctx context.Context) error {
				_, st, err := conn.Create2(ctx, p, nil, zk.OpenACLUnsafe, zk.ModePersistent)
				if err == nil {
					op.Mzxid = st.Mzxid
				}
				return err
			})
			op.Outcome = check.OutcomeOf(err)
		case r < 9:
			op.Kind = check.OpSetData
			err = e.op(ctx, func(ctx context.Context) error {
				st, err := conn.Set(ctx, p, []byte(name), zk.AnyVersion)
				if err == nil {
					op.Mzxid = st.Mzxid
				}
				return err
			})
			op.Outcome = check.OutcomeOf(err)
		default:
			op.Kind = check.OpDelete
			err = e.op(ctx, func(ctx context.Context) error { return conn.Delete(ctx, p, zk.AnyVersion) })
			op.Outcome = check.OutcomeOf(err)
		}
		op.Return = e.rec.Now()
		e.rec.AddSessionOp(op)
		if lost(conn, err) {
			conn.Close()
			if conn, err = e.dial(ctx, client); err != nil {
				return
			}
		}
		time.Sleep(time.Duration(rng.IntN(10)) * time.Millisecond)
	}
}

func (w *sessions) check(ctx context.Context, e *env) []check.Result {
	return []check.Result{check.Sessions(e.rec.History().Sessions)}
}
