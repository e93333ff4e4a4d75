package console

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// TestConsoleAtScale loads a large tree (ZKGO_CONSOLE_ZNODES znodes, e.g.
// 1000000: a thousand parents of a thousand children, and a lock queue)
// and times the console's pages over it. It is a measurement, not a timed
// test: it checks what the pages show and logs how long they took. Skipped
// unless ZKGO_CONSOLE_ZNODES is set (the load takes a while and about
// 1 GB of memory at a million znodes).
//
//	ZKGO_CONSOLE_ZNODES=1000000 go test -run TestConsoleAtScale -v ./console
func TestConsoleAtScale(t *testing.T) {
	total, _ := strconv.Atoi(os.Getenv("ZKGO_CONSOLE_ZNODES"))
	if total <= 0 {
		t.Skip("set ZKGO_CONSOLE_ZNODES (e.g. 1000000) to measure the console over a large tree")
	}
	e := startEnv(t)
	zc := e.zconn()
	ctx := ctxT(t)
	const perParent = 1000
	parents := max(total/perParent, 1)
	start := time.Now()
	for p := range parents {
		if _, err := zc.Create(ctx, fmt.Sprintf("/p%04d", p), nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	work := make(chan int, 1024)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				data := []byte(strings.Repeat("d", 100))
				if _, err := zc.Create(ctx, fmt.Sprintf("/p%04d/c%04d", i/perParent, i%perParent), data, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	for i := range parents * perParent {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	// A lock queue deep in the tree, found by the recipe scan if the
	// budget reaches it.
	if _, err := zc.Create(ctx, "/app", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create(ctx, "/app/locks", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := zc.Create(ctx, "/app/locks/_c_4b1d2a5e-7c1f-4d8e-9c2a-0a1b2c3d4e5f-lock-", nil, zk.OpenACLUnsafe, zk.ModeEphemeralSequential); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("loaded %d znodes in %v", parents*perParent+parents+5, time.Since(start).Round(time.Millisecond))

	b := e.browser()
	timed := func(what, p, want string) {
		t.Helper()
		s := time.Now()
		code, body := b.get(p)
		took := time.Since(s)
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s (%s): status %d, no %q in\n%.2000s", what, p, code, want, body)
		}
		t.Logf("%-34s %8v  %7d bytes", what, took.Round(100*time.Microsecond), len(body))
	}
	mid := fmt.Sprintf("/p%04d", parents/2)
	// The recipe scan stops at its budget (ScanBudget nodes): in a tree
	// larger than that it may not reach the lock queue; say whether it did.
	timed("overview, first", "/", "</html>")
	timed("overview, again", "/", "</html>")
	timed("recipes", "/recipes", "</html>")
	_, body := b.get("/recipes")
	t.Logf("the recipe scan found /app/locks: %v", strings.Contains(body, "/app/locks"))
	timed("tree /, first", "/tree?path=/", ">p0000<")
	timed("tree "+mid+", first (1000 children)", "/tree?path="+mid, ">c0199<")
	timed("tree "+mid+", again", "/tree?path="+mid, ">c0199<")
	timed("tree "+mid+" from c0990", "/tree?path="+mid+"&from=c0990", ">c0999<")
	timed("tree "+mid+"/c0500 (a leaf)", "/tree?path="+mid+"/c0500", "dddd")
	timed("sessions", "/sessions", "ession")
}
