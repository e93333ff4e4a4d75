package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// The reconnect storm (-storm N): a 3-member ensemble of each server gets N
// sessions of zkgo's Go client spread evenly over its members (each
// session's own member first in its host list), and a few sessions that
// read in a loop. Then the leader is killed with SIGKILL. The report gives,
// per server: how many sessions lost their connection, the time from the
// kill until every one of them was connected again (and the median and
// p99 of that time per session), how many sessions expired (none should:
// the timeout is 30 s), and the readers' latency meanwhile (a read that
// fails is retried; its latency runs from its first try to its answer).
// Every run starts a fresh ensemble; runs alternate which server goes
// first.

// stormTimeout is every storm session's timeout.
const stormTimeout = 30 * time.Second

type stormResult struct {
	Server       string        `json:"server"`
	Sessions     int           `json:"sessions"`
	ConnectTook  time.Duration `json:"connect_ns"` // opening the sessions
	Disconnected int           `json:"disconnected"`
	Lost         int           `json:"lost"`
	AllBack      time.Duration `json:"all_back_ns"` // kill → the last session connected again
	BackP50      time.Duration `json:"back_p50_ns"`
	BackP99      time.Duration `json:"back_p99_ns"`
	Reads        int           `json:"reads"` // reads started between the kill and AllBack
	ReadP99      time.Duration `json:"read_p99_ns"`
	ReadMax      time.Duration `json:"read_max_ns"`
	Err          string        `json:"error,omitempty"`
}

