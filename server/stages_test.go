package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// Every request's stages are counted: a write's propose, log and apply, a
// read's read, and the reply of each.
func TestRequestStages(t *testing.T) {
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := map[string]int64{}
	for _, k := range []string{"propose", "log", "apply", "read", "reply"} {
		before[k] = mntrValue(t, srv.Addr(), "zkgo_stage_"+k+"_count")
	}
	const n = 40
	for i := range n {
		if _, err := c.Set(ctx, "/", []byte{byte(i)}, -1); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Get(ctx, "/"); err != nil {
			t.Fatal(err)
		}
	}
	for k, least := range map[string]int64{"propose": n, "log": n, "apply": n, "read": n, "reply": 2 * n} {
		got := mntrValue(t, srv.Addr(), "zkgo_stage_"+k+"_count") - before[k]
		// The replies of one write call are one reply stage: with one
		// request at a time each reply has its own (the ping's too).
		if got < least {
			t.Errorf("stage %s: %d counted, want at least %d", k, got, least)
		}
		if ns := mntrValue(t, srv.Addr(), "zkgo_stage_"+k+"_ns"); ns <= 0 {
			t.Errorf("stage %s: %d ns in all", k, ns)
		}
	}
}
