package curator_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe/barrier"
	"github.com/zkgo/zkgo/recipe/queue"
	"github.com/zkgo/zkgo/recipe/shared"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tests/interop/curator"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// TestCoordWithCurator: Go processes using recipe/barrier, recipe/shared
// and recipe/queue and a Java process using Curator 5's barriers, shared
// count, atomic long and queues share the same nodes, against zkgo and
// Apache ZooKeeper. One Curator JVM per server.
func TestCoordWithCurator(t *testing.T) {
	run := func(t *testing.T, addr, root string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		java := curator.StartPeer(t, addr)
		connect := func() *zk.Conn {
			c, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		t.Run("Barrier", func(t *testing.T) { testBarrierInterop(t, ctx, java, connect(), root+"/barrier") })
		t.Run("DoubleBarrier", func(t *testing.T) {
			testDoubleBarrierInterop(t, ctx, java, connect(), connect(), root+"/double")
		})
		t.Run("SharedCount", func(t *testing.T) { testCountInterop(t, ctx, java, connect, root+"/count") })
		t.Run("AtomicLong", func(t *testing.T) { testAtomicLongInterop(t, ctx, java, connect, root+"/along") })
		t.Run("Queue", func(t *testing.T) { testQueueInterop(t, ctx, java, connect(), root+"/queue") })
		t.Run("LockSafeQueue", func(t *testing.T) {
			testLockSafeQueueInterop(t, ctx, java, connect(), root+"/lsqueue", root+"/lsqueue-locks")
		})
		t.Run("PriorityQueue", func(t *testing.T) { testPriorityQueueInterop(t, ctx, java, connect(), root+"/pqueue") })
		t.Run("DelayQueue", func(t *testing.T) { testDelayQueueInterop(t, ctx, java, connect(), root+"/dqueue") })
		t.Run("IDQueue", func(t *testing.T) { testIDQueueInterop(t, ctx, java, connect(), root+"/iqueue") })
		t.Run("SimpleQueue", func(t *testing.T) { testSimpleQueueInterop(t, ctx, java, connect(), root+"/squeue") })
		java.Want(t, "BYE", "quit")
	}
	t.Run("zkgo", func(t *testing.T) {
		srv := zktest.Start(t)
		run(t, srv.Addr(), "/coord")
	})
	t.Run("apache", func(t *testing.T) {
		apachezk.SkipIfUnavailable(t, apacheErr)
		run(t, apache.Addr(), fmt.Sprintf("/coord-%d", time.Now().UnixNano()))
	})
}

func testBarrierInterop(t *testing.T, ctx context.Context, java *curator.Peer, c *zk.Conn, path string) {
	b := barrier.New(c, path)
	java.Want(t, "OK", "barrier-set %s", path)
	done := make(chan error, 1)
	go func() { done <- b.Wait(ctx) }()
	java.Want(t, "TIMEOUT", "barrier-wait %s 100", path)
	select {
	case err := <-done:
		t.Fatalf("Go Wait returned %v while Curator's barrier is up", err)
	default:
	}
	java.Want(t, "OK", "barrier-remove %s", path)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "TIMEOUT", "barrier-wait %s 200", path)
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "DOWN", "barrier-wait %s 5000", path)
}

