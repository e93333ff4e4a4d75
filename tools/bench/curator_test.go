package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/javaprog"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup() // the classes compiled for lock -client curator
	os.Exit(code)
}

// TestCuratorLock runs lock -client curator (Apache Curator's
// InterProcessMutex, 4 contenders in one JVM) for 2 s against an
// in-process server: the handoffs arrive, without errors, and the JVM
// found no two contenders holding the lock at once (a violation is an
// error). It skips when javac, java or the Curator jars are missing,
// unless ZKGO_REQUIRE_APACHE_ZK=1.
func TestCuratorLock(t *testing.T) {
	start := time.Now()
	if _, err := curatorJava.Program(); err != nil {
		if errors.Is(err, javaprog.ErrNotInstalled) && os.Getenv("ZKGO_REQUIRE_APACHE_ZK") != "1" {
			t.Skip("skipping lock -client curator: " + err.Error())
		}
		t.Fatal(err)
	}
	t.Logf("LockBench.java compiled (or cached) in %v", time.Since(start).Round(time.Millisecond))
	srv := zktest.Start(t)
	var progress bytes.Buffer
	cfg := Config{
		Server:     srv.Addr(),
		Workload:   "lock",
		Client:     "curator",
		Contenders: 4,
		// A short hold widens the window in which a second holder would
		// be seen.
		Hold:     500 * time.Microsecond,
		Warmup:   500 * time.Millisecond,
		Duration: 2 * time.Second,
		Progress: &syncWriter{w: &progress},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	var out bytes.Buffer
	res.Print(&out)
	t.Logf("\n%s", out.String())
	if res.Ops == 0 {
		t.Errorf("no handoff measured")
	}
	if res.Errors != 0 {
		t.Errorf("%d errors (failed acquire or release calls, or mutual-exclusion violations): %v", res.Errors, res.Notes)
	}
	if res.Client != "curator" || res.Unit != "handoff" {
		t.Errorf("client %q, unit %q: want curator, handoff", res.Client, res.Unit)
	}
	if res.DurationSec < 1 || res.DurationSec > 2.5 {
		t.Errorf("measured %.3f s, want about 2 s (the JVM's window)", res.DurationSec)
	}
	if res.Ops > 0 && (res.OpsPerSec <= 0 || res.Latency.P50 <= 0 || res.Latency.P99 < res.Latency.P50 || res.Latency.Max < res.Latency.P999) {
		t.Errorf("implausible result %+v", res)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "InterProcessMutex") {
		t.Errorf("no note on the Curator client: %q", res.Notes)
	}
	// The JVM's sessions are closed and the run's znodes deleted.
	c, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kids, _, err := c.Children(ctx, "/zkgo-bench")
	if err != nil || len(kids) != 0 {
		t.Errorf("/zkgo-bench after the run: children %v, %v", kids, err)
	}
}
