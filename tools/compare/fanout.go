package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zk/wire"
)

// The watch fan-out (-fanout N,M,…): for each count N and each server, a
// fresh standalone server gets N watcher sessions, each with a one-shot data
// watch (getData, watch=true) on one znode; then one more session sets the
// znode's data. Every watcher records when its notification arrives; the
// report gives the time from sending the setData until the last
// notification arrived, the median and p99 of the arrival times, and how
// many never arrived (within fanoutWait). The RSS of the server is read
// before the sessions, after them and after the watches: memory per
// session and per watch. Each server start runs fanoutRounds rounds: the
// first on the watches set once, each later one after every watcher set
// its watch again (and a pause, so that the connections are idle again).
// The heap in use after a full GC is read at the same points: ZooKeeper's
// from jcmd, zkgo's from Go's profiler on its AdminServer (enabled on a
// loopback port for this, newZkgoPprof).
//
// The watchers are a minimal client on the wire protocol (zk/wire): one
// goroutine per session reading frames into a 512-byte buffer, requests
// written under a per-session mutex, a ping every fanoutPing outside the
// rounds. Sessions dial from 127.0.0.2, 127.0.0.3, … (fanoutPerSource
// each) so that no source address runs out of ephemeral ports. Every
// client connection is a file descriptor of this process and every
// server-side one of the server's, which inherits this process's
// RLIMIT_NOFILE: runFanout raises it as far as the hard limit (and the
// hard limit too if it may) and refuses counts that do not fit.

const (
	fanoutTimeout   = 40 * time.Second // the watchers' session timeout
	fanoutPing      = 10 * time.Second
	fanoutWait      = 60 * time.Second // bound on one round's notifications
	fanoutRounds    = 4
	fanoutPerSource = 20000 // sessions per source address
	fanoutPath      = "/zkgo-fanout"
	fanoutDialers   = 64 // sessions opened concurrently
)

type fanoutRound struct {
	Last      time.Duration `json:"last_ns"` // setData sent → last notification
	P50       time.Duration `json:"p50_ns"`
	P99       time.Duration `json:"p99_ns"`
	Reply     time.Duration `json:"setdata_reply_ns"` // setData sent → its reply
	Missing   int           `json:"missing"`
	ServerCPU time.Duration `json:"server_cpu_ns"` // utime+stime over the round (10 ms ticks)
	ClientCPU time.Duration `json:"client_cpu_ns"` // this process over the round
}

type fanoutResult struct {
	Server      string        `json:"server"`
	Watchers    int           `json:"watchers"`
	Repeat      int           `json:"repeat"`
	OpenTook    time.Duration `json:"open_ns"`
	ArmTook     time.Duration `json:"arm_ns"`
	RSSIdle     int64         `json:"rss_idle"`
	RSSSessions int64         `json:"rss_sessions"`
	RSSWatches  int64         `json:"rss_watches"`
	// The used heap after a full GC at the same three points: ZooKeeper's
	// from jcmd, zkgo's HeapAlloc from its pprof endpoint.
	HeapIdle     int64         `json:"java_heap_idle,omitempty"`
	HeapSessions int64         `json:"java_heap_sessions,omitempty"`
	HeapWatches  int64         `json:"java_heap_watches,omitempty"`
	WatchCount   int64         `json:"watch_count"` // mntr zk_watch_count after the first arming
	Rounds       []fanoutRound `json:"rounds"`
	Err          string        `json:"error,omitempty"`
}

// fanoutSession is one watcher.
type fanoutSession struct {
	nc      net.Conn
	wc      *wire.Conn
	wmu     sync.Mutex // serialises writes
	xid     int32      // guarded by wmu
	lastPkt atomic.Int64
	at      atomic.Int64 // this round's notification, ns since fanout.base; 0: none yet
}

