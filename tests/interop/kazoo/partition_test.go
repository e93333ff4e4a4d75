package kazoo_test

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe/partition"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// partitionScript is a kazoo SetPartitioner worker: it releases when
// told to by its state, prints "ACQUIRED item,item,..." after each
// acquisition, and finishes when its stdin closes.
const partitionScript = `
import sys, threading, time, logging
logging.basicConfig(level=logging.ERROR)
from kazoo.client import KazooClient
hosts, path, ident, items = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
zk = KazooClient(hosts=hosts, timeout=10)
zk.start(timeout=20)
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
qp = zk.SetPartitioner(path=path, set=items, identifier=ident, time_boundary=0.3, max_reaction_time=0.1)
printed = None
while not stop.is_set():
    if qp.failed:
        print("FAILED", flush=True)
        sys.exit(1)
    elif qp.release:
        qp.release_set()
        printed = None
    elif qp.acquired:
        if printed != qp.state_id:
            print("ACQUIRED " + ",".join(sorted(qp)), flush=True)
            printed = qp.state_id
        time.sleep(0.02)
    else:
        qp.wait_for_acquire(0.1)
qp.finish()
zk.stop()
print("DONE", flush=True)
`

type pyWorker struct {
	id   string
	cmd  *exec.Cmd
	stop func() error
	mu   sync.Mutex
	last string // the last ACQUIRED line's items, "" before one
	acqs int
}

// TestSetPartitionerWithKazoo: two kazoo and two Go SetPartitioner
// workers share one set; once all are ACQUIRED, each item is held by
// exactly one worker (one contender in its lock) and every worker holds
// what kazoo's partition function gives it. Then a kazoo worker leaves
// and a Go worker leaves, and the rest divide the set again.
func TestSetPartitionerWithKazoo(t *testing.T) {
	py := python(t)
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := filepath.Join(t.TempDir(), "partition.py")
	if err := writeFile(script, partitionScript); err != nil {
		t.Fatal(err)
	}
	const path = "/work-queues"
	var set []string
	for i := range 11 {
		set = append(set, fmt.Sprintf("queue-%02d", i))
	}
	var pys []*pyWorker
	for i := range 2 {
		w := &pyWorker{id: fmt.Sprintf("py-%d", i)}
		w.cmd = exec.CommandContext(ctx, py, script, srv.Addr(), path, w.id, strings.Join(set, ","))
		stdin, _ := w.cmd.StdinPipe()
		out, _ := w.cmd.StdoutPipe()
		w.cmd.Stderr = &logWriter{t: t, prefix: w.id}
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.stop = stdin.Close
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				if items, ok := strings.CutPrefix(line, "ACQUIRED"); ok {
					w.mu.Lock()
					w.last, w.acqs = strings.TrimSpace(items), w.acqs+1
					w.mu.Unlock()
				}
			}
		}()
		t.Cleanup(func() { w.stop(); w.cmd.Wait() })
		pys = append(pys, w)
	}
	var gos []*partition.SetPartitioner
	for i := range 2 {
		c, err := zk.Connect(ctx, srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		p, err := partition.New(ctx, c, path, set, partition.WithIdentifier(fmt.Sprintf("go-%d", i)),
			partition.WithTimeBoundary(300*time.Millisecond), partition.WithMaxReactionTime(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		gos = append(gos, p)
	}
	conn, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// settled waits until every worker is ACQUIRED under the same
	// membership (each Go worker's partition being its share of
	// members) and checks the split against the locks.
	settled := func(pys []*pyWorker, gos []*partition.SetPartitioner) {
		t.Helper()
		var members []string
		for _, w := range pys {
			members = append(members, w.id)
		}
		for _, p := range gos {
			members = append(members, p.Identifier())
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			ok := true
			got := map[string]string{}
			for _, p := range gos {
				if p.State() == partition.Release {
					p.ReleaseSet(ctx)
				}
				if p.State() == partition.Failure {
					t.Fatalf("%s failed", p.Identifier())
				}
				if p.State() != partition.Acquired {
					ok = false
				}
				got[p.Identifier()] = strings.Join(p.Partitions(), ",")
			}
			for _, w := range pys {
				w.mu.Lock()
				got[w.id] = w.last
				w.mu.Unlock()
			}
			if ok {
				for _, id := range members {
					if got[id] != strings.Join(partition.Default(id, members, set), ",") {
						ok = false
					}
				}
			}
			if ok {
				// Stable? Every item's lock has one contender.
				for _, item := range set {
					ch, _, err := conn.Children(ctx, path+"/locks/"+item)
					if err != nil {
						t.Fatal(err)
					}
					n := 0
					for _, c := range ch {
						if strings.Contains(c, "__lock__") {
							n++
						}
					}
					if n != 1 {
						ok = false
					}
				}
			}
			if ok {
				t.Logf("split among %v: %v", members, got)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("never agreed among %v: %v", members, got)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	settled(pys, gos)
	// Check what Go sees of the party.
	party, _, err := conn.Children(ctx, path+"/party")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range party {
		_, id, _ := strings.Cut(c, "-")
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"go-0", "go-1", "py-0", "py-1"}) {
		t.Fatalf("party %v", party)
	}

	// A kazoo worker leaves.
	for _, w := range pys {
		w.mu.Lock()
		w.last = ""
		w.mu.Unlock()
	}
	pys[0].stop()
	if err := pys[0].cmd.Wait(); err != nil {
		t.Fatalf("py-0: %v", err)
	}
	settled(pys[1:], gos)
	// A Go worker leaves.
	pys[1].mu.Lock()
	pys[1].last = ""
	pys[1].mu.Unlock()
	if err := gos[0].Finish(ctx); err != nil {
		t.Fatal(err)
	}
	settled(pys[1:], gos[1:])
	gos[1].Finish(ctx)
}

type logWriter struct {
	t      *testing.T
	prefix string
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s: %s", w.prefix, strings.TrimSpace(string(p)))
	return len(p), nil
}
