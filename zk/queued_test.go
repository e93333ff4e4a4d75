package zk

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zktest"
)

// TestWatcherQueuedBarrier: after a read on the watching Conn returns,
// Queued counts every notification of the changes made before the read
// (here, changes whose writes completed before it was sent), even while an
// unread backlog sits behind the Events channel.
func TestWatcherQueuedBarrier(t *testing.T) {
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w2, err := Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	w, err := c.AddWatch(ctx, "/q", proto.AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Queued() != 0 {
		t.Fatalf("Queued = %d before any change", w.Queued())
	}
	must(w2.Create(ctx, "/q", nil, openACL, proto.ModePersistent))
	want := uint64(1)
	for round := 0; round < 5; round++ {
		// 150 changes (more than the channel holds), none received yet.
		for i := 0; i < 50; i++ {
			p := fmt.Sprintf("/q/n%d-%d", round, i)
			must(w2.Create(ctx, p, nil, openACL, proto.ModePersistent))
			must(w2.Set(ctx, p, []byte("x"), AnyVersion))
			if err := w2.Delete(ctx, p, AnyVersion); err != nil {
				t.Fatal(err)
			}
			want += 3
		}
		if _, err := c.Exists(ctx, "/"); err != nil {
			t.Fatal(err)
		}
		if got := w.Queued(); got != want {
			t.Fatalf("round %d: Queued = %d after the read, want %d", round, got, want)
		}
	}
	for i := uint64(0); i < want; i++ {
		select {
		case <-w.Events():
		case <-ctx.Done():
			t.Fatalf("only %d of %d queued events received", i, want)
		}
	}
}