// fanout is the set of watchers of one server run.
type fanout struct {
	base     time.Time
	n        int
	mu       sync.Mutex       // guards ss while the sessions open
	ss       []*fanoutSession // the open sessions
	notified atomic.Int64     // notifications this round
	replies  atomic.Int64     // ordinary replies (to getData)
	replyErr atomic.Int64     // replies with an error code
	quiet    atomic.Bool      // no pings: a round is running
	readers  sync.WaitGroup
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-fanout: %q is not a positive count", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("-fanout: no count")
	}
	return out, nil
}

// raiseNofile raises RLIMIT_NOFILE to want descriptors if it can (the soft
// limit up to the hard one; the hard one only with CAP_SYS_RESOURCE) and
// returns the limit now in force.
func raiseNofile(want uint64) (uint64, string) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err.Error()
	}
	if rl.Cur >= want {
		return rl.Cur, ""
	}
	note := ""
	if rl.Max < want {
		try := syscall.Rlimit{Cur: want, Max: want}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &try); err == nil {
			return want, ""
		} else {
			note = fmt.Sprintf("setrlimit(RLIMIT_NOFILE, %d): %v (the hard limit is %d)", want, err, rl.Max)
		}
	}
	rl.Cur = min(want, rl.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		note = err.Error()
	}
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	return rl.Cur, note
}

// fanoutFdSlack is what a server and this process need beyond the
// watchers' connections (the JVM's jars and logs, zkgo's log, the writer).
const fanoutFdSlack = 500

