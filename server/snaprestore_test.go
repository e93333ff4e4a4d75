package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tools/torture/faultnet"
	"github.com/zkgo/zkgo/zk"
)

// logLines is a slog handler's output, safe for concurrent use.
type logLines struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), s)
}

// A follower that falls so far behind that the leader sends it a snapshot
// (found by the torture harness: a one-way partition, bytes from the
// follower lost, while the others wrote more than the log keeps) must not
// keep its clients through the restore: the snapshot's changes fire no
// watch, so a persistent watch would jump over them unaware. The member
// drops its clients; they see a disconnection (where ZooKeeper allows a
// persistent watch a gap) and set their watches again.
func TestSnapshotRestoreDropsClients(t *testing.T) {
	fn := faultnet.New(1, nil)
	defer fn.Close()
	name := func(id int64) string { return fmt.Sprintf("m%d", id) }
	var logs [3]logLines
	c := startCluster(t, 3, 0, func(o *server.Options) {
		o.SnapCount = 500
		// The watcher's session must outlive the partition: the member's
		// reports that its clients are alive are lost with its bytes.
		o.MaxSessionTimeout = 30 * time.Second
		o.Logger = slog.New(slog.NewTextHandler(&logs[o.ServerID-1], &slog.HandlerOptions{Level: slog.LevelInfo}))
		via := map[int64]string{}
		for _, p := range o.Peers {
			if p.ID == o.ServerID {
				continue
			}
			addr, err := fn.Listen(name(o.ServerID), name(p.ID), p.Addr)
			if err != nil {
				t.Fatal(err)
			}
			via[p.ID] = addr
		}
		o.PeerDialAddr = func(id int64, addr string) string {
			if a, ok := via[id]; ok {
				return a
			}
			return addr
		}
	})
	lead := c.leader()
	m := (lead + 1) % 3
	// A bound, not a wait: 6,500 creates one at a time, the snapshot and
	// the reconnection take most of 30 s under the race detector.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	writer, err := zk.Connect(ctx, c.addr(lead))
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.Create(ctx, "/w", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	watcher, err := zk.Connect(ctx, c.addr(m), zk.WithSessionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	states, stop := watcher.NotifyState()
	defer stop()
	if _, err := watcher.Sync(ctx, "/w"); err != nil {
		t.Fatal(err)
	}
	w, err := watcher.AddWatch(ctx, "/w", zk.AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}

	// The follower's bytes are lost: it hears the leader, the leader never
	// hears it, and writes go on past what the log keeps for it (5,000
	// entries behind the last snapshot).
	for _, o := range []int{lead, 3 - lead - m} {
		fn.PartitionOneWay(name(int64(m+1)), name(int64(o+1)))
	}
	// One create at a time: each is an append message of its own, so the
	// leader soon has as many unacknowledged ones in flight to the
	// follower as raft allows and stops sending it entries.
	const n = 6500
	for i := 0; i < n; i++ {
		if _, err := writer.Create(ctx, fmt.Sprintf("/w/n%05d", i), nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	fn.HealAll()
	deadline := time.Now().Add(time.Minute)
	for !logs[m].has("restored snapshot from leader") {
		if time.Now().After(deadline) {
			logs[lead].mu.Lock()
			ll := logs[lead].b.String()
			logs[lead].mu.Unlock()
			logs[m].mu.Lock()
			ml := logs[m].b.String()
			logs[m].mu.Unlock()
			t.Fatalf("the follower was never sent a snapshot: the test does not test what it is for\nleader:\n%s\nfollower:\n%s\n%v", lastBytes(ll), lastBytes(ml), fn.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A dropped watcher reconnects and sets its watch again before /w/last
	// is created (a persistent watch misses what happens in between).
	suspended := false
	settle := time.After(10 * time.Second)
reconnect:
	for {
		select {
		case s := <-states:
			switch s {
			case zk.StateSuspended:
				suspended = true
			case zk.StateReconnected:
				t.Logf("watcher reconnected")
				break reconnect
			}
		case <-settle:
			t.Logf("watcher not reconnected within 10s")
			break reconnect
		}
	}
	if _, err := writer.Create(ctx, "/w/last", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}

	// Until /w/last: every create in order, unless the connection was
	// dropped first.
	next := 0
	for {
		select {
		case s := <-states:
			if s == zk.StateSuspended {
				suspended = true
			}
			continue
		case ev := <-w.Events():
			if ev.Type != zk.EventNodeCreated {
				continue
			}
			if ev.Path == "/w/last" {
				if next != n && !suspended {
					t.Fatalf("the watch saw %d of %d creates before /w/last, and no disconnection", next, n)
				}
				t.Logf("%d of %d creates seen; disconnected: %v", next, n, suspended)
				return
			}
			if want := fmt.Sprintf("/w/n%05d", next); ev.Path == want {
				next++
			} else if !suspended {
				t.Fatalf("the watch saw %s after %d creates (want %s), and no disconnection", ev.Path, next, want)
			}
		case <-ctx.Done():
			logs[m].mu.Lock()
			ml := logs[m].b.String()
			logs[m].mu.Unlock()
			t.Fatalf("no event for /w/last (%d creates seen)\n%s", next, lastBytes(ml))
		}
	}
}

func lastBytes(s string) string {
	if len(s) > 6000 {
		return s[len(s)-6000:]
	}
	return s
}
