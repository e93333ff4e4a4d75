package zktest_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// TestCluster: a partitioned leader loses leadership to the majority,
// writes go on there, and after healing and a restart every member has
// them; an observer serves the same data.
func TestCluster(t *testing.T) {
	c := zktest.StartCluster(t, 4, zktest.WithObservers(4))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if m := c.Member(3).Mode(); m != "observer" {
		t.Fatalf("member 4 is %s", m)
	}
	old := c.Leader()
	c.Isolate(old)
	deadline := time.Now().Add(30 * time.Second)
	lead := old
	for lead == old {
		if time.Now().After(deadline) {
			t.Fatal("no new leader after isolating the old one")
		}
		for i := 0; i < 3; i++ {
			if i != old && c.Member(i).Mode() == "leader" {
				lead = i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	w, err := zk.Connect(ctx, c.Addr(lead))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Create(ctx, "/majority", []byte("m"), acl.OpenACLUnsafe, proto.ModePersistent); err != nil {
		t.Fatal(err)
	}
	c.Heal()
	other := (lead + 1) % 3
	if other == old {
		other = (lead + 2) % 3
	}
	c.Stop(other)
	c.Restart(other)
	for _, i := range []int{old, other, 3} {
		r, err := zk.Connect(ctx, c.Addr(i))
		if err != nil {
			t.Fatalf("member %d: %v", i+1, err)
		}
		if _, err := r.Sync(ctx, "/"); err != nil {
			t.Fatalf("sync on member %d: %v", i+1, err)
		}
		if data, _, err := r.Get(ctx, "/majority"); err != nil || string(data) != "m" {
			t.Fatalf("member %d: %q %v", i+1, data, err)
		}
		r.Close()
	}
}