func runFanout(ctx context.Context, o options, bin, root string, counts []int) error {
	most := slices.Max(counts)
	limit, note := raiseNofile(uint64(most + fanoutFdSlack))
	for _, n := range counts {
		if uint64(n+fanoutFdSlack) > limit {
			msg := fmt.Sprintf("-fanout %d needs about %d file descriptors in this process and in the server (one per connection on each side), but RLIMIT_NOFILE is %d here and cannot be raised", n, n+fanoutFdSlack, limit)
			if note != "" {
				msg += ": " + note
			}
			return fmt.Errorf("%s; the largest count that fits is %d", msg, int(limit)-fanoutFdSlack)
		}
	}
	logf("fan-out: RLIMIT_NOFILE %d", limit)
	var results []fanoutResult
	for _, n := range counts {
		for rep := 0; rep < o.repeats; rep++ {
			for _, name := range alternating(rep) {
				var s *server
				var err error
				if name == "zkgo" {
					s, err = newZkgoPprof(bin, root)
				} else {
					s, err = newZooKeeper(root, o.heap)
				}
				if err != nil {
					return err
				}
				logf("watch fan-out, %s, %d watchers, run %d", name, n, rep+1)
				r := fanoutOn(ctx, s, n, rep)
				s.kill()
				os.RemoveAll(s.dir)
				logf("  %s", r.line())
				results = append(results, r)
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	if o.raw != "" {
		data, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(o.raw, data, 0o644); err != nil {
			return err
		}
	}
	fmt.Print(fanoutReport(results, counts, o))
	return nil
}

func (r fanoutResult) line() string {
	if r.Err != "" {
		return r.Server + ": " + r.Err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d sessions opened in %v, watches set in %v (zk_watch_count %d); RSS %.1f → %.1f → %.1f MiB",
		r.Server, r.Watchers, r.OpenTook.Round(time.Millisecond), r.ArmTook.Round(time.Millisecond), r.WatchCount,
		mib(r.RSSIdle), mib(r.RSSSessions), mib(r.RSSWatches))
	if r.HeapWatches > 0 {
		fmt.Fprintf(&b, ", heap %.1f → %.1f → %.1f MiB", mib(r.HeapIdle), mib(r.HeapSessions), mib(r.HeapWatches))
	}
	for i, rd := range r.Rounds {
		fmt.Fprintf(&b, "\n    round %d: last %v, p50 %v, p99 %v, setData reply %v, missing %d, CPU server %v client %v", i+1,
			rd.Last.Round(time.Microsecond), rd.P50.Round(time.Microsecond), rd.P99.Round(time.Microsecond),
			rd.Reply.Round(time.Microsecond), rd.Missing, rd.ServerCPU, rd.ClientCPU.Round(time.Millisecond))
	}
	return b.String()
}

func fanoutOn(ctx context.Context, s *server, n, repeat int) (r fanoutResult) {
	r.Server, r.Watchers, r.Repeat = s.name, n, repeat
	if _, err := s.start(2 * time.Minute); err != nil {
		r.Err = err.Error()
		return r
	}
	pid := s.pid()
	javaHeap := func() int64 {
		var h int64
		var err error
		if s.name == "zookeeper" {
			h, err = javaHeapUsed(pid)
		} else {
			h, err = goHeapAlloc(s.adminAddr)
		}
		if err != nil {
			logf("  %v", err)
		}
		return h
	}
	setup, err := rawzk.Dial(s.addr(), rawzk.Options{Timeout: fanoutTimeout})
	if err != nil {
		r.Err = "setup: " + err.Error()
		return r
	}
	h, err := setup.Call(proto.OpCreate, &proto.CreateRequest{Path: fanoutPath, Data: []byte("0"), ACL: acl.OpenACLUnsafe, Flags: proto.ModePersistent}, nil)
	setup.CloseSession()
	if err != nil || h.Err != proto.ErrOk {
		r.Err = fmt.Sprintf("create %s: %v %v", fanoutPath, err, h.Err)
		return r
	}
	time.Sleep(2 * time.Second)
	r.RSSIdle, _ = rssBytes(pid)
	r.HeapIdle = javaHeap()

	f := &fanout{base: time.Now(), n: n}
	defer f.close()
	stopPing := make(chan struct{})
	var pinger sync.WaitGroup
	pinger.Add(1)
	go func() { defer pinger.Done(); f.pingLoop(stopPing) }()
	defer func() { close(stopPing); pinger.Wait() }()

	t0 := time.Now()
	if err := f.open(ctx, s.addr()); err != nil {
		r.Err = "opening the sessions: " + err.Error()
		return r
	}
	r.OpenTook = time.Since(t0)
	time.Sleep(2 * time.Second)
	r.RSSSessions, _ = rssBytes(pid)
	r.HeapSessions = javaHeap()
	saveHeapProfile(s, n, repeat, "sessions")

	t0 = time.Now()
	if err := f.arm(); err != nil {
		r.Err = "setting the watches: " + err.Error()
		return r
	}
	r.ArmTook = time.Since(t0)
	r.WatchCount = mntr(s.addr())["zk_watch_count"]
	// The writer opens now: it is kept alive by a ping before each round.
	writer, err := rawzk.Dial(s.addr(), rawzk.Options{Timeout: fanoutTimeout})
	if err != nil {
		r.Err = "writer: " + err.Error()
		return r
	}
	defer writer.Close()
	time.Sleep(2 * time.Second)
	r.RSSWatches, _ = rssBytes(pid)
	r.HeapWatches = javaHeap()
	saveHeapProfile(s, n, repeat, "watches")
	time.Sleep(time.Second) // after the full GC

	for round := 0; round < fanoutRounds; round++ {
		if round > 0 {
			if err := f.arm(); err != nil {
				r.Err = fmt.Sprintf("setting the watches again before round %d: %v", round+1, err)
				return r
			}
			time.Sleep(2 * time.Second) // the connections go idle again (zkgo parks them)
		}
		if _, err := writer.Call(proto.OpPing, nil, nil); err != nil {
			r.Err = fmt.Sprintf("writer's ping before round %d: %v", round+1, err)
			return r
		}
		var prof chan error
		if dir := os.Getenv("ZKGO_FANOUT_PPROF"); dir != "" && s.adminAddr != "" {
			prof = make(chan error, 1)
			file := filepath.Join(dir, fmt.Sprintf("fanout-%d-run%d-round%d.pprof", n, repeat+1, round+1))
			go func() { prof <- fetchTo("http://"+s.adminAddr+"/debug/pprof/profile?seconds=2", file) }()
			time.Sleep(300 * time.Millisecond) // the profile has started
		}
		rd, err := f.round(ctx, writer, pid, round)
		if prof != nil {
			if err := <-prof; err != nil {
				logf("  CPU profile: %v", err)
			}
		}
		if err != nil {
			r.Err = fmt.Sprintf("round %d: %v", round+1, err)
			return r
		}
		r.Rounds = append(r.Rounds, rd)
		if !s.alive() {
			r.Err = "the server died:\n" + s.logTail()
			return r
		}
	}
	return r
}

// open opens every watcher session, fanoutDialers at a time.
func (f *fanout) open(ctx context.Context, addr string) error {
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	sem := make(chan struct{}, fanoutDialers)
	for i := range f.n {
		if ctx.Err() != nil || firstErr.Load() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s, err := f.dial(addr, i)
			if err != nil {
				err = fmt.Errorf("session %d: %w", i, err)
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			f.mu.Lock()
			f.ss = append(f.ss, s)
			f.mu.Unlock()
			f.readers.Add(1)
			go f.read(s)
		}()
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return *p
	}
	return ctx.Err()
}

func (f *fanout) dial(addr string, i int) (*fanoutSession, error) {
	src := net.IPv4(127, 0, 0, byte(2+i/fanoutPerSource))
	d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: src}, Control: bindNoPort}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	wc := wire.NewConn(nc, wire.Options{ReadBuffer: 512, KeepBuffer: 512})
	if _, err := wc.Handshake(proto.ConnectRequest{TimeOut: int32(fanoutTimeout / time.Millisecond)}, time.Now().Add(30*time.Second)); err != nil {
		nc.Close()
		return nil, err
	}
	s := &fanoutSession{nc: nc, wc: wc}
	s.lastPkt.Store(int64(time.Since(f.base)))
	return s, nil
}

// ipBindAddressNoPort is Linux's IP_BIND_ADDRESS_NO_PORT (linux/in.h).
const ipBindAddressNoPort = 24

// bindNoPort sets IP_BIND_ADDRESS_NO_PORT on a socket about to be bound
// to a source address: the kernel then picks its port at connect, unique
// per 4-tuple, instead of at bind, where a port must be free on the
// source address (bind picks from half the ephemeral range first, and
// connections closed by a killed server hold theirs for a while).
func bindNoPort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
	}); err != nil {
		return err
	}
	return serr
}