// testDoubleBarrierInterop: one Java and two Go members of a barrier of 3.
func testDoubleBarrierInterop(t *testing.T, ctx context.Context, java *curator.Peer, c1, c2 *zk.Conn, path string) {
	java.Want(t, "OK", "dbarrier-enter %s 3", path)
	waitChildren2(t, ctx, c1, path, 1)
	g1, _ := barrier.NewDouble(c1, path, 3)
	g2, _ := barrier.NewDouble(c2, path, 3)
	entered := make(chan error, 2)
	go func() { entered <- g1.Enter(ctx) }()
	waitChildren2(t, ctx, c1, path, 2)
	java.Want(t, "TIMEOUT", "dbarrier-entered %s 200", path)
	select {
	case err := <-entered:
		t.Fatalf("a Go member entered with 2 of 3 members: %v", err)
	default:
	}
	ch, _, err := c1.Children(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ch {
		if len(name) != 36 || strings.Count(name, "-") != 4 {
			t.Fatalf("member node %q is not a UUID", name)
		}
	}
	go func() { entered <- g2.Enter(ctx) }()
	java.Want(t, "ENTERED", "dbarrier-entered %s 10000", path)
	for range 2 {
		if err := <-entered; err != nil {
			t.Fatal(err)
		}
	}
	if st, err := c1.Exists(ctx, path+"/"+barrier.ReadyNode); err != nil || st == nil {
		t.Fatalf("ready node: %v %v", st, err)
	}
	java.Want(t, "OK", "dbarrier-leave %s", path)
	left := make(chan error, 2)
	go func() { left <- g1.Leave(ctx) }()
	go func() { left <- g2.Leave(ctx) }()
	java.Want(t, "LEFT", "dbarrier-left %s 10000", path)
	for range 2 {
		if err := <-left; err != nil {
			t.Fatal(err)
		}
	}
	if ch, _, err := c1.Children(ctx, path); err == nil && len(ch) != 0 {
		t.Fatalf("left behind: %v", ch)
	}
}

func testCountInterop(t *testing.T, ctx context.Context, java *curator.Peer, connect func() *zk.Conn, path string) {
	java.Want(t, "OK", "count-start %s 5", path)
	c := shared.NewCount(connect(), path, 100)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Get() != 5 {
		t.Fatalf("Go read %d, want Curator's seed 5", c.Get())
	}
	ev := c.Events()
	if err := c.Set(ctx, 7); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "SEEN", "count-await %s 7 5000", path)
	java.Want(t, "OK", "count-set %s -9", path)
	for {
		e := <-ev
		if e.Kind == shared.ValueChanged && e.Value.Value == -9 {
			break
		}
	}
	// Java and Go add concurrently; nothing is lost.
	const times = 40
	var wg sync.WaitGroup
	for range 2 {
		g := shared.NewCount(connect(), path, 0)
		if err := g.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range times {
				for {
					v := g.Versioned()
					ok, err := g.TrySet(ctx, v, v.Value+2)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						break
					}
				}
			}
		}()
	}
	java.Want(t, "OK", "count-add %s 3 %d", path, times)
	wg.Wait()
	want := int32(-9 + 2*2*times + 3*times)
	java.Want(t, "SEEN", "count-await %s %d 5000", path, want)
	for c.Get() != want {
		if e, ok := <-ev; !ok {
			t.Fatalf("events closed at %d", c.Get())
		} else if e.Err != nil {
			t.Fatal(e.Err)
		}
	}
	java.Want(t, strconv.Itoa(int(want)), "count-get %s", path)
	java.Want(t, "OK", "count-close %s", path)
}

func testAtomicLongInterop(t *testing.T, ctx context.Context, java *curator.Peer, connect func() *zk.Conn, path string) {
	const times = 40
	var wg sync.WaitGroup
	for range 2 {
		l := shared.NewAtomicLong(connect(), path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range times {
				for {
					r, err := l.Add(ctx, 5)
					if err != nil {
						t.Error(err)
						return
					}
					if r.Succeeded {
						break
					}
				}
			}
		}()
	}
	java.Want(t, "OK", "along-add %s -2 %d", path, times)
	wg.Wait()
	want := int64(2*5*times - 2*times)
	r, err := shared.NewAtomicLong(connect(), path).Get(ctx)
	if err != nil || r.Post != want {
		t.Fatalf("Go reads %+v %v, want %d", r, err, want)
	}
	java.Want(t, strconv.FormatInt(want, 10), "along-get %s", path)
}

func takeValues(t *testing.T, ctx context.Context, take func(context.Context) (*queue.Message, error)) string {
	t.Helper()
	m, err := take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, v := range m.Values {
		s = append(s, string(v))
	}
	return strings.Join(s, ",")
}

