package zk

import (
	"errors"
	"testing"

	"github.com/zkgo/zkgo/proto"
)

// Closing the last persistent Watcher of a path while a one-shot watch of
// the same session remains there removes the persistent watch on the
// server (ZooKeeper 3.9's watcher types 4 and 5) and leaves the one-shot
// watch: the server stops sending events nobody reads. Before, the
// client sent nothing unless no watch at all was left on the path.
func TestClosingPersistentWatcherKeepsOneShot(t *testing.T) {
	e := zkgoEnv(t)
	for _, c := range []struct {
		mode AddWatchMode
		typ  WatcherType
	}{{proto.AddWatchPersistent, proto.WatcherPersistent}, {proto.AddWatchPersistentRecursive, proto.WatcherPersistentRecursive}} {
		t.Run(c.typ.String(), func(t *testing.T) {
			ctx := testCtx(t)
			conn := connect(t, e.addr)
			root := testRoot(t, conn)
			w, err := conn.AddWatch(ctx, root, c.mode)
			if err != nil {
				t.Fatal(err)
			}
			_, _, ch, err := conn.GetW(ctx, root)
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			// The removal goes out before this request on the same
			// connection, so the server has applied it when it answers.
			if err := conn.CheckWatches(ctx, root, c.typ); !errors.Is(err, ErrNoWatcher) {
				t.Fatalf("persistent watch after Close: %v, want ErrNoWatcher", err)
			}
			if err := conn.CheckWatches(ctx, root, WatcherData); err != nil {
				t.Fatalf("one-shot data watch after Close: %v", err)
			}
			must(conn.Set(ctx, root, []byte("x"), AnyVersion))
			if ev := waitEvent(t, ch); ev.Type != EventNodeDataChanged || ev.Path != root {
				t.Fatalf("one-shot event %+v", ev)
			}
		})
	}
}