// read is a watcher's reading goroutine.
func (f *fanout) read(s *fanoutSession) {
	defer f.readers.Done()
	for {
		h, _, err := s.wc.ReadReply()
		if err != nil {
			return
		}
		switch wire.KindOf(h.Xid) {
		case wire.KindNotification:
			if s.at.CompareAndSwap(0, int64(time.Since(f.base))) {
				f.notified.Add(1)
			}
		case wire.KindReply:
			if h.Err != proto.ErrOk {
				f.replyErr.Add(1)
			}
			f.replies.Add(1)
		}
	}
}

func (f *fanout) send(s *fanoutSession, op proto.OpCode, req proto.Record) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	xid, ok := wire.ReservedXid(op)
	if !ok {
		s.xid++
		xid = s.xid
	}
	var e jute.Encoder
	wire.AppendRequest(&e, xid, op, req)
	s.lastPkt.Store(int64(time.Since(f.base)))
	_, err := s.nc.Write(e.Bytes())
	return err
}

// pingLoop pings every session that sent nothing for fanoutPing, except
// while a round runs.
func (f *fanout) pingLoop(stop chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		f.mu.Lock()
		ss := f.ss
		f.mu.Unlock()
		for _, s := range ss {
			if f.quiet.Load() {
				break
			}
			if time.Since(f.base)-time.Duration(s.lastPkt.Load()) > fanoutPing {
				f.send(s, proto.OpPing, nil)
			}
		}
	}
}