func testQueueInterop(t *testing.T, ctx context.Context, java *curator.Peer, c *zk.Conn, path string) {
	// Java produces, Go consumes.
	for _, v := range []string{"j1", "j2", "j3"} {
		java.Want(t, "OK", "queue-put fifo %s %s", path, v)
	}
	java.Want(t, "OK", "queue-putmulti fifo %s jm1,jm2,jm3", path)
	q := queue.New(c, path)
	for _, want := range []string{"j1", "j2", "j3", "jm1,jm2,jm3"} {
		if got := takeValues(t, ctx, q.Take); got != want {
			t.Fatalf("Go took %q, want %q", got, want)
		}
	}
	// Go produces, Java consumes.
	for _, v := range []string{"g1", "g2", "g3"} {
		if err := q.Put(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.PutMulti(ctx, [][]byte{[]byte("gm1"), []byte("gm2")}); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "OK", "queue-consume fifo %s -", path)
	for _, want := range []string{"g1", "g2", "g3", "gm1", "gm2"} {
		java.Want(t, want, "queue-take %s 10000", path)
	}
	java.Want(t, "OK", "queue-stop %s", path)
}

// testLockSafeQueueInterop: Go and Java consumers share one lock-safe
// queue fed by Go and Java producers; every item is consumed exactly once.
func testLockSafeQueueInterop(t *testing.T, ctx context.Context, java *curator.Peer, c *zk.Conn, path, locks string) {
	q := queue.New(c, path, queue.WithLockPath(locks))
	want := map[string]bool{}
	for i := range 15 {
		g, j := fmt.Sprintf("g%d", i), fmt.Sprintf("j%d", i)
		want[g], want[j] = true, true
		if err := q.Put(ctx, []byte(g)); err != nil {
			t.Fatal(err)
		}
		java.Want(t, "OK", "queue-put fifo %s %s", path, j)
	}
	java.Want(t, "OK", "queue-consume fifo %s %s", path, locks)
	got := map[string]int{}
	javaTook := 0
	var mu sync.Mutex // guards got and javaTook
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(cctx, func(_ context.Context, v []byte) error {
			mu.Lock()
			got[string(v)]++
			mu.Unlock()
			return nil
		})
	}()
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == len(want) {
			break
		}
		v := java.Do(t, "queue-take %s 100", path)
		if v == "TIMEOUT" {
			continue
		}
		if strings.HasPrefix(v, "ERR") {
			t.Fatal(v)
		}
		mu.Lock()
		got[v]++
		javaTook++
		mu.Unlock()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume: %v", err)
	}
	java.Want(t, "OK", "queue-stop %s", path)
	java.Want(t, "TIMEOUT", "queue-take %s 10", path)
	t.Logf("Curator consumed %d items, Go %d", javaTook, len(want)-javaTook)
	for v, n := range got {
		if !want[v] || n != 1 {
			t.Errorf("%q consumed %d times", v, n)
		}
	}
	for v := range want {
		if got[v] == 0 {
			t.Errorf("%q never consumed", v)
		}
	}
	if n, err := q.Len(ctx); n != 0 || err != nil {
		t.Fatalf("%d items left (%v)", n, err)
	}
}

func testPriorityQueueInterop(t *testing.T, ctx context.Context, java *curator.Peer, c *zk.Conn, path string) {
	puts := []struct {
		v string
		p int32
	}{{"p5", 5}, {"pm3", -3}, {"p0", 0}, {"p2", 2}, {"pmin", -2147483648}}
	order := []string{"pmin", "pm3", "p0", "p2", "p5"}
	for _, p := range puts {
		java.Want(t, "OK", "queue-put prio %s %s %d", path, p.v, p.p)
	}
	q := queue.NewPriority(c, path)
	for _, want := range order {
		if got := takeValues(t, ctx, q.Take); got != want {
			t.Fatalf("Go took %q, want %q", got, want)
		}
	}
	for _, p := range puts {
		if err := q.Put(ctx, []byte(p.v), p.p); err != nil {
			t.Fatal(err)
		}
	}
	java.Want(t, "OK", "queue-consume prio %s -", path)
	for _, want := range order {
		java.Want(t, want, "queue-take %s 10000", path)
	}
	java.Want(t, "OK", "queue-stop %s", path)
}

