package curator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe/cache"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tests/interop/curator"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// TestCachesWithCurator: Curator's CuratorCache and NodeCache see what a
// Go process writes, and zkgo's TreeCache and NodeCache see what a Curator
// process writes, against zkgo and against Apache ZooKeeper.
func TestCachesWithCurator(t *testing.T) {
	run := func(t *testing.T, addr, root string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		java := curator.StartPeer(t, addr)
		c, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		create := func(p, data string) {
			t.Helper()
			_, err := c.Create(ctx, p, []byte(data), zk.OpenACLUnsafe, zk.ModePersistent)
			must(err)
		}
		create(root, "")

		t.Run("CuratorSeesGo", func(t *testing.T) {
			n := root + "/n"
			java.Want(t, "OK", "cache-start tree %s", root)
			java.Want(t, "OK", "nodecache-start node %s", n)
			create(n, "v1")
			java.Want(t, "SEEN", "cache-await tree CREATED:%s:v1 10000", n)
			java.Want(t, "SEEN", "cache-await node NODE:%s:v1 10000", n)
			_, err := c.Set(ctx, n, []byte("v2"), -1)
			must(err)
			java.Want(t, "SEEN", "cache-await tree CHANGED:%s:v2 10000", n)
			java.Want(t, "SEEN", "cache-await node NODE:%s:v2 10000", n)
			create(n+"/deep", "d")
			java.Want(t, "SEEN", "cache-await tree CREATED:%s/deep:d 10000", n)
			must(c.DeleteAll(ctx, n))
			java.Want(t, "SEEN", "cache-await tree DELETED:%s/deep 10000", n)
			java.Want(t, "SEEN", "cache-await tree DELETED:%s 10000", n)
			java.Want(t, "SEEN", "cache-await node NODE:%s:NONE 10000", n)
			java.Want(t, "NONE", "cache-get tree %s", n)
			java.Want(t, "-", "cache-get tree %s", root)
			java.Want(t, "OK", "cache-close tree")
			java.Want(t, "OK", "cache-close node")
		})

		t.Run("GoSeesCurator", func(t *testing.T) {
			j := root + "/j"
			tc := cache.NewTree(c, root)
			nc := cache.NewNode(c, j)
			tevs, nevs := tc.Events(), nc.Events()
			must(tc.Start(ctx))
			defer tc.Close()
			must(nc.Start(ctx))
			defer nc.Close()
			expect := func(evs <-chan cache.Event, typ cache.EventType, path, data string) {
				t.Helper()
				for {
					select {
					case ev := <-evs:
						if ev.Type == cache.Initialized || (ev.Type == cache.Created && ev.Path == root) {
							continue
						}
						if ev.Type != typ || ev.Path != path || string(ev.Data) != data {
							t.Fatalf("got %v %s %q, want %v %s %q", ev.Type, ev.Path, ev.Data, typ, path, data)
						}
						return
					case <-time.After(30 * time.Second):
						t.Fatalf("no %v %s within 30s", typ, path)
					}
				}
			}
			java.Want(t, "OK", "write-create %s x1", j)
			expect(tevs, cache.Created, j, "x1")
			expect(nevs, cache.Created, j, "x1")
			java.Want(t, "OK", "write-set %s x2", j)
			expect(tevs, cache.Changed, j, "x2")
			expect(nevs, cache.Changed, j, "x2")
			java.Want(t, "OK", "write-create %s/k y", j)
			expect(tevs, cache.Created, j+"/k", "y")
			java.Want(t, "OK", "write-delete %s/k", j)
			expect(tevs, cache.Deleted, j+"/k", "y")
			java.Want(t, "OK", "write-delete %s", j)
			expect(tevs, cache.Deleted, j, "x2")
			expect(nevs, cache.Deleted, j, "x2")
			if _, ok := nc.Get(); ok {
				t.Fatal("the NodeCache still holds the deleted node")
			}
		})
		java.Want(t, "BYE", "quit")
	}
	t.Run("zkgo", func(t *testing.T) {
		srv := zktest.Start(t)
		run(t, srv.Addr(), "/interop-cache")
	})
	t.Run("apache", func(t *testing.T) {
		apachezk.SkipIfUnavailable(t, apacheErr)
		run(t, apache.Addr(), fmt.Sprintf("/interop-cache-%d", time.Now().UnixNano()))
	})
}