// arm sets every session's watch (getData with watch=true) and waits for
// all the replies.
func (f *fanout) arm() error {
	want := f.replies.Load() + int64(len(f.ss))
	errs := f.replyErr.Load()
	var wg sync.WaitGroup
	const senders = 4
	var sendErr atomic.Pointer[error]
	for k := 0; k < senders; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < len(f.ss); i += senders {
				f.ss[i].at.Store(0)
				if err := f.send(f.ss[i], proto.OpGetData, &proto.GetDataRequest{Path: fanoutPath, Watch: true}); err != nil {
					sendErr.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	wg.Wait()
	if p := sendErr.Load(); p != nil {
		return *p
	}
	deadline := time.Now().Add(2 * time.Minute)
	for f.replies.Load() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d getData replies within 2 minutes", f.replies.Load()-want+int64(len(f.ss)), len(f.ss))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if e := f.replyErr.Load() - errs; e > 0 {
		return fmt.Errorf("%d getData replies with an error", e)
	}
	return nil
}

// round sets the znode's data once and waits for the notifications.
func (f *fanout) round(ctx context.Context, writer *rawzk.Conn, pid, round int) (fanoutRound, error) {
	var rd fanoutRound
	f.quiet.Store(true)
	defer f.quiet.Store(false)
	time.Sleep(50 * time.Millisecond) // a ping pass under way ends
	f.notified.Store(0)
	cpu0, _ := procCPU(pid)
	self0 := selfCPU()
	start := time.Since(f.base)
	h, err := writer.Call(proto.OpSetData, &proto.SetDataRequest{Path: fanoutPath, Data: []byte(strconv.Itoa(round + 1)), Version: -1}, nil)
	if err != nil || h.Err != proto.ErrOk {
		return rd, fmt.Errorf("setData: %v %v", err, h.Err)
	}
	rd.Reply = time.Since(f.base) - start
	deadline := time.Now().Add(fanoutWait)
	for f.notified.Load() < int64(len(f.ss)) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	cpu1, _ := procCPU(pid)
	rd.ServerCPU, rd.ClientCPU = cpu1-cpu0, selfCPU()-self0
	arr := make([]time.Duration, 0, len(f.ss))
	for _, s := range f.ss {
		if at := s.at.Load(); at != 0 {
			arr = append(arr, time.Duration(at)-start)
		}
	}
	rd.Missing = len(f.ss) - len(arr)
	if len(arr) > 0 {
		slices.Sort(arr)
		rd.Last = arr[len(arr)-1]
		rd.P50 = arr[len(arr)/2]
		rd.P99 = arr[min(len(arr)-1, len(arr)*99/100)]
	}
	// The writer's session gets pinged here: its last request was this
	// setData, and rounds are seconds apart.
	return rd, ctx.Err()
}

func (f *fanout) close() {
	f.mu.Lock()
	ss := f.ss
	f.mu.Unlock()
	for _, s := range ss {
		s.nc.Close()
	}
	f.readers.Wait()
}

// procCPU returns a process's utime+stime (all its threads) from
// /proc/PID/stat, in clock ticks of 10 ms.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc/PID/stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("unexpected /proc/PID/stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fanoutReport is the Markdown section: the times by count and kind of
// round, then the memory.
func fanoutReport(results []fanoutResult, counts []int, o options) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("\n## Watch fan-out\n\n")
	w("`go run ./tools/compare -fanout %s -repeats %d` (tools/compare/fanout.go): a fresh standalone server of each kind per run (ZooKeeper 3.8 with `-Xms%s -Xmx%s`; zkgo durable; forceSync=yes on both), runs alternating which server goes first. ",
		strings.Trim(strings.Join(strings.Fields(fmt.Sprint(counts)), ","), "[]"), o.repeats, o.heap, o.heap)
	w("N watcher sessions (a minimal client on the wire protocol, one goroutine per session, session timeout %v, in this one process on the same cores as the server, dialling from 127.0.0.2 and up) each set a one-shot data watch (getData, watch=true) on one znode; one more session sets its data. ", fanoutTimeout)
	w("Times are from sending the setData to each watcher's receipt of its notification. Each server start runs %d rounds: round 1 on the watches set once, rounds 2–%d each after every watcher set its watch again and 2 s of quiet. ", fanoutRounds, fanoutRounds)
	w("Medians over the runs (min–max); the ratio is ZooKeeper's time ÷ zkgo's (above 1: zkgo faster). CPU: the server's utime+stime over the round (10 ms ticks) and this process's (the watchers).\n\n")
	w("| watchers | rounds | server | last notification | p50 | p99 | missing | setData reply | server CPU | client CPU |\n|--:|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	type key struct {
		n    int
		warm bool
		srv  string
	}
	vals := map[key]map[string][]float64{}
	add := func(k key, name string, v float64) {
		if vals[k] == nil {
			vals[k] = map[string][]float64{}
		}
		vals[k][name] = append(vals[k][name], v)
	}
	var failed []string
	for _, r := range results {
		if r.Err != "" {
			failed = append(failed, fmt.Sprintf("%s, %d watchers, run %d: %s", r.Server, r.Watchers, r.Repeat+1, r.Err))
		}
		for i, rd := range r.Rounds {
			k := key{r.Watchers, i > 0, r.Server}
			add(k, "last", float64(rd.Last)/1e6)
			add(k, "p50", float64(rd.P50)/1e6)
			add(k, "p99", float64(rd.P99)/1e6)
			add(k, "reply", float64(rd.Reply)/1e6)
			add(k, "missing", float64(rd.Missing))
			add(k, "scpu", float64(rd.ServerCPU)/1e6)
			add(k, "ccpu", float64(rd.ClientCPU)/1e6)
		}
	}
	msCell := func(v []float64) string {
		a := aggregate(v)
		if math.IsNaN(a.med) {
			return "—"
		}
		return fmt.Sprintf("%s ms (%s–%s)", ms(a.med), ms(a.lo), ms(a.hi))
	}
	for _, n := range counts {
		for _, warm := range []bool{false, true} {
			label := "1"
			if warm {
				label = fmt.Sprintf("2–%d", fanoutRounds)
			}
			for _, srv := range []string{"zookeeper", "zkgo"} {
				v := vals[key{n, warm, srv}]
				if v == nil {
					continue
				}
				miss := 0.0
				for _, m := range v["missing"] {
					miss += m
				}
				name := "ZooKeeper 3.8"
				if srv == "zkgo" {
					name = "zkgo"
				}
				w("| %s | %s | %s | %s | %s | %s | %.0f | %s | %s | %s |\n", group(float64(n)), label, name,
					msCell(v["last"]), msCell(v["p50"]), msCell(v["p99"]), miss, msCell(v["reply"]), msCell(v["scpu"]), msCell(v["ccpu"]))
			}
			zk, zg := vals[key{n, warm, "zookeeper"}], vals[key{n, warm, "zkgo"}]
			if zk != nil && zg != nil {
				ratio := func(m string) string {
					return fmt.Sprintf("%.1f×", aggregate(zk[m]).med/aggregate(zg[m]).med)
				}
				w("| | | ratio | %s | %s | %s | | | | |\n", ratio("last"), ratio("p50"), ratio("p99"))
			}
		}
	}
	w("\nMemory: the server's RSS before the sessions (with the writer's session and the znode), its growth per session when the N sessions are open, and its further growth per watch when each has set its watch (read 2 s after each step); then the heap in use right after a full GC, which is what the sessions and watches hold: ZooKeeper's Java heap (`jcmd GC.run`, `GC.heap_info`), zkgo's Go HeapAlloc (its AdminServer's `/debug/pprof/heap?gc=1`, on loopback for this). A JVM's RSS grows as far as it touches heap pages, garbage included; zkgo's includes the garbage of the Go heap until it is collected and returned.\n\n")
	w("| watchers | server | RSS before | RSS per session | RSS per watch | heap per session | heap per watch | sessions opened in |\n|--:|---|--:|--:|--:|--:|--:|--:|\n")
	for _, n := range counts {
		for _, srv := range []string{"zookeeper", "zkgo"} {
			var idle, perS, perW, hS, hW, open []float64
			for _, r := range results {
				if r.Server != srv || r.Watchers != n || r.RSSWatches == 0 {
					continue
				}
				idle = append(idle, mib(r.RSSIdle))
				perS = append(perS, float64(r.RSSSessions-r.RSSIdle)/float64(n))
				perW = append(perW, float64(r.RSSWatches-r.RSSSessions)/float64(n))
				if r.HeapWatches > 0 {
					hS = append(hS, float64(r.HeapSessions-r.HeapIdle)/float64(n))
					hW = append(hW, float64(r.HeapWatches-r.HeapSessions)/float64(n))
				}
				open = append(open, r.OpenTook.Seconds())
			}
			if len(idle) == 0 {
				continue
			}
			bytesCell := func(v []float64) string {
				if len(v) == 0 {
					return "—"
				}
				a := aggregate(v)
				return fmt.Sprintf("%s B (%s–%s)", group(a.med), group(a.lo), group(a.hi))
			}
			a := aggregate(idle)
			o := aggregate(open)
			name := "ZooKeeper 3.8"
			if srv == "zkgo" {
				name = "zkgo"
			}
			w("| %s | %s | %.0f MiB (%.0f–%.0f) | %s | %s | %s | %s | %.1f s (%.1f–%.1f) |\n", group(float64(n)), name, a.med, a.lo, a.hi,
				bytesCell(perS), bytesCell(perW), bytesCell(hS), bytesCell(hW), o.med, o.lo, o.hi)
		}
	}
	if len(failed) > 0 {
		w("\nFailed runs:\n\n")
		for _, f := range failed {
			w("- %s\n", f)
		}
	}
	return b.String()
}

