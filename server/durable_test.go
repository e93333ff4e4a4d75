package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zk"
)

func durableServer(t *testing.T, dir string, snapCount int) *server.Server {
	t.Helper()
	s, err := server.New(server.Options{
		Addr: "127.0.0.1:0", TickTime: 100 * time.Millisecond, DataDir: dir, SnapCount: snapCount,
		FourLetterWords: []string{"*"},
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDurableRestart: concurrent writers, a clean stop, a restart on the
// same directory (through snapshots, SnapCount 25): the tree is the same,
// the zxid continues, and mntr says the server is not in-memory.
func TestDurableRestart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := durableServer(t, dir, 25)
	if !s.Durable() {
		t.Fatal("server with a data directory is not durable")
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := zk.Connect(ctx, s.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for i := 0; i < 50; i++ {
				if _, err := c.Create(ctx, fmt.Sprintf("/w%d-%d", w, i), []byte("x"), acl.OpenACLUnsafe, proto.ModePersistent); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var before []string
	var zxid int64
	s.Tree(func(tr *tree.Tree) { before, zxid = dumpTree(tr), tr.LastZxid() })
	s.Close()

	s2 := durableServer(t, dir, 25)
	defer s2.Close()
	var after []string
	var zxid2 int64
	s2.Tree(func(tr *tree.Tree) { after, zxid2 = dumpTree(tr), tr.LastZxid() })
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("tree differs after restart:\n%v\n%v", before, after)
	}
	if zxid2 < zxid {
		t.Fatalf("zxid went back from %d to %d", zxid, zxid2)
	}
	c, err := zk.Connect(ctx, s2.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, st, err := c.Create2(ctx, "/after", nil, acl.OpenACLUnsafe, proto.ModePersistent)
	if err != nil || st.Czxid <= zxid {
		t.Fatalf("create after restart: %s %+v %v", p, st, err)
	}
	out, err := zk.FourLetterWord(ctx, s2.Addr().String(), "mntr")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"zkgo_in_memory_only\tfalse", "zkgo_raft_leader\t1", "zkgo_wal_syncs\t", "zkgo_wal_entries\t", "zkgo_wal_prefilled_bytes\t"} {
		if !contains(out, want) {
			t.Fatalf("mntr lacks %q:\n%s", want, out)
		}
	}
}

// dumpTree lists every node with its data and Stat.
func dumpTree(t *tree.Tree) []string {
	var out []string
	var walk func(p string)
	walk = func(p string) {
		n := t.Get(p)
		if n == nil {
			return
		}
		out = append(out, fmt.Sprintf("%s %q %+v", p, n.Data(), n.Stat()))
		for _, k := range n.Children() { // sorted, shared: not to be modified
			if p == "/" {
				walk("/" + k)
			} else {
				walk(p + "/" + k)
			}
		}
	}
	walk("/")
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestSnapRetainCount: autopurge.snapRetainCount decides how many
// snapshots stay on disk after each new one.
func TestSnapRetainCount(t *testing.T) {
	dir := t.TempDir()
	s, err := server.New(server.Options{
		Addr: "127.0.0.1:0", TickTime: 100 * time.Millisecond, DataDir: dir, SnapCount: 10,
		SnapRetainCount: 5, NoSync: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zk.Connect(ctx, s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	snaps := func() []string {
		ents, err := os.ReadDir(filepath.Join(dir, "zkgo", "snap"))
		if err != nil {
			t.Fatal(err)
		}
		var snaps []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".snap") {
				snaps = append(snaps, e.Name())
			}
		}
		return snaps
	}
	// Snapshots are written in the background, one at a time (one due
	// meanwhile waits for a later write): after 120 creates (12 due),
	// create on until the directory holds 5, the number kept.
	for i := 0; ; i++ {
		if _, err := c.Create(ctx, fmt.Sprintf("/r%d", i), nil, acl.OpenACLUnsafe, proto.ModePersistent); err != nil {
			t.Fatal(err)
		}
		if i < 120 {
			continue
		}
		if got := snaps(); len(got) == 5 {
			break
		} else if i == 2000 {
			t.Fatalf("%d snapshots kept, want 5: %v", len(got), got)
		}
	}
}
