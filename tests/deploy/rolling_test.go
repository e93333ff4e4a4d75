package deploy

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

var linSeed = flag.Uint64("lin.seed", 0, "the seed of TestRollingReplacementOfEveryMachine: the sessions' server orders and operations (0: a new one, logged); the timing is not replayed")

// Every machine of a 3-member ensemble replaced by a new one, on a new
// address, with reconfig, while sessions read and write: add a new
// machine's server (before it starts, as ZooKeeper allows), start it,
// remove an old one, stop it — three times. The sessions' connection
// strings list all six machines (the first three, then the new ones), so
// they move on as members go. On zkgo their history is linearizable. On
// Apache ZooKeeper its writes are; its reads (sync, then getData) may
// answer from a member that has not applied a write another session saw
// acknowledged — sync is not a quorum operation there, and a session that
// moves to a new member during a reconfig can read behind — so they are
// counted and logged, not checked.
func TestRollingReplacementOfEveryMachine(t *testing.T) {
	seed := *linSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -lin.seed=%d)", seed, seed)
	eachImpl(t, 4*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		rng := rand.New(rand.NewPCG(seed, 0))
		n, e, lines := reconfigMachines(t, im, 6)
		var clients []string
		for _, mb := range e {
			clients = append(clients, mb.clientAddr())
		}
		for _, mb := range e[:3] {
			mb.writeConfig(reconfigCommon + strings.Join(lines[:3], "\n"))
			mb.start()
		}
		e[:3].waitLeader(ctx, t)
		admin := connect(ctx, t, e[0], e[1], e[2], e[3], e[4], e[5])
		// The znodes start absent, as the checker's model does.
		rec := linearize.NewRecorder()
		w := linearize.StartWorkload(ctx, t, rec, rng, clients, 4, []string{"/a", "/b", "/c"}, zk.WithDialer(n.dial))
		const progress = 150
		w.WaitOps(ctx, t, progress, "starting")
		reconfig := func(what string, joining, leaving []string) {
			t.Helper()
			for {
				_, _, err := admin.IncrementalReconfig(ctx, joining, leaving, -1)
				if err == nil {
					return
				}
				// In progress (a promotion), or the connection lost
				// to a member that left: ask again.
				if !errors.Is(err, zk.ErrReconfigInProgress) && !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
					t.Fatalf("%s: %v", what, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		for k := range 3 {
			old, nw := e[k], e[k+3]
			reconfig(fmt.Sprintf("add server %d", nw.id), []string{lines[k+3]}, nil)
			var members []string
			for j := k; j <= k+3; j++ {
				members = append(members, lines[j])
			}
			nw.writeConfig(reconfigCommon + strings.Join(members, "\n"))
			nw.start()
			e[k:k+4].waitLeader(ctx, t)
			w.WaitOps(ctx, t, progress, fmt.Sprintf("server %d added", nw.id))
			reconfig(fmt.Sprintf("remove server %d", old.id), nil, []string{fmt.Sprint(old.id)})
			old.kill()
			e[k+1:k+4].waitLeader(ctx, t)
			w.WaitOps(ctx, t, progress, fmt.Sprintf("server %d removed", old.id))
		}
		w.Finish(t)
		start := time.Now()
		h := rec.History()
		if im == apache {
			t.Logf("apache: %d of %d operations were reads behind an acknowledged write", linearize.StaleReads(h), len(h))
			h = linearize.Writes(h)
		}
		linearize.Require(t, h, time.Minute)
		t.Logf("%s: %+v: linearizable (checked in %v)", im, rec.Counts(), time.Since(start).Round(time.Millisecond))
	})
}