func testDelayQueueInterop(t *testing.T, ctx context.Context, java *curator.Peer, c *zk.Conn, path string) {
	start := time.Now()
	java.Want(t, "OK", "queue-put delay %s later 600", path)
	java.Want(t, "OK", "queue-put delay %s sooner 300", path)
	q := queue.NewDelay(c, path)
	if _, ok, err := q.TryTake(ctx); ok || err != nil {
		t.Fatalf("TryTake before anything is due: %v %v", ok, err)
	}
	for _, want := range []string{"sooner", "later"} {
		if got := takeValues(t, ctx, q.Take); got != want {
			t.Fatalf("Go took %q, want %q", got, want)
		}
	}
	if el := time.Since(start); el < 600*time.Millisecond {
		t.Fatalf("took both after %v, before the later one was due", el)
	}
	java.Want(t, "OK", "queue-consume delay %s -", path)
	if err := q.Put(ctx, []byte("go-later"), time.Now().Add(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := q.Put(ctx, []byte("go-now"), time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "go-now", "queue-take %s 10000", path)
	java.Want(t, "TIMEOUT", "queue-take %s 100", path)
	java.Want(t, "go-later", "queue-take %s 10000", path)
	java.Want(t, "OK", "queue-stop %s", path)
}

func testIDQueueInterop(t *testing.T, ctx context.Context, java *curator.Peer, c *zk.Conn, path string) {
	q, err := queue.NewID(c, path)
	if err != nil {
		t.Fatal(err)
	}
	java.Want(t, "OK", "queue-put id %s one id-1", path)
	java.Want(t, "OK", "queue-put id %s two id-2", path)
	java.Want(t, "OK", "queue-put id %s three id-1", path)
	if n, err := q.Remove(ctx, "id-1"); n != 2 || err != nil {
		t.Fatalf("Go removed %d items of Curator's (%v), want 2", n, err)
	}
	m, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Values[0]) != "two" || queue.ID(m) != "id-2" {
		t.Fatalf("Go took %q with id %q", m.Values[0], queue.ID(m))
	}
	if err := q.Put(ctx, []byte("go-a"), "ga"); err != nil {
		t.Fatal(err)
	}
	if err := q.Put(ctx, []byte("go-b"), "gb"); err != nil {
		t.Fatal(err)
	}
	java.Want(t, "OK", "queue-consume id %s -", path)
	java.Want(t, "go-a", "queue-take %s 10000", path)
	java.Want(t, "go-b", "queue-take %s 10000", path)
	java.Want(t, "OK", "queue-stop %s", path)
}

// testSimpleQueueInterop: a Go queue.Simple and Curator's
// SimpleDistributedQueue on one path exchange items both ways, each
// blocking in take while the other offers.
func testSimpleQueueInterop(t *testing.T, ctx context.Context, java *curator.Peer, c *zk.Conn, path string) {
	q := queue.NewSimple(c, path)
	// Java offers, Go takes in order.
	for _, v := range []string{"j1", "j2", "j3"} {
		java.Want(t, "OK", "squeue-offer %s %s", path, v)
	}
	if v, err := q.Element(ctx); string(v) != "j1" || err != nil {
		t.Fatalf("Go element %q %v", v, err)
	}
	for _, want := range []string{"j1", "j2", "j3"} {
		if v, err := q.Take(ctx); string(v) != want || err != nil {
			t.Fatalf("Go took %q (%v), want %q", v, err, want)
		}
	}
	// Go offers, Java takes in order.
	for _, v := range []string{"g1", "g2", "g3"} {
		if err := q.Offer(ctx, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	java.Want(t, "g1", "squeue-peek %s", path)
	java.Want(t, "g1", "squeue-poll %s 0", path)
	java.Want(t, "g2", "squeue-take %s", path)
	java.Want(t, "g3", "squeue-poll %s 1000", path)
	java.Want(t, "EMPTY", "squeue-poll %s 0", path)
	java.Want(t, "EMPTY", "squeue-poll %s 100", path)
	// Go blocks in Take until Java offers.
	took := make(chan string, 1)
	go func() {
		v, err := q.Take(ctx)
		if err != nil {
			v = []byte("error: " + err.Error())
		}
		took <- string(v)
	}()
	time.Sleep(100 * time.Millisecond)
	java.Want(t, "OK", "squeue-offer %s late-j", path)
	if v := <-took; v != "late-j" {
		t.Fatalf("Go's waiting Take got %q", v)
	}
	// Java blocks in poll(timeout) until Go offers.
	go func() {
		time.Sleep(300 * time.Millisecond)
		if err := q.Offer(ctx, []byte("late-g")); err != nil {
			t.Error(err)
		}
	}()
	java.Want(t, "late-g", "squeue-poll %s 10000", path)
	if n, err := q.Len(ctx); n != 0 || err != nil {
		t.Fatalf("%d items left (%v)", n, err)
	}
}

// waitChildren2 waits (with a children watch) until path has n children.
func waitChildren2(t *testing.T, ctx context.Context, c *zk.Conn, path string, n int) {
	t.Helper()
	for {
		ch, _, ev, err := c.ChildrenW(ctx, path)
		if errors.Is(err, zk.ErrNoNode) {
			var st *zk.Stat
			st, ev, err = c.ExistsW(ctx, path)
			if err == nil && st != nil {
				// Created (maybe with children) between the two calls:
				// its exists watch would not fire for a child.
				continue
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(ch) >= n {
			return
		}
		select {
		case <-ev:
		case <-ctx.Done():
			t.Fatalf("%s never had %d children", path, n)
		}
	}
}