// newZkgoPprof is newZkgo with the AdminServer on a loopback port for
// Go's profiler (zkgo.admin.pprof=true; no web console): the heap after a
// GC, and with ZKGO_FANOUT_PPROF=dir a 2 s CPU profile from the start of
// each round and heap profiles with the sessions open and with the
// watches set, written to dir.
func newZkgoPprof(binary, root string) (*server, error) {
	s, err := newZkgo(binary, root)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := s.argv[len(s.argv)-1]
	data, err := os.ReadFile(cfg)
	if err != nil {
		return nil, err
	}
	s.adminAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	admin := fmt.Sprintf("admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=%d\nzkgo.admin.pprof=true\nzkgo.admin.console=false", port)
	data = []byte(strings.Replace(string(data), "admin.enableServer=false", admin, 1))
	return s, os.WriteFile(cfg, data, 0o644)
}

// saveHeapProfile writes zkgo's heap profile (after a GC) to
// $ZKGO_FANOUT_PPROF/fanout-N-runR-heap-at.pprof when that is set;
// "go tool pprof -base" of two of them shows what a step allocated.
func saveHeapProfile(s *server, n, repeat int, at string) {
	dir := os.Getenv("ZKGO_FANOUT_PPROF")
	if dir == "" || s.adminAddr == "" {
		return
	}
	file := filepath.Join(dir, fmt.Sprintf("fanout-%d-run%d-heap-%s.pprof", n, repeat+1, at))
	if err := fetchTo("http://"+s.adminAddr+"/debug/pprof/heap?gc=1", file); err != nil {
		logf("  heap profile: %v", err)
	}
}

// goHeapAlloc returns a zkgo server's HeapAlloc right after a GC, from its
// heap profile's text form (/debug/pprof/heap?gc=1&debug=1).
func goHeapAlloc(adminAddr string) (int64, error) {
	c := http.Client{Timeout: time.Minute}
	resp, err := c.Get("http://" + adminAddr + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, "# HeapAlloc = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no HeapAlloc in %s's heap profile (HTTP %s)", adminAddr, resp.Status)
}

// fetchTo writes the body of a GET of url to file.
func fetchTo(url, file string) error {
	c := http.Client{Timeout: time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
