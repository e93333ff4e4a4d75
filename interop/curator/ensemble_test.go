package curator_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/interop/curator"
	"github.com/zkgo/zkgo/zktest"
)

// TestEnsembleTracker: Curator's EnsembleTracker (on by default) reads
// /zookeeper/config from a zkgo ensemble and rewrites its connection string
// from the client addresses there. Curator is given one member only; it
// must end up with all three, and keep working when that member stops.
func TestEnsembleTracker(t *testing.T) {
	e := zktest.StartEnsemble(t, 3, 3)
	members, clientAddrs, cfg := e.Members, e.ClientAddrs, e.Config
	java := curator.StartPeer(t, clientAddrs[0])
	want := slices.Clone(clientAddrs)
	slices.Sort(want)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := strings.Split(java.Do(t, "connect-string"), ",")
		slices.Sort(got)
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Curator's connection string %v, want %v (/zookeeper/config:\n%s)", got, want, cfg.DynamicText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The member Curator was given goes away; Curator goes on through the
	// others it learnt from /zookeeper/config.
	members[0].Close()
	members[0] = nil
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		if java.Do(t, "mutex-acquire /ensemble-lock 5000") == "LOCKED" {
			java.Want(t, "OK", "mutex-release /ensemble-lock")
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("Curator could not take a lock after the member it was given stopped")
}
