package leader

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

// TestSelectorTurns: participants with auto-requeue take turns, one at a
// time, in queue order.
func TestSelectorTurns(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/sel"
		const n, turns = 3, 12
		var inside, total atomic.Int32
		order := make(chan int, 64)
		allQueued := make(chan struct{})
		var sels []*Selector
		for i := 0; i < n; i++ {
			fn := func(ctx context.Context, g *recipe.Grant) error {
				select { // the first turn waits until everyone has joined
				case <-allQueued:
				case <-ctx.Done():
					return ctx.Err()
				}
				if inside.Add(1) != 1 {
					t.Error("two leaders at once")
				}
				total.Add(1)
				inside.Add(-1)
				// Turns go on after the test stops reading: a full
				// channel must not keep the turn (and Close) waiting.
				select {
				case order <- i:
				case <-ctx.Done():
				}
				return nil
			}
			s := NewSelector(e.Connect(t), path, fmt.Sprintf("s%d", i), fn, WithAutoRequeue())
			sels = append(sels, s)
		}
		for _, s := range sels {
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
		}
		obs := e.Connect(t)
		for {
			ch, _, _ := obs.Children(ctx, path)
			if len(ch) == n {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		close(allQueued)
		seen := map[int]int{}
		var got []int
		for k := 0; k < turns; k++ {
			i := nextEvent(t, order)
			seen[i]++
			got = append(got, i)
		}
		for _, s := range sels {
			s.Close()
		}
		for i := 0; i < n; i++ {
			// FIFO requeueing gives each turns/n, but a participant that
			// is slow to requeue (a loaded machine) falls behind; FIFO
			// order itself is tested with the Mutex. Starvation is the
			// error here.
			if seen[i] < 1 {
				t.Fatalf("turns %v (order %v): participant %d starved", seen, got, i)
			}
		}
		if ch, _, _ := e.Connect(t).Children(ctx, path); len(ch) != 0 {
			t.Fatalf("nodes left: %v", ch)
		}
	})
}

// TestSelectorLossAndInterrupt: the LeaderFunc's ctx is cancelled when the
// connection is suspended (strict policy) and on Interrupt; the next
// participant then leads; Participants shows the ids.
func TestSelectorLossAndInterrupt(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/sel-loss"
		nw := &recipetest.Net{}
		started := make(chan string, 8)
		ended := make(chan error, 8)
		leaderFn := func(name string) LeaderFunc {
			return func(ctx context.Context, g *recipe.Grant) error {
				started <- name
				<-ctx.Done()
				ended <- g.Err()
				return ctx.Err()
			}
		}
		a := NewSelector(e.Connect(t, nw.Dialer()), path, "a", leaderFn("a"))
		b := NewSelector(e.Connect(t), path, "b", leaderFn("b"))
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		if got := nextEvent(t, started); got != "a" {
			t.Fatalf("first leader %s", got)
		}
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		for {
			ps, err := a.Participants(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) == 2 {
				if ps[0].ID != "a" || ps[1].ID != "b" || !ps[0].Leader || !strings.Contains(ps[0].Path, "-lock-") {
					t.Fatalf("participants %+v", ps)
				}
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		nw.Cut()
		if err := nextEvent(t, ended); !errors.Is(err, recipe.ErrSuspended) {
			t.Fatalf("a's leadership ended with %v", err)
		}
		if got := nextEvent(t, started); got != "b" {
			t.Fatalf("after a's loss %s leads", got)
		}
		if a.Requeue() != true {
			t.Fatal("Requeue of an idle selector")
		}
		b.Interrupt()
		nextEvent(t, ended)
		if got := nextEvent(t, started); got != "a" {
			t.Fatalf("after b's interrupt %s leads", got)
		}
		a.Close()
		b.Close()
	})
}

func TestElectionEvents(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		root := e.Root + "/election"
		c := e.Connect(t)
		if _, err := c.CreateAll(ctx, root, nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		a := NewElection(e.Connect(t), root, "host-a")
		b := NewElection(e.Connect(t), root, "host-b")
		types := func(el *Election, stopAt ElectionEventType) []ElectionEventType {
			var out []ElectionEventType
			for {
				ev := nextEvent(t, el.Events())
				out = append(out, ev.Type)
				if ev.Type == stopAt {
					return out
				}
			}
		}
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		want := []ElectionEventType{ElectionStart, ElectionOfferStart, ElectionOfferComplete, ElectionDetermineStart,
			ElectionDetermineComplete, ElectionElectedStart, ElectionElectedComplete}
		if got := types(a, ElectionElectedComplete); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("leader's events %v, want %v", got, want)
		}
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		want = []ElectionEventType{ElectionStart, ElectionOfferStart, ElectionOfferComplete, ElectionDetermineStart,
			ElectionDetermineComplete, ElectionReadyStart, ElectionReadyComplete}
		if got := types(b, ElectionReadyComplete); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("follower's events %v, want %v", got, want)
		}
		if h, err := b.LeaderHostName(ctx); err != nil || h != "host-a" {
			t.Fatalf("LeaderHostName = %q, %v", h, err)
		}
		ga := a.Grant()
		ch, _, _ := c.Children(ctx, root)
		if len(ch) != 2 || !strings.HasPrefix(ch[0], "n_") {
			t.Fatalf("offers %v", ch)
		}
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if got := types(a, ElectionStopComplete); fmt.Sprint(got) != fmt.Sprint([]ElectionEventType{ElectionStopStart, ElectionStopComplete}) {
			t.Fatalf("stop events %v", got)
		}
		want = []ElectionEventType{ElectionDetermineStart, ElectionDetermineComplete, ElectionElectedStart, ElectionElectedComplete}
		if got := types(b, ElectionElectedComplete); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("new leader's events %v, want %v", got, want)
		}
		if gb := b.Grant(); gb == nil || gb.Token() <= ga.Token() {
			t.Fatalf("grant %v after %v", gb, ga)
		}
		if h, _ := b.LeaderHostName(ctx); h != "host-b" {
			t.Fatalf("LeaderHostName = %q", h)
		}
		b.Stop(ctx)
		for range b.Events() {
		}
		if ElectionReadyComplete.String() != "ReadyComplete" {
			t.Fatalf("String() = %q", ElectionReadyComplete.String())
		}
	})
}
