package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/linearize"
	"github.com/zkgo/zkgo/zk"
)

var linSeed = flag.Uint64("lin.seed", 0, "the seed of the tests that check linearizability (TestLinearizableUnderKills, TestRollingReplacement): the members killed, the sessions' connection orders and operations (0: a new one, logged); the timing is not replayed")

// linRand returns the generator of a linearizability test, seeded by
// -lin.seed or at random, and logs the seed.
func linRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *linSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -lin.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// TestLinearizableUnderKills: three zoo.cfg processes; six clients, each
// connected with its own order of the members, read (sync, then getData)
// and write (setData, unconditional or on the version last seen; create)
// five znodes at random, while members are killed with SIGKILL and
// started again one at a time — the leader, a follower, the leader again,
// each started again once the other two have answered operations without
// it — and then every member in turn in a rolling restart. The clients see
// no error but connection losses, and the recorded history, with every
// request that ended in a connection loss taken as possibly done, is
// linearizable (tests/framework/linearize). A last session reads every
// znode at the end, so an acknowledged write lost late shows too.
func TestLinearizableUnderKills(t *testing.T) {
	linearizableUnderKills(t, "", false)
}

// TestLinearizableReadsUnderKills is TestLinearizableUnderKills with
// zkgo.reads=linearizable and reads without a sync first: plain getData
// through any member, killed and restarted as above, is linearizable.
func TestLinearizableReadsUnderKills(t *testing.T) {
	linearizableUnderKills(t, "zkgo.reads=linearizable\n", true)
}

// linearizableUnderKills runs the kills with the zoo.cfg keys extra,
// reads without a sync first if noSync.
func linearizableUnderKills(t *testing.T, extra string, noSync bool) {
	rng := linRand(t)

	const n = 3
	// A session timeout the clients get (the default maximum is 20
	// ticks, 2 s here): a kill must cost them connection losses only.
	cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\nsnapCount=500\n"+extra)
	var servers []string
	for _, l := range lines {
		_, client, _ := strings.Cut(l, ";")
		servers = append(servers, client)
	}
	m := newMemberProcs(t, cfgs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m.startHealthy(ctx, servers, "/lin")

	keys := make([]string, 5)
	for i := range keys {
		keys[i] = fmt.Sprintf("/lin/k%d", i)
	}
	rec := linearize.NewRecorder()
	rec.NoSync = noSync
	w := linearize.StartWorkload(ctx, t, rec, rng, servers, 6, keys)
	// Between steps the clients have this many operations answered, and
	// a random number more, so kills fall at different points.
	const progress = 100
	steps := func() int64 { return progress + rng.Int64N(progress) }
	w.WaitOps(ctx, t, steps(), "starting")

	leader := func() int {
		for i := range n {
			if mntrKey(ctx, m.procs[i].addr, "zk_server_state") == "leader" {
				return i
			}
		}
		return rng.IntN(n)
	}
	restart := func(i int, what string) {
		t.Helper()
		m.procs[i].kill() // returns once the process is gone: its data directory is free
		w.WaitOps(ctx, t, steps(), what+", without it")
		m.start(i)
		waitHealthy(ctx, t, servers, what)
		w.WaitOps(ctx, t, steps(), what)
	}
	for k := range 3 {
		victim := leader()
		if k == 1 { // a follower
			victim = (victim + 1 + rng.IntN(n-1)) % n
		}
		restart(victim, fmt.Sprintf("kill %d (member %d)", k+1, victim+1))
	}
	for _, i := range rng.Perm(n) {
		restart(i, fmt.Sprintf("rolling restart: member %d", i+1))
	}
	w.Finish(t)

	final, err := zk.Connect(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	defer final.Close()
	fc := rec.Client(w.Clients, final)
	for _, k := range keys {
		if err := retryLoss(ctx, func() error { _, err := fc.Get(ctx, k); return err }); err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("final read of %s: %v", k, err)
		}
	}

	start := time.Now()
	linearize.Require(t, rec.History(), time.Minute)
	t.Logf("%+v: linearizable (checked in %v)", rec.Counts(), time.Since(start).Round(time.Millisecond))
}
