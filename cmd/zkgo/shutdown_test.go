package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// TestSIGTERMKeepsSessions: SIGTERM is a graceful stop, as ZooKeeper's:
// the server exits 0 promptly while a client is writing, every write it
// acknowledged is there after the restart, and it closes no session: the
// client resumes its session (same id) after the restart on the same data
// directory, with its ephemeral.
func TestSIGTERMKeepsSessions(t *testing.T) {
	dir := t.TempDir()
	cfg := durableConfig(t, dir, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	open := zk.OpenACLUnsafe
	cmd, addr, logs := startServerLog(t, cfg)

	c, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := c.SessionID()
	if _, err := c.Create(ctx, "/eph", []byte("mine"), open, zk.ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/w", nil, open, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}

	// A second session writes until the server goes away.
	w, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	writeCtx, stopWriting := context.WithCancel(ctx)
	defer stopWriting()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; writeCtx.Err() == nil; i++ {
			p := fmt.Sprintf("/w/n%06d", i)
			opCtx, cancel := context.WithTimeout(writeCtx, time.Second)
			_, err := w.Create(opCtx, p, nil, open, zk.ModePersistent)
			cancel()
			if err != nil {
				return // the connection went with the server
			}
			mu.Lock()
			acked = append(acked, p)
			mu.Unlock()
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes in 10s", n)
		}
	}

	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("graceful stop took %v", d)
	}
	stopWriting()
	wg.Wait()
	if l := logs.String(); !strings.Contains(l, "shutting down") {
		t.Fatalf("no shutdown logged:\n%s", l)
	}

	_, addr2 := startServer(t, cfg)
	if addr2 != addr {
		t.Fatalf("restarted on %s, want %s", addr2, addr)
	}
	states, stop := c.NotifyState()
	defer stop()
	for c.State() != zk.StateConnected && c.State() != zk.StateReconnected {
		select {
		case s := <-states:
			if s == zk.StateLost || s == zk.StateClosed {
				t.Fatalf("session lost across the graceful restart (state %v)", s)
			}
		case <-ctx.Done():
			t.Fatal("client did not reconnect")
		}
	}
	if c.SessionID() != id {
		t.Fatalf("session %#x after the restart, want %#x resumed", c.SessionID(), id)
	}
	data, st, err := c.Get(ctx, "/eph")
	if err != nil || string(data) != "mine" || st.EphemeralOwner != id {
		t.Fatalf("ephemeral after the restart: %q %+v %v", data, st, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range acked {
		if st, err := c.Exists(ctx, p); err != nil || st == nil {
			t.Fatalf("acknowledged write %s missing after the restart: %v", p, err)
		}
	}
	t.Logf("%d acknowledged writes kept; stopped in %v", len(acked), time.Since(start))
}
