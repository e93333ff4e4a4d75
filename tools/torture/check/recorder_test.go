package check

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestRecorderConcurrent: workloads record at once (run with -race);
// History holds every record, and a later append does not show in an
// earlier History.
func TestRecorderConcurrent(t *testing.T) {
	const workers, each = 8, 100
	r := NewRecorder(time.Now())
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := fmt.Sprintf("c%d", w)
			for i := range each {
				call := r.Now()
				ret := r.Now()
				prefix := fmt.Sprintf("%s-%d-", c, i)
				r.AddSeqCreate(SeqCreate{Client: c, Parent: "/q", Prefix: prefix, Call: call, Return: ret, Outcome: Unknown})
				r.AddSeqListing(SeqListing{Client: c, Parent: "/q", Call: call, Return: ret})
				r.AddEphemeralCreate(EphemeralCreate{Client: c, Path: "/e/" + prefix, Call: call, Return: ret})
				r.AddEphemeralDelete(EphemeralDelete{Client: c, Path: "/e/" + prefix, Call: call, Return: ret})
				r.AddSessionEnd(SessionEnd{Client: c, At: ret})
				r.AddObservation(Observation{Client: c, Path: "/e/" + prefix, Call: call, Return: ret})
				r.AddWatch(Watch{ID: prefix, Client: c, Path: "/w"})
				r.AddWrite(Write{Client: c, Path: "/w/" + prefix, Change: Created, Call: call, Return: ret})
				r.AddWatchEvent(WatchEvent{Watch: prefix, At: ret, Change: Created, Path: "/w/" + prefix})
				r.AddConnChange(ConnChange{Client: c, At: ret, Connected: true})
				r.AddSessionOp(SessionOp{Client: c, Kind: OpOther, Call: call, Return: ret})
				r.AddLockHold(LockHold{Client: c, Token: int64(w*each + i + 1), Acquired: call})
				r.AddFencedWrite(FencedWrite{Client: c, Token: int64(w*each + i + 1), Call: call, Return: ret})
				r.AddLeaderTerm(LeaderTerm{Participant: c, Start: call, End: ret})
			}
		}()
	}
	wg.Wait()
	h := r.History()
	n := workers * each
	counts := map[string]int{
		"seq creates": len(h.Sequential.Creates), "listings": len(h.Sequential.Listings),
		"ephemeral creates": len(h.Ephemerals.Creates), "deletes": len(h.Ephemerals.Deletes),
		"ends": len(h.Ephemerals.Ends), "observations": len(h.Ephemerals.Observations),
		"watches": len(h.Watches.Watches), "writes": len(h.Watches.Writes), "events": len(h.Watches.Events),
		"conns": len(h.Watches.Conns), "session ops": len(h.Sessions.Ops), "holds": len(h.Locks.Holds),
		"fenced writes": len(h.Locks.Writes), "terms": len(h.Leaders.Terms),
	}
	for what, got := range counts {
		if got != n {
			t.Errorf("%d %s, want %d", got, what, n)
		}
	}
	for _, c := range h.Sequential.Creates {
		if c.Call < 0 || c.Return < c.Call {
			t.Fatalf("times out of order: %v", c)
		}
	}
	r.AddLeaderTerm(LeaderTerm{Participant: "late"})
	if len(h.Leaders.Terms) != n {
		t.Error("a later append shows in an earlier History")
	}
}

// TestRecorderClock: At and Now count from the run's start.
func TestRecorderClock(t *testing.T) {
	start := time.Now()
	r := NewRecorder(start)
	if got := r.At(start.Add(time.Second)); got != int64(time.Second) {
		t.Errorf("At(start+1s) = %d", got)
	}
	a := r.Now()
	b := r.Now()
	if a < 0 || b < a {
		t.Errorf("Now went %d, %d", a, b)
	}
}
