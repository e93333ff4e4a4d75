package server_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zktest"
)

// A snapshot that lets go of a log over ReturnMemoryAfter makes the server
// return memory once the writes stop (ReturnMemoryQuiet without an
// applied entry); smaller ones, or a negative ReturnMemoryAfter, do not,
// and neither does one while the writes have not stopped for that long.
func TestMemoryReturnedAfterLargeLogCompacted(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit int64
		quiet time.Duration
		want  bool
	}{
		{"over", 16 << 10, 0, true},
		{"never", -1, 0, false},
		{"under", 64 << 20, 0, false},
		{"writing", 16 << 10, time.Hour, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
				o.DataDir, o.NoSync, o.SnapCount = t.TempDir(), true, 40
				o.ReturnMemoryAfter, o.ReturnMemoryQuiet = c.limit, c.quiet
				o.ReturnMemoryHeld = -1 // (TestMemoryReturnedAfterWritesStop)
				o.FourLetterWords = []string{"*"}
			}))
			conn := dial(t, srv.Addr())
			data := bytes.Repeat([]byte("m"), 1024)
			for i := range 100 {
				if code := call(t, conn, proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("/m%d", i), Data: data, ACL: openACL}, nil); code != proto.ErrOk {
					t.Fatal(code)
				}
			}
			// Two snapshots of 40 entries of 1 KiB: each lets go of
			// more than 16 KiB of log.
			waitMntr(t, srv.Addr(), "zkgo_last_snapshot_bytes", func(v int64) bool { return v > 0 })
			if c.want {
				waitMntr(t, srv.Addr(), "zkgo_memory_returns", func(v int64) bool { return v >= 1 })
				return
			}
			// The snapshots are written and installed before the hook
			// is called: wait for both, then for the hook's effect.
			waitMntr(t, srv.Addr(), "zkgo_raft_snapshot_index", func(v int64) bool { return v >= 80 })
			if v := mntrValue(t, srv.Addr(), "zkgo_memory_returns"); v != 0 {
				t.Fatalf("%d memory returns with ReturnMemoryAfter %d", v, c.limit)
			}
		})
	}
}

// A member that loads a tree of at least ReturnMemoryAfter bytes from its
// data directory returns memory once loaded; a smaller tree does not.
func TestMemoryReturnedAfterStartupLoad(t *testing.T) {
	dir := t.TempDir()
	opts := func(limit int64) zktest.Option {
		return zktest.WithOptions(func(o *server.Options) {
			o.DataDir, o.NoSync, o.ReturnMemoryAfter = dir, true, limit
			o.ReturnMemoryHeld = -1 // (TestMemoryReturnedAfterWritesStop)
		})
	}
	first, err := zktest.New(opts(-1))
	if err != nil {
		t.Fatal(err)
	}
	conn := dial(t, first.Addr())
	data := bytes.Repeat([]byte("r"), 1024)
	for i := range 64 {
		if code := call(t, conn, proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("/r%d", i), Data: data, ACL: openACL}, nil); code != proto.ErrOk {
			t.Fatal(code)
		}
	}
	conn.Close()
	first.Close()

	// 64 KiB of data: under a 1 MiB limit, over a 32 KiB one.
	small, err := zktest.New(opts(1 << 20))
	if err != nil {
		t.Fatal(err)
	}
	// (The hook runs before Start returns.)
	if v := mntrValue(t, small.Addr(), "zkgo_memory_returns"); v != 0 {
		t.Errorf("%d memory returns after loading 64 KiB with a 1 MiB limit", v)
	}
	small.Close()
	large, err := zktest.New(opts(32 << 10))
	if err != nil {
		t.Fatal(err)
	}
	defer large.Close()
	waitMntr(t, large.Addr(), "zkgo_memory_returns", func(v int64) bool { return v >= 1 })
}

var garbage []byte

// A burst of writes that no snapshot compacts still makes the server
// return memory once the writes stop, if the runtime holds at least
// ReturnMemoryHeld (and 1/16 of the live heap) it could give back; not
// with a negative ReturnMemoryHeld.
func TestMemoryReturnedAfterWritesStop(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit int64
		want  bool
	}{
		{"on", 1 << 20, true},
		{"off", -1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
				o.DataDir, o.NoSync, o.SnapCount = t.TempDir(), true, 1_000_000
				o.ReturnMemoryHeld, o.ReturnMemoryQuiet = c.limit, 50*time.Millisecond
				o.FourLetterWords = []string{"*"}
			}))
			conn := dial(t, srv.Addr())
			for i := range 20 {
				if code := call(t, conn, proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("/w%d", i), ACL: openACL}, nil); code != proto.ErrOk {
					t.Fatal(code)
				}
			}
			// Memory the runtime could give back once the writes
			// stopped: garbage, replenished until the return (a
			// collection meanwhile would make it free memory, which
			// the scavenger may give back by itself).
			deadline := time.Now().Add(10 * time.Second)
			if !c.want {
				deadline = time.Now().Add(time.Second)
			}
			for time.Now().Before(deadline) {
				for range 16 {
					garbage = make([]byte, 4<<20)
				}
				garbage = nil
				if mntrValue(t, srv.Addr(), "zkgo_memory_returns") > 0 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if v := mntrValue(t, srv.Addr(), "zkgo_memory_returns"); (v > 0) != c.want {
				t.Fatalf("%d memory returns with ReturnMemoryHeld %d", v, c.limit)
			}
		})
	}
}