func runStorm(ctx context.Context, o options, bin, root string, sessions int) error {
	var results []stormResult
	for rep := 0; rep < o.repeats; rep++ {
		for _, name := range alternating(rep) {
			var e *ensemble
			var err error
			if name == "zkgo" {
				e, err = newZkgoEnsemble(bin, root)
			} else {
				e, err = newZooKeeperEnsemble(root, o.clusterHeap)
			}
			if err != nil {
				return err
			}
			logf("reconnect storm, %s, run %d: %d sessions", name, rep+1, sessions)
			r := stormOn(ctx, e, sessions)
			e.kill()
			logf("  %s", r.line())
			results = append(results, r)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nReconnect storm: %d sessions (zkgo's Go client, timeout %v) spread over a 3-member ensemble on loopback, 8 more reading in a loop; the leader killed with SIGKILL. Times from the kill.\n\n", sessions, stormTimeout)
	b.WriteString("| server | sessions that lost their connection | all connected again | per session p50 / p99 | sessions expired | reads meanwhile: p99 / max |\n|---|--:|--:|--:|--:|--:|\n")
	for _, r := range results {
		if r.Err != "" {
			fmt.Fprintf(&b, "| %s | error: %s | | | | |\n", r.Server, r.Err)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d of %d | %s | %s / %s | %d | %s / %s (%d reads) |\n", r.Server, r.Disconnected, r.Sessions,
			durMs(r.AllBack), durMs(r.BackP50), durMs(r.BackP99), r.Lost, durMs(r.ReadP99), durMs(r.ReadMax), r.Reads)
	}
	fmt.Print(b.String())
	return nil
}

func (r stormResult) line() string {
	if r.Err != "" {
		return r.Server + ": " + r.Err
	}
	return fmt.Sprintf("%s: %d sessions opened in %v; %d disconnected, all back after %v (p50 %v, p99 %v), %d expired; reads p99 %v max %v",
		r.Server, r.Sessions, r.ConnectTook.Round(time.Millisecond), r.Disconnected, r.AllBack.Round(time.Millisecond),
		r.BackP50.Round(time.Millisecond), r.BackP99.Round(time.Millisecond), r.Lost, r.ReadP99.Round(time.Microsecond), r.ReadMax.Round(time.Microsecond))
}

// stormSession follows one session's states after the kill.
type stormSession struct {
	c        *zk.Conn
	mu       sync.Mutex // guards the fields below
	lostConn bool       // it was Suspended after the kill
	backAt   time.Time  // when it was connected again after that
	lost     bool       // it expired
}

func stormOn(ctx context.Context, e *ensemble, n int) (r stormResult) {
	r.Server, r.Sessions = e.name, n
	if _, _, err := e.start(ctx, 2*time.Minute); err != nil {
		r.Err = err.Error()
		return r
	}
	addrs := strings.Split(e.addrs(), ",")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hosts := func(i int) []string {
		h := make([]string, len(addrs))
		for j := range addrs {
			h[j] = addrs[(i+j)%len(addrs)]
		}
		return h
	}
	dial := func(i int) (*zk.Conn, error) {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return zk.Connect(cctx, hosts(i), zk.WithSessionTimeout(stormTimeout), zk.WithHostShuffle(false), zk.WithLogger(quiet))
	}
	ss := make([]*stormSession, n)
	t0 := time.Now()
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	sem := make(chan struct{}, 64)
	for i := range ss {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := dial(i)
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			ss[i] = &stormSession{c: c}
		}()
	}
	wg.Wait()
	r.ConnectTook = time.Since(t0)
	defer func() {
		var cw sync.WaitGroup
		for _, s := range ss {
			if s != nil {
				cw.Add(1)
				sem <- struct{}{}
				go func() { defer cw.Done(); defer func() { <-sem }(); s.c.Close() }()
			}
		}
		cw.Wait()
	}()
	if p := firstErr.Load(); p != nil {
		r.Err = "opening the sessions: " + (*p).Error()
		return r
	}
	// Follow every session's states from now on.
	var lastEvent atomic.Int64 // unix ns of the last state change seen
	var follow sync.WaitGroup
	stopFollow := make(chan struct{})
	for _, s := range ss {
		ch, stop := s.c.NotifyState()
		follow.Add(1)
		go func() {
			defer follow.Done()
			defer stop()
			for {
				select {
				case st, ok := <-ch:
					if !ok {
						return
					}
					now := time.Now()
					lastEvent.Store(now.UnixNano())
					s.mu.Lock()
					switch st {
					case zk.StateSuspended:
						s.lostConn, s.backAt = true, time.Time{}
					case zk.StateReconnected, zk.StateConnected:
						if s.lostConn {
							s.backAt = now
						}
					case zk.StateLost:
						s.lost = true
					}
					s.mu.Unlock()
				case <-stopFollow:
					return
				}
			}
		}()
	}
	defer func() { close(stopFollow); follow.Wait() }()

	// Readers: 8 sessions reading / in a loop, each read retried until it
	// is answered.
	type sample struct {
		at  time.Time
		lat time.Duration
	}
	var smu sync.Mutex
	var samples []sample
	readCtx, stopReads := context.WithCancel(ctx)
	var readers sync.WaitGroup
	for i := 0; i < 8; i++ {
		c, err := dial(i)
		if err != nil {
			r.Err = "opening a reader: " + err.Error()
			stopReads()
			return r
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			defer c.Close()
			for readCtx.Err() == nil {
				start := time.Now()
				for readCtx.Err() == nil {
					rctx, cancel := context.WithTimeout(readCtx, 5*time.Second)
					_, err := c.Exists(rctx, "/")
					cancel()
					if err == nil {
						break
					}
					time.Sleep(time.Millisecond)
				}
				smu.Lock()
				samples = append(samples, sample{start, time.Since(start)})
				smu.Unlock()
			}
		}()
	}
	defer func() { stopReads(); readers.Wait() }()
	time.Sleep(time.Second) // the readers run before the kill

	lead, ok := e.leader()
	if !ok {
		r.Err = "no leader before the kill"
		return r
	}
	kill := time.Now()
	e.members[lead].kill()
	// Wait until every session that lost its connection has it back (or
	// expired), and no session changed state for two seconds.
	deadline := kill.Add(2 * time.Minute)
	var backs []time.Duration
	for {
		time.Sleep(20 * time.Millisecond)
		down, lostN := 0, 0
		backs = backs[:0]
		var last time.Time
		for _, s := range ss {
			s.mu.Lock()
			switch {
			case s.lost:
				lostN++
			case s.lostConn && s.backAt.IsZero():
				down++
			case s.lostConn:
				backs = append(backs, s.backAt.Sub(kill))
				if s.backAt.After(last) {
					last = s.backAt
				}
			}
			s.mu.Unlock()
		}
		quiet := time.Since(time.Unix(0, lastEvent.Load())) > 2*time.Second
		if down == 0 && time.Since(kill) > 2*time.Second && quiet {
			r.Disconnected, r.Lost = len(backs)+lostN, lostN
			if !last.IsZero() {
				r.AllBack = last.Sub(kill)
			}
			break
		}
		if time.Now().After(deadline) {
			r.Err = fmt.Sprintf("%d sessions still disconnected 2 minutes after the kill (%d expired)", down, lostN)
			return r
		}
	}
	slices.Sort(backs)
	if len(backs) > 0 {
		r.BackP50 = backs[len(backs)/2]
		r.BackP99 = backs[min(len(backs)-1, len(backs)*99/100)]
	}
	stopReads()
	readers.Wait()
	var lats []time.Duration
	end := kill.Add(max(r.AllBack, time.Second))
	for _, s := range samples {
		if !s.at.Before(kill) && s.at.Before(end) || s.at.Before(kill) && s.at.Add(s.lat).After(kill) {
			lats = append(lats, s.lat)
		}
	}
	slices.Sort(lats)
	if r.Reads = len(lats); r.Reads > 0 {
		r.ReadP99 = lats[min(len(lats)-1, len(lats)*99/100)]
		r.ReadMax = lats[len(lats)-1]
	}
	return r
}
