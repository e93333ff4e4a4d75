package torture

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/recipe/leader"
	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/tools/torture/check"
	"github.com/zkgo/zkgo/zk"
)

// locks: clients take turns holding an InterProcessMutex-compatible lock
// (recipe/lock, strict policy) and, while they hold it, write their
// fencing token to a fence znode — the resource the lock protects, reached
// through a session of its own (not the lock's): read the fence, and if
// their token is larger, a multi of a check that their lock node still
// exists and a setData on the version read. A holder frozen by the
// ClientPause fault makes that write when it wakes, long after its
// session expired and another client took the lock: the guard must refuse
// it. Checked: no two holders' fenced writes both succeed, tokens only
// grow.
type locks struct {
	n   int
	end atomic.Int64 // when the clients were told to stop (Recorder time)
}

// lockMaxGap is the longest the lock may go without a holder while its
// clients try (the locks checker's liveness): far above what any fault
// costs a handoff (a holder's session expiring: the session timeout plus
// an election or two), far below a stall.
const lockMaxGap = 60 * time.Second

func (w *locks) name() string { return "locks" }
func (w *locks) clients() int { return w.n }

const fencePath = root + "/fence"

func (w *locks) start(ctx context.Context, e *env, first int, wg *sync.WaitGroup) {
	goClients(wg, first, w.n, func(client, _ int) { w.loop(ctx, e, client) })
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		w.end.Store(e.rec.Now())
	}()
}

