package curator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/leader"
	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tests/interop/curator"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// TestRecipesWithCurator: a Go process using zkgo's recipes and a Java
// process using Curator 5's take part in the same locks, semaphore and
// election, against zkgo and against Apache ZooKeeper. One Curator JVM per
// server.
func TestRecipesWithCurator(t *testing.T) {
	run := func(t *testing.T, addr, root string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		java := curator.StartPeer(t, addr)
		c, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		t.Run("Mutex", func(t *testing.T) { testMutexInterop(t, ctx, java, c, root+"/mutex") })
		t.Run("RWMutex", func(t *testing.T) { testRWInterop(t, ctx, java, c, root+"/rw") })
		t.Run("Semaphore", func(t *testing.T) { testSemaphoreInterop(t, ctx, java, c, root+"/sem") })
		t.Run("Latch", func(t *testing.T) { testLatchInterop(t, ctx, java, c, root+"/latch") })
		java.Want(t, "BYE", "quit")
	}
	t.Run("zkgo", func(t *testing.T) {
		srv := zktest.Start(t)
		run(t, srv.Addr(), "/interop")
	})
	t.Run("apache", func(t *testing.T) {
		apachezk.SkipIfUnavailable(t, apacheErr)
		run(t, apache.Addr(), fmt.Sprintf("/interop-%d", time.Now().UnixNano()))
	})
}

func testMutexInterop(t *testing.T, ctx context.Context, java *curator.Peer, c *zk.Conn, path string) {
	java.Want(t, "LOCKED", "mutex-acquire %s 5000", path)
	m := lock.NewMutex(c, path)
	if _, ok, err := m.TryLock(ctx); ok || err != nil {
		t.Fatalf("Go TryLock while Curator holds the lock: %v %v", ok, err)
	}
	got := make(chan *recipe.Grant, 1)
	go func() {
		g, err := m.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- g
	}()
	waitChildren(t, ctx, c, path, 2)
	select {
	case <-got:
		t.Fatal("Go got the lock while Curator holds it")
	default:
	}
	java.Want(t, "OK", "mutex-release %s", path)
	if g := <-got; g == nil {
		t.Fatal("Go did not get the lock after Curator released it")
	}
	java.Want(t, "TIMEOUT", "mutex-acquire %s 300", path)
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "LOCKED", "mutex-acquire %s 5000", path)
	java.Want(t, "OK", "mutex-release %s", path)
}

func testRWInterop(t *testing.T, ctx context.Context, java *curator.Peer, c *zk.Conn, path string) {
	rw := lock.NewRWMutex(c, path)
	java.Want(t, "LOCKED", "read-acquire %s 5000", path)
	if _, err := rw.RLock(ctx); err != nil { // readers share across clients
		t.Fatal(err)
	}
	if _, ok, _ := lock.NewRWMutex(c, path).TryLock(ctx); ok {
		t.Fatal("Go writer got the lock beside a Curator reader")
	}
	java.Want(t, "OK", "read-release %s", path)
	if err := rw.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "TIMEOUT", "read-acquire %s 300", path)
	java.Want(t, "TIMEOUT", "write-acquire %s 300", path)
	if err := rw.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "LOCKED", "write-acquire %s 5000", path)
	if _, ok, _ := rw.TryRLock(ctx); ok {
		t.Fatal("Go reader got the lock beside a Curator writer")
	}
	java.Want(t, "OK", "write-release %s", path)
}

func testSemaphoreInterop(t *testing.T, ctx context.Context, java *curator.Peer, c *zk.Conn, path string) {
	java.Want(t, "LEASED", "sem-acquire %s 2 5000", path)
	s := lock.NewSemaphore(c, path, 2)
	l, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.TryAcquire(ctx); ok {
		t.Fatal("third lease beside Curator's")
	}
	java.Want(t, "OK", "sem-release %s", path)
	java.Want(t, "LEASED", "sem-acquire %s 2 5000", path)
	if _, ok, _ := s.TryAcquire(ctx); ok {
		t.Fatal("third lease beside Curator's")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "OK", "sem-release %s", path)
}

func testLatchInterop(t *testing.T, ctx context.Context, java *curator.Peer, c *zk.Conn, path string) {
	java.Want(t, "OK", "latch-start %s java-1", path)
	java.Want(t, "LEADER", "latch-await 5000")
	l := leader.NewLatch(c, path, "go-1")
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	waitChildren(t, ctx, c, path, 2)
	ps, err := l.Participants(ctx)
	if err != nil || len(ps) != 2 || ps[0].ID != "java-1" || ps[1].ID != "go-1" {
		t.Fatalf("participants %+v %v", ps, err)
	}
	if l.HasLeadership() {
		t.Fatal("Go latch leads beside Curator's leader")
	}
	java.Want(t, "OK", "latch-close")
	if _, err := l.Await(ctx); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "go-1", "leader %s", path)
	java.Want(t, "OK", "latch-start %s java-2", path)
	java.Want(t, "TIMEOUT", "latch-await 300")
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "LEADER", "latch-await 5000")
	java.Want(t, "OK", "latch-close")
}

func waitChildren(t *testing.T, ctx context.Context, c *zk.Conn, path string, n int) {
	t.Helper()
	for {
		ch, _, err := c.Children(ctx, path)
		if err == nil && len(ch) >= n {
			for _, name := range ch {
				if !strings.HasPrefix(name, zk.ProtectedPrefix) {
					t.Fatalf("node %s/%s is not protected", path, name)
				}
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never had %d children", path, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
