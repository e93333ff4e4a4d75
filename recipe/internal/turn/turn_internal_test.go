package turn

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// DeleteNode's delete outlives its bound: when the connection is down
// longer than that while the session lives on (a reconnection through a
// change of leader can take longer than the session timeout), the delete
// goes on in the background and the node goes once the client is back —
// no lock node is left behind for good by a live session.
func TestDeleteNodeGoesOnInTheBackground(t *testing.T) {
	old := cleanupBound
	cleanupBound = func(time.Duration) time.Duration { return 200 * time.Millisecond }
	defer func() { cleanupBound = old }()
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nw := &recipetest.Net{}
	c, err := zk.Connect(ctx, srv.Addr(), zk.WithSessionTimeout(30*time.Second), nw.Dialer())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	obs, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	if _, err := c.Create(ctx, "/lock-0000000000", nil, zk.OpenACLUnsafe, zk.ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	nw.Block(true)
	nw.Cut()
	if err := DeleteNode(ctx, c, "/lock-0000000000"); err == nil {
		t.Fatal("DeleteNode reported success while the connection was down")
	}
	if st, err := obs.Exists(ctx, "/lock-0000000000"); err != nil || st == nil {
		t.Fatalf("the node went while its client was cut off: %v %v", st, err)
	}
	nw.Block(false)
	for {
		st, ch, err := obs.ExistsW(ctx, "/lock-0000000000")
		if err != nil {
			t.Fatal(err)
		}
		if st == nil {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("the node is still there: the delete was given up")
		}
	}
	if err := c.WaitDeletes(ctx); err != nil {
		t.Fatal(err)
	}
}

var sortSeed = flag.Int64("sort-seed", 0, "TestSortNodesAsCurator's random seed (0: from the clock)")

// SortNodes orders as Curator's comparator does: stably, by the key left
// after each lock name in turn (compared here with a comparator that
// works the keys out at every comparison).
func TestSortNodesAsCurator(t *testing.T) {
	seed := *sortSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay: -sort-seed %d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	parts := []string{"_c_a1-", "_c_b2-", "", "x-"}
	locks := []string{"__READ__", "__WRIT__", "lock-"}
	for round := 0; round < 200; round++ {
		var names []string
		for i := rng.Intn(40); i > 0; i-- {
			names = append(names, fmt.Sprintf("%s%s%010d", parts[rng.Intn(len(parts))], locks[rng.Intn(len(locks))], rng.Intn(50)))
		}
		lockNames := locks[:1+rng.Intn(2)]
		want := slices.Clone(names)
		key := func(n string) string {
			for _, l := range lockNames {
				n = SortKey(n, l)
			}
			return n
		}
		slices.SortStableFunc(want, func(a, b string) int { return strings.Compare(key(a), key(b)) })
		SortNodes(names, lockNames...)
		if !slices.Equal(names, want) {
			t.Fatalf("round %d: got %v, want %v", round, names, want)
		}
	}
}