func (w *locks) loop(ctx context.Context, e *env, client int) {
	name := fmt.Sprintf("c%d", client)
	rng := e.rng(client)
	conn, err := e.dial(ctx, client)
	if err != nil {
		return
	}
	defer func() { conn.Close() }()
	// The fence's own session, straight to the members (the client's
	// cuts and pauses are the lock session's).
	store, err := zk.Connect(ctx, e.direct, zk.WithSessionTimeout(e.timeout))
	if err != nil {
		return
	}
	defer func() { store.Close() }()
	for ctx.Err() == nil {
		if conn.State() == zk.StateLost {
			conn.Close()
			if conn, err = e.dial(ctx, client); err != nil {
				return
			}
		}
		if store.State() == zk.StateLost {
			store.Close()
			if store, err = zk.Connect(ctx, e.direct, zk.WithSessionTimeout(e.timeout)); err != nil {
				return
			}
		}
		m := lock.NewMutex(conn, root+"/lock")
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		g, err := m.Lock(actx)
		cancel()
		e.ops.done(answered(err))
		if err != nil {
			e.log.Debug("torture: lock not taken", "client", name, "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		hold := check.LockHold{Client: name, Token: g.Token(), Acquired: e.rec.Now()}
		e.lastLock.Store(hold.Acquired)
		var lostAt atomic.Int64
		stopWatch := make(chan struct{})
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			select {
			case <-g.Done():
				lostAt.Store(e.rec.Now())
			case <-stopWatch:
			}
		}()
		for k := 0; k < 1+rng.IntN(3) && ctx.Err() == nil; k++ {
			if lostAt.Load() != 0 {
				break
			}
			var stored int64
			var version int32
			err := e.op(ctx, func(ctx context.Context) error {
				data, st, err := store.Get(ctx, fencePath)
				if err == nil {
					stored, _ = strconv.ParseInt(string(data), 10, 64)
					version = st.Version
				}
				return err
			})
			if err != nil || stored >= g.Token() || lostAt.Load() != 0 {
				continue
			}
			// Frozen here by ClientPause: it wakes believing it holds
			// the lock, with what it read before.
			e.pausePoint(client)
			fw := check.FencedWrite{Client: name, Token: g.Token(), Version: version, Call: e.rec.Now()}
			err = e.op(ctx, func(ctx context.Context) error {
				_, err := store.Multi(ctx, zk.CheckOp(g.Path(), zk.AnyVersion),
					zk.SetDataOp(fencePath, []byte(strconv.FormatInt(g.Token(), 10)), version))
				return err
			})
			fw.Return, fw.Outcome = e.rec.Now(), check.OutcomeOf(err)
			e.rec.AddFencedWrite(fw)
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		}
		released := e.rec.Now()
		close(stopWatch)
		<-watched
		if at := lostAt.Load(); at != 0 && at < released {
			released = at
		}
		hold.Released = released
		e.rec.AddLockHold(hold)
		uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = m.Unlock(uctx)
		cancel()
		if err != nil {
			e.log.Debug("torture: unlock failed", "client", name, "path", g.Path(), "err", err)
		}
		e.ops.done(answered(err) || errors.Is(err, zk.ErrSessionExpired))
		if e.broken["fence"] {
			// A holder that ignores the fence: one more write of its
			// token, unconditionally, after its hold ended.
			fw := check.FencedWrite{Client: name, Token: g.Token(), Version: -1, Call: e.rec.Now()}
			err := e.op(ctx, func(ctx context.Context) error {
				_, err := store.Set(ctx, fencePath, []byte(strconv.FormatInt(g.Token(), 10)), zk.AnyVersion)
				return err
			})
			fw.Return, fw.Outcome = e.rec.Now(), check.OutcomeOf(err)
			e.rec.AddFencedWrite(fw)
		}
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
	}
}

func (w *locks) check(ctx context.Context, e *env) []check.Result {
	h := e.rec.History().Locks
	h.End, h.MaxGap = w.end.Load(), int64(lockMaxGap)
	return []check.Result{check.Locks(h)}
}

// leaders: participants of a LeaderLatch (recipe/leader, strict policy);
// a leader gives up after a while so leadership moves. Checked: never two
// leaders at once.
type leaders struct{ n int }

func (w *leaders) name() string { return "leaders" }
func (w *leaders) clients() int { return w.n }

func (w *leaders) start(ctx context.Context, e *env, first int, wg *sync.WaitGroup) {
	goClients(wg, first, w.n, func(client, _ int) { w.loop(ctx, e, client) })
}

func (w *leaders) loop(ctx context.Context, e *env, client int) {
	name := fmt.Sprintf("c%d", client)
	rng := e.rng(client)
	for ctx.Err() == nil {
		conn, err := e.dial(ctx, client)
		if err != nil {
			return
		}
		if e.ensurePath(ctx, conn, root+"/latch") != nil {
			conn.Close()
			continue
		}
		states, stop := conn.NotifyState()
		l := leader.NewLatch(conn, root+"/latch", name)
		events := l.Events()
		if err := l.Start(); err != nil {
			stop()
			conn.Close()
			continue
		}
		var term *check.LeaderTerm
		endTerm := func() {
			if term != nil {
				term.End = e.rec.Now()
				e.rec.AddLeaderTerm(*term)
				term = nil
			}
		}
		giveUp := time.After(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
	follow:
		for {
			select {
			case <-ctx.Done():
				break follow
			case ev, ok := <-events:
				if !ok {
					break follow
				}
				if ev.Leader && term == nil {
					term = &check.LeaderTerm{Participant: name, Start: e.rec.Now()}
					if ev.Grant != nil {
						term.Token = ev.Grant.Token()
					}
				} else if !ev.Leader {
					endTerm()
				}
			case s := <-states:
				if s == zk.StateSuspended || s == zk.StateLost || s == zk.StateClosed {
					endTerm()
				}
				if s == zk.StateLost || s == zk.StateClosed {
					break follow
				}
			case <-giveUp:
				if term != nil {
					break follow
				}
				giveUp = time.After(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
			}
		}
		// Closing gives leadership up: the term ends when Close is
		// called.
		endTerm()
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		l.Close(cctx)
		cancel()
		stop()
		conn.Close()
	}
}

// The slop covers the delivery of a leadership change inside this
// process (a notification, a state change, a goroutine's wake-up) on a
// loaded machine; a real double leadership lasts seconds (until a session
// timeout).
func (w *leaders) check(ctx context.Context, e *env) []check.Result {
	return []check.Result{check.Leaders(e.rec.History().Leaders, check.LeaderOptions{Slop: 500 * time.Millisecond, End: e.rec.Now()})}
}
