package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// exists needs READ on an existing node (ZooKeeper 3.8.4+/3.9.2+,
// ZOOKEEPER-2590): NoAuth without it, and the refused request sets no
// watch; a missing node is NoNode (and watched) whatever its parent's
// ACL. Options.ExistsWithoutRead answers as 3.8.0 did.
func TestExistsNeedsRead(t *testing.T) {
	for _, without := range []bool{false, true} {
		zs := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.ExistsWithoutRead = without }))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		owner, err := zk.Connect(ctx, zs.Addr(), zk.WithAuth("digest", []byte("u1:p1")))
		if err != nil {
			t.Fatal(err)
		}
		defer owner.Close()
		other, err := zk.Connect(ctx, zs.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		secret := []zk.ACL{{Perms: zk.PermAll, ID: zk.Id{Scheme: "digest", ID: acl.DigestID("u1", "p1")}}}
		if _, err := owner.Create(ctx, "/secret", nil, secret, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		st, ch, err := other.ExistsW(ctx, "/secret")
		switch {
		case without && (err != nil || st == nil):
			t.Fatalf("ExistsWithoutRead: %v %v", st, err)
		case !without && !errors.Is(err, zk.ErrNoAuth):
			t.Fatalf("exists without READ: %v %v, want NoAuth", st, err)
		}
		if err := other.CheckWatches(ctx, "/secret", proto.WatcherData); without != (err == nil) {
			t.Fatalf("ExistsWithoutRead=%v: watch after exists: %v", without, err)
		}
		if _, err := owner.Exists(ctx, "/secret"); err != nil {
			t.Fatalf("exists with READ: %v", err)
		}
		// A missing child of an unreadable node: NoNode, watched.
		if st, ch2, err := other.ExistsW(ctx, "/secret/missing"); err != nil || st != nil || ch2 == nil {
			t.Fatalf("exists of a missing node: %v %v", st, err)
		}
		_ = ch
	}
}
