package barrier

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

func waitTick() { time.Sleep(time.Millisecond) }

func isMember(name string) bool { return name != ReadyNode }

var doubleSeed = flag.Uint64("barrier.seed", 0, "seed of TestDoubleBarrierRounds (0: random)")

// TestDoubleBarrierRounds: n sessions go through several rounds of a
// double barrier (a fresh path per round), starting in a random order and
// pausing randomly inside. No member passes Enter before all n have
// called it, and no Leave returns before n-1 members (every member but
// possibly the lowest) have called Leave. Nothing is left behind.
func TestDoubleBarrierRounds(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		seed := *doubleSeed
		if seed == 0 {
			seed = rand.Uint64()
		}
		t.Logf("seed %d (replay with -barrier.seed %d)", seed, seed)
		rng := rand.New(rand.NewPCG(seed, 0))
		ctx := recipetest.Ctx(t)
		const n, rounds = 6, 3
		conns := make([]*zk.Conn, n)
		for i := range conns {
			conns[i] = e.Connect(t)
		}
		for r := range rounds {
			path := fmt.Sprintf("%s/double/round-%d", e.Root, r)
			var arrived, leaving atomic.Int32
			errs := make(chan error, 2*n)
			var wg sync.WaitGroup
			order := rng.Perm(n)
			pauses := make([]int, n)
			for i := range pauses {
				pauses[i] = rng.IntN(50)
			}
			for _, i := range order {
				d, err := NewDouble(conns[i], path, n)
				if err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					arrived.Add(1)
					if err := d.Enter(ctx); err != nil {
						errs <- fmt.Errorf("member %d enter: %w", i, err)
						return
					}
					if a := arrived.Load(); a < n {
						errs <- fmt.Errorf("member %d entered when %d of %d had arrived", i, a, n)
					}
					for range pauses[i] {
						runtime.Gosched()
					}
					leaving.Add(1)
					if err := d.Leave(ctx); err != nil {
						errs <- fmt.Errorf("member %d leave: %w", i, err)
						return
					}
					if l := leaving.Load(); l < n-1 {
						errs <- fmt.Errorf("member %d left when %d of %d were leaving", i, l, n)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("round %d: %v (seed %d)", r, err, seed)
			}
			if t.Failed() {
				return
			}
			ch, _, err := conns[0].Children(ctx, path)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				t.Fatal(err)
			}
			if len(ch) != 0 {
				t.Fatalf("round %d left %v behind", r, ch)
			}
		}
	})
}

// TestDoubleBarrierLayout: the member and ready nodes are Curator's, a
// member arriving after the barrier is complete passes at once (n is a
// threshold), a cancelled Enter withdraws its node, and Leave before Enter
// is an error.
func TestDoubleBarrierLayout(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/layout"
		obs := e.Connect(t)
		a, _ := NewDouble(e.Connect(t), path, 2)
		if err := a.Leave(ctx); !errors.Is(err, ErrNotEntered) {
			t.Fatalf("Leave before Enter: %v", err)
		}
		if _, err := NewDouble(obs, path, 0); err == nil {
			t.Fatal("NewDouble with 0 members")
		}
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err := a.Enter(tctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Enter alone with a deadline: %v", err)
		}
		if ch := waitChildren(t, obs, path, 0, nil); len(ch) != 0 {
			t.Fatalf("cancelled Enter left %v", ch)
		}
		if err := a.Enter(ctx); !errors.Is(err, ErrEntered) {
			t.Fatalf("second Enter: %v", err)
		}

		b, _ := NewDouble(e.Connect(t), path, 2)
		c, _ := NewDouble(e.Connect(t), path, 2)
		done := make(chan error, 1)
		go func() { done <- b.Enter(ctx) }()
		members := waitChildren(t, obs, path, 1, isMember)
		if !isUUID(members[0]) || b.Path() != path+"/"+members[0] {
			t.Fatalf("member node %q is not a UUID (want %s)", members[0], b.Path())
		}
		st, err := obs.Exists(ctx, b.Path())
		if err != nil || st == nil || st.EphemeralOwner == 0 {
			t.Fatalf("member node %v %v is not ephemeral", st, err)
		}
		if err := c.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		st, err = obs.Exists(ctx, path+"/"+ReadyNode)
		if err != nil || st == nil || st.EphemeralOwner != 0 {
			t.Fatalf("ready node %+v %v", st, err)
		}
		// A third member passes at once: the barrier is complete.
		d, _ := NewDouble(e.Connect(t), path, 2)
		if err := d.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, m := range []*DoubleBarrier{b, c, d} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := m.Leave(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if ch := waitChildren(t, obs, path, 0, nil); len(ch) != 0 {
			t.Fatalf("left behind: %v", ch)
		}
	})
}

func isUUID(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	return strings.Trim(strings.ReplaceAll(s, "-", ""), "0123456789abcdef") == ""
}

// TestDoubleBarrierSessions: a waiting member rides out a cut connection;
// a member whose session expires stops with zk.ErrSessionExpired, its node
// goes, and the barrier completes with a replacement.
func TestDoubleBarrierSessions(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/sessions"
		obs := e.Connect(t)
		const n = 3
		cutNet, expNet := &recipetest.Net{}, &recipetest.Net{}
		cutConn, expConn := e.Connect(t, cutNet.Dialer()), e.Connect(t, expNet.Dialer())
		cut, _ := NewDouble(cutConn, path, n)
		exp, _ := NewDouble(expConn, path, n)
		cutDone, expDone := make(chan error, 1), make(chan error, 1)
		go func() { cutDone <- cut.Enter(ctx) }()
		go func() { expDone <- exp.Enter(ctx) }()
		waitChildren(t, obs, path, 2, isMember)
		waitWatches(t, []*recipetest.Net{cutNet, expNet}, []*zk.Conn{cutConn, expConn}, 1)

		states, stop := cutConn.NotifyState()
		defer stop()
		cutNet.Cut()
		recipetest.WaitState(t, states, zk.StateReconnected)

		expNet.Expire(t, e.Addr, expConn)
		if err := <-expDone; !errors.Is(err, zk.ErrSessionExpired) {
			t.Fatalf("Enter whose session expired: %v", err)
		}
		waitChildren(t, obs, path, 1, isMember)

		var others []*DoubleBarrier
		for range 2 {
			m, _ := NewDouble(e.Connect(t), path, n)
			others = append(others, m)
		}
		enterAll := make(chan error, len(others))
		for _, m := range others {
			go func() { enterAll <- m.Enter(ctx) }()
		}
		if err := <-cutDone; err != nil {
			t.Fatalf("Enter across a reconnection: %v", err)
		}
		for range others {
			if err := <-enterAll; err != nil {
				t.Fatal(err)
			}
		}
		leaveAll := make(chan error, 3)
		for _, m := range append(others, cut) {
			go func() { leaveAll <- m.Leave(ctx) }()
		}
		for range 3 {
			if err := <-leaveAll; err != nil {
				t.Fatal(err)
			}
		}
	})
}
