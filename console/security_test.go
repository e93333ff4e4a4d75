package console

import (
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// Attack 2: any user name and password "logged in" (digest authentication
// never fails in ZooKeeper) and the page said "signed in as". A digest
// login is an identity the user acts as, not a verified user; only the
// super digest is checked, and the pages say which is which.
func TestConsoleLoginIsAnIdentityNotAnAccount(t *testing.T) {
	e := startEnv(t) // with the super digest
	b := e.browser()
	code, body := b.post("/login", url.Values{"user": {"admin"}, "password": {"made-up"}})
	if code != http.StatusOK {
		t.Fatalf("login: %d %s", code, body)
	}
	low := strings.ToLower(body)
	for _, claim := range []string{"signed in", "logged in", "authenticated as"} {
		if strings.Contains(low, claim) {
			t.Fatalf("the page claims %q for a password nothing checked:\n%s", claim, body)
		}
	}
	if !strings.Contains(body, "digest:admin") || !strings.Contains(low, "not verified") {
		t.Fatalf("the page does not say the identity digest:admin is not verified:\n%s", body)
	}
	su := e.browser()
	_, body = su.post("/login", url.Values{"user": {"super"}, "password": {superPassword}})
	if !strings.Contains(body, "super user") || strings.Contains(strings.ToLower(body), "not verified") {
		t.Fatalf("the super user's page:\n%s", body)
	}
	// A wrong super password is an ordinary, unverified identity.
	bad := e.browser()
	_, body = bad.post("/login", url.Values{"user": {"super"}, "password": {"guess"}})
	if strings.Contains(body, "super user") || !strings.Contains(strings.ToLower(body), "not verified") {
		t.Fatalf("a wrong super password's page:\n%s", body)
	}
}

// Attack 7: zkgo.admin.console.readOnly turns every write action off.
func TestConsoleReadOnly(t *testing.T) {
	e := startEnv(t, func(c *Config) { c.ReadOnly = true })
	zc := e.zconn()
	ctx := ctxT(t)
	if _, err := zc.Create(ctx, "/ro", []byte("before"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	code, body := b.post("/login", url.Values{"user": {"super"}, "password": {superPassword}})
	if code == http.StatusOK && strings.Contains(body, `name="csrf"`) {
		t.Fatalf("a read-only console accepted a login: %d\n%s", code, body)
	}
	_, body = b.get("/tree?path=/ro")
	if strings.Contains(body, `action="/write"`) {
		t.Fatalf("a read-only console shows write forms:\n%s", body)
	}
	for _, f := range []url.Values{
		{"action": {"set"}, "path": {"/ro"}, "data": {"after"}, "version": {"-1"}},
		{"action": {"create"}, "path": {"/"}, "name": {"ro2"}},
		{"action": {"delete"}, "path": {"/ro"}, "version": {"-1"}},
	} {
		if code, _ := b.post("/write", f); code != http.StatusForbidden {
			t.Errorf("write %v on a read-only console: %d, want 403", f, code)
		}
	}
	if data, _, err := zc.Get(ctx, "/ro"); err != nil || string(data) != "before" {
		t.Fatalf("/ro: %q %v", data, err)
	}
	if st, _ := zc.Exists(ctx, "/ro2"); st != nil {
		t.Fatal("a read-only console created /ro2")
	}
}

// Attack 5: 40 parallel GETs of a tree page over a parent with 999
// children with 32 KiB names took the server from 0.44 to 4.25 GB. The
// test loads that tree, then samples the heap while 40 browsers fetch the
// page at once, and fails if the peak heap grows by more than
// wideMaxGrowth over the loaded tree (most of what remains is garbage of
// the one read of the list that the collector has not reclaimed yet).
// Run it with -v for the numbers.
func TestConsoleWideParentMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 32 MiB of names")
	}
	const wideMaxGrowth = 384 << 20
	growth, peak, alloc, took := wideParentLoad(t, 40)
	t.Logf("40 parallel tree pages over 999 children of 32 KiB names: heap in use +%d MiB (peak %d MiB), %d MiB allocated, %v", growth>>20, peak>>20, alloc>>20, took)
	if growth > wideMaxGrowth {
		t.Fatalf("heap grew by %d MiB, want at most %d MiB", growth>>20, wideMaxGrowth>>20)
	}
}

// wideParentLoad builds /wide (999 children, 32 KiB names), fetches its
// tree page from n browsers at once and returns the heap's growth over
// the loaded tree (peak HeapInuse, sampled every millisecond, minus
// HeapInuse before), the peak, the bytes allocated meanwhile (server and
// console: both run in the test's process) and the time the fetches took.
func wideParentLoad(t *testing.T, n int) (growth, peak, alloc uint64, took time.Duration) {
	e := startEnv(t)
	zc := e.zconn()
	ctx := ctxT(t)
	if _, err := zc.Create(ctx, "/wide", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 32<<10-4)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range 999 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := zc.Create(ctx, fmt.Sprintf("/wide/%s%04d", long, i), nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var top atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > top.Load() {
				top.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	start := time.Now()
	var ok atomic.Int32
	var lastErr atomic.Value
	for range n {
		b := e.browser()
		wg.Go(func() {
			code, body := b.get("/tree?path=/wide")
			if code == http.StatusOK && strings.Contains(body, ">"+long[:100]) {
				ok.Add(1)
			} else {
				lastErr.Store(fmt.Sprintf("%d %.300s", code, body[min(len(body), strings.Index(body, "<main")+1):]))
			}
		})
	}
	wg.Wait()
	took = time.Since(start)
	close(stop)
	<-sampled
	if ok.Load() == 0 {
		t.Fatalf("no fetch of the wide page listed its children: %v", lastErr.Load())
	}
	peak = top.Load()
	if peak > base {
		growth = peak - base
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return growth, peak, after.TotalAlloc - ms.TotalAlloc, took
}
