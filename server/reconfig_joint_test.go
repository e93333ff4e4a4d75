package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// Removing two of five voters at once, right after adding two (one of
// them never heard from: a reserved identity), runs raft's joint
// configuration: until the leader's leaving entry commits, a majority of
// the outgoing voters must still answer. Members used to drop the
// removed members' transports, and stop resolving their addresses, as
// soon as the joint configuration applied: about one run in four, the
// ensemble was left in the joint configuration and no member served.
func TestReconfigRemovesTwoVotersRightAfterAddingTwo(t *testing.T) {
	e := zktest.StartEnsemble(t, 5, 3, func(o *server.Options) {
		o.ReconfigEnabled, o.SkipACL, o.MaxSessionTimeout = true, true, 15*time.Second
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := zk.Connect(ctx, e.ClientAddrs, zk.WithEnsembleTracking(false), zk.WithSessionTimeout(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	e.Start(3, 3)
	e.Start(4, 3)
	for {
		_, _, err := admin.IncrementalReconfig(ctx, []string{e.Line(3), e.Line(4)}, nil, -1)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	for {
		_, _, err := admin.IncrementalReconfig(ctx, nil, []string{"1", "2"}, -1)
		if err == nil {
			break
		}
		if !errors.Is(err, zk.ErrReconfigInProgress) && !errors.Is(err, zk.ErrConnectionLoss) && !errors.Is(err, zk.ErrNewConfigNoQuorum) || ctx.Err() != nil {
			t.Fatalf("removing 1 and 2: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("removed after %v", time.Since(start))
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	c, err := zk.Connect(cctx, e.ClientAddrs[2:], zk.WithEnsembleTracking(false))
	if err != nil {
		for i, m := range e.Members {
			if m != nil {
				mntr := m.FourLetterWord("mntr")
				var keep []string
				for _, l := range strings.Split(mntr, "\n") {
					if strings.Contains(l, "raft") || strings.Contains(l, "zkgo: waiting") || strings.Contains(l, "server_state") {
						keep = append(keep, l)
					}
				}
				t.Logf("member %d: %s\n%s", i+1, m.FourLetterWord("srvr"), strings.Join(keep, "\n"))
			}
		}
		t.Fatalf("no client session on 3, 4, 5 within 10 s of the removal: %v", err)
	}
	defer c.Close()
	// A write may meet a change of leader (leaving the joint
	// configuration can move leadership): its connection closes, with
	// the outcome unknown, and the client retries.
	for retried := false; ; retried = true {
		_, err := c.Create(cctx, "/after", nil, zk.OpenACLUnsafe, zk.ModePersistent)
		if err == nil || retried && errors.Is(err, zk.ErrNodeExists) {
			break
		}
		if !errors.Is(err, zk.ErrConnectionLoss) || cctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
