package gozk

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestSequentialConcurrency: 8 sessions × 50 ephemeral-sequential creates
// under one parent yield exactly the suffixes 0..399, each once.
func TestSequentialConcurrency(t *testing.T) {
	const workers, each = 8, 50
	srv, c := start(t)
	mustCreate(t, c, "/q", nil, 0)

	clients := make([]*client, workers)
	for i := range clients {
		clients[i] = connect(t, srv.Addr())
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		paths []string
		errs  []error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(cl *client) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				p, err := cl.Create("/q/n-", nil, zk.FlagEphemeralSequential, openACL)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					paths = append(paths, p)
				}
				mu.Unlock()
			}
		}(clients[w])
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d creates failed, first: %v", len(errs), errs[0])
	}
	seen := map[int]string{}
	for _, p := range paths {
		suffix, ok := strings.CutPrefix(p, "/q/n-")
		n, err := strconv.Atoi(suffix)
		if !ok || err != nil || len(suffix) != 10 {
			t.Fatalf("bad sequential path %q", p)
		}
		if prev, dup := seen[n]; dup {
			t.Fatalf("suffix %d returned twice (%s, %s)", n, prev, p)
		}
		seen[n] = p
	}
	for n := 0; n < workers*each; n++ {
		if _, ok := seen[n]; !ok {
			t.Fatalf("suffix %d missing", n)
		}
	}
	kids, st, err := c.Children("/q")
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != workers*each || st.NumChildren != workers*each || st.Cversion != workers*each {
		t.Fatalf("/q: %d children, stat %+v", len(kids), st)
	}
	// Per session, suffixes increase in request order (FIFO client order).
	bySession := map[int64][]int{}
	for _, k := range kids {
		st := mustExists(t, c, "/q/"+k)
		n, _ := strconv.Atoi(strings.TrimPrefix(k, "n-"))
		bySession[st.EphemeralOwner] = append(bySession[st.EphemeralOwner], n)
	}
	if len(bySession) != workers {
		t.Fatalf("%d owners, want %d", len(bySession), workers)
	}
	for _, cl := range clients {
		if got := len(bySession[cl.SessionID()]); got != each {
			t.Fatalf("session %#x owns %d nodes, want %d", cl.SessionID(), got, each)
		}
	}
}

// TestPipelinedOrdering issues many async-looking requests from one
// session concurrently; go-zookeeper pipelines them on one connection and
// the server must answer each with its own result.
func TestPipelinedOrdering(t *testing.T) {
	_, c := start(t)
	mustCreate(t, c, "/pp", nil, 0)
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p := fmt.Sprintf("/pp/%03d", i)
			if _, err := c.Create(p, []byte(p), 0, openACL); err != nil {
				errs <- err
				return
			}
			d, _, err := c.Get(p)
			if err != nil || string(d) != p {
				errs <- fmt.Errorf("get %s = %q, %v", p, d, err)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	kids, _, err := c.Children("/pp")
	if err != nil || len(kids) != n {
		t.Fatalf("children: %d, %v", len(kids), err)
	}
	sort.Strings(kids)
	if kids[0] != "000" || kids[n-1] != fmt.Sprintf("%03d", n-1) {
		t.Fatalf("children %v", kids)
	}
}
