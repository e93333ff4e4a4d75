package turn

import (
	"context"
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
