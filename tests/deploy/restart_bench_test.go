package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// stop stops the member with SIGTERM (as an init system does) and waits
// until it has exited.
func (mb *member) stop() {
	mb.mu.Lock()
	cmd, exited := mb.cmd, mb.exited
	mb.cmd = nil
	mb.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// A rolling restart of a 3-member ensemble, each member stopped with
// SIGTERM and started again in turn, while one session writes through
// the connection string of all three: the longest wait between two
// acknowledged writes (stall_ms), on zkgo and on Apache ZooKeeper. The
// leader's restart is the one that costs an election; a zkgo leader
// hands leadership over on SIGTERM. Run with
//
//	go test -run XXX -bench RollingRestart -benchtime 1x ./tests/deploy/
//
// and ZKGO_DEPLOY_BIN=<an older zkgo> for the figure before the handover.
func BenchmarkRollingRestart(b *testing.B) {
	for _, im := range impls(b) {
		b.Run(string(im), func(b *testing.B) {
			var worst time.Duration
			for range b.N {
				worst = max(worst, rollingRestartStall(b, im))
			}
			b.ReportMetric(float64(worst.Milliseconds()), "stall_ms")
		})
	}
}

// rollingRestartStall runs one rolling restart and returns the longest
// gap between acknowledged writes.
func rollingRestartStall(b *testing.B, im impl) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n := newNetwork(b, false)
	ms := []*machine{n.addMachine(1), n.addMachine(2), n.addMachine(3)}
	e := configure(b, im, ms, 1, func(int) string { return lines(1, ms[0].ip4, ms[1].ip4, ms[2].ip4) })
	for _, mb := range e {
		mb.start()
	}
	e.waitLeader(ctx, b)
	c := connect(ctx, b, e...)
	var (
		mu        sync.Mutex // guards worst, last, phase, worstWhen
		worst     time.Duration
		last      = time.Now()
		phase     = "before"
		worstWhen string
	)
	setPhase := func(p string) {
		mu.Lock()
		phase = p
		mu.Unlock()
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			_, err := c.Create(ctx, fmt.Sprintf("/w-%06d", i), nil, zk.OpenACLUnsafe, zk.ModePersistent)
			if err != nil && !errors.Is(err, zk.ErrConnectionLoss) && !errors.Is(err, zk.ErrNodeExists) {
				done <- err
				return
			}
			if err == nil {
				now := time.Now()
				mu.Lock()
				if now.Sub(last) > worst {
					worst, worstWhen = now.Sub(last), phase+" from "+last.UTC().Format("15:04:05.000")
				}
				last = now
				mu.Unlock()
			}
		}
	}()
	time.Sleep(time.Second)
	// Followers first, the leader last, as operators do.
	lead := e.waitLeader(ctx, b)
	var order []*member
	for _, mb := range e {
		if mb != lead {
			order = append(order, mb)
		}
	}
	order = append(order, lead)
	for _, mb := range order {
		role := "follower"
		if mb == lead {
			role = "leader"
		}
		setPhase(fmt.Sprintf("stopping server.%d (%s)", mb.id, role))
		mb.stop()
		setPhase(fmt.Sprintf("starting server.%d (%s)", mb.id, role))
		mb.start()
		e.waitLeader(ctx, b)
		setPhase(fmt.Sprintf("after server.%d's restart", mb.id))
		time.Sleep(time.Second) // writes flow again before the next
	}
	close(stop)
	if err := <-done; err != nil {
		b.Fatalf("%s: writes failed: %v", im, err)
	}
	mu.Lock()
	defer mu.Unlock()
	b.Logf("%s: longest stall %v (%s)", im, worst, worstWhen)
	// ZKGO_STALL_LOGS=DIR keeps the members' logs of a run that stalled
	// longer than half a second.
	if dir := os.Getenv("ZKGO_STALL_LOGS"); dir != "" && worst > 500*time.Millisecond {
		for _, mb := range e {
			name := fmt.Sprintf("%s/%s-%d-server%d.log", dir, im, time.Now().UnixNano(), mb.id)
			if err := os.WriteFile(name, []byte(mb.output()), 0o644); err != nil {
				b.Log(err)
			}
		}
	}
	return worst
}
