package server_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zk"
)

// quorumSASL is the QuorumServer/QuorumLearner pair of ZooKeeper's
// quorum SASL guide (DIGEST-MD5, one user for every member).
func quorumSASL(learnerRequire, serverRequire bool) server.QuorumAuthOptions {
	return server.QuorumAuthOptions{Enable: true, LearnerRequire: learnerRequire, ServerRequire: serverRequire,
		ServerUsers: map[string]string{"test": "test"}, LearnerUser: "test", LearnerPassword: "test"}
}

// An ensemble whose members require quorum SASL forms and replicates; a
// member without credentials, and one with a wrong password, are
// refused by the others, and each side logs why.
func TestQuorumSASLRefusesMembersWithoutCredentials(t *testing.T) {
	logs := make([]*lockedBuffer, 3)
	for i := range logs {
		logs[i] = &lockedBuffer{}
	}
	auth := []server.QuorumAuthOptions{quorumSASL(true, true), quorumSASL(true, true), {}}
	c := startCluster(t, 3, 0, func(o *server.Options) {
		i := o.ServerID - 1
		o.QuorumAuth = auth[i]
		o.Logger = slog.New(slog.NewTextHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	lead := c.createOnLeader("/a", "x")
	if lead == 2 {
		t.Fatal("the member without credentials leads")
	}
	other := 1 - lead
	c.waitNode(other, "/a", "x")
	waitLogs(t, logs[lead], "quorum.auth.serverRequireSasl=true", logs[2], "quorum.auth.serverRequireSasl=true")
	refusedAll := func(what string) {
		t.Helper()
		if got := c.members[2].Mode(); got == "leader" {
			t.Fatalf("the member %s leads", what)
		}
		c.members[2].Tree(func(tr *tree.Tree) {
			if tr.Get("/a") != nil {
				t.Fatalf("the member %s has the ensemble's data", what)
			}
		})
	}
	refusedAll("without credentials")

	// A wrong password: refused by the exchange itself.
	c.members[2].Close()
	c.members[2] = nil
	logs[2] = &lockedBuffer{}
	bad := quorumSASL(true, true)
	bad.LearnerPassword = "wrong"
	auth[2] = bad
	c.restart(2)
	waitLogs(t, logs[lead], "quorum SASL", logs[2], "quorum SASL")
	refusedAll("with a wrong password")
	// With the right one it joins.
	c.members[2].Close()
	c.members[2] = nil
	auth[2] = quorumSASL(true, true)
	c.restart(2)
	c.waitNode(2, "/a", "x")
}

// ZooKeeper's rolling switch-on (enableSasl, then learnerRequireSasl,
// then serverRequireSasl, one member restarted at a time) under writes:
// the ensemble keeps a leader, and no acknowledged write is lost.
func TestQuorumSASLRollingSwitchOn(t *testing.T) {
	var mu sync.Mutex
	auth := make([]server.QuorumAuthOptions, 3)
	c := startCluster(t, 3, 0, func(o *server.Options) {
		mu.Lock()
		o.QuorumAuth = auth[o.ServerID-1]
		mu.Unlock()
		if os.Getenv("QA_DEBUG") != "" {
			o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("member", o.ServerID)
		}
	})
	c.leader()
	addrs := []string{c.addr(0), c.addr(1), c.addr(2)} // guarded by mu
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A restarted member listens for clients on a new port: a new
	// session is given the members' current addresses.
	connect := func() *zk.Conn {
		mu.Lock()
		servers := slices.Clone(addrs)
		mu.Unlock()
		cl, err := zk.Connect(ctx, servers)
		if err != nil {
			t.Error(err)
		}
		return cl
	}
	cl := connect()
	defer func() { cl.Close() }()
	var acked atomic.Int64  // acknowledged writes, for progress
	var ackedPaths []string // the writer's until done
	var stop atomic.Bool
	done := make(chan error, 1)
	go func() {
		for i := 0; !stop.Load(); i++ {
			path := fmt.Sprintf("/w-%05d", i)
			_, err := cl.Create(ctx, path, nil, zk.OpenACLUnsafe, zk.ModePersistent)
			switch {
			case err == nil, errors.Is(err, zk.ErrNodeExists):
				// Created now, or by an earlier try whose answer was
				// lost (after a session expired): there it is.
				ackedPaths = append(ackedPaths, path)
				acked.Add(1)
			case errors.Is(err, zk.ErrSessionExpired):
				// Sessions last a second at this tick: a new one goes
				// on, trying the same path again.
				cl.Close()
				if cl = connect(); cl == nil {
					done <- err
					return
				}
				i--
			case errors.Is(err, zk.ErrConnectionLoss):
				// Unknown outcome: not counted either way.
				time.Sleep(20 * time.Millisecond)
			default:
				done <- err
				return
			}
		}
		done <- nil
	}()
	progress := func(what string) {
		t.Helper()
		target := acked.Load() + 20
		for acked.Load() < target {
			select {
			case err := <-done:
				t.Fatalf("writes stopped (%s): %v", what, err)
			case <-ctx.Done():
				t.Fatalf("no progress (%s): %d acknowledged", what, acked.Load())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	progress("start")
	for _, stage := range []struct {
		name string
		qa   server.QuorumAuthOptions
	}{
		{"enableSasl", quorumSASL(false, false)},
		{"learnerRequireSasl", quorumSASL(true, false)},
		{"serverRequireSasl", quorumSASL(true, true)},
	} {
		for i := range 3 {
			c.members[i].Close()
			c.members[i] = nil
			mu.Lock()
			auth[i] = stage.qa
			mu.Unlock()
			c.restart(i)
			mu.Lock()
			addrs[i] = c.addr(i)
			mu.Unlock()
			c.leader()
			progress(fmt.Sprintf("%s on member %d", stage.name, i+1))
		}
	}
	stop.Store(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	last := ackedPaths[len(ackedPaths)-1]
	for i := range 3 {
		c.waitNode(i, last, "")
	}
	check, err := zk.Connect(ctx, []string{c.addr(c.leader())})
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	for _, p := range ackedPaths {
		if st, err := check.Exists(ctx, p); err != nil || st == nil {
			t.Fatalf("acknowledged write %s lost (%v); %d acknowledged", p, err, len(ackedPaths))
		}
	}
	n := len(ackedPaths)
	t.Logf("%d writes acknowledged across 9 restarts", n)
}
