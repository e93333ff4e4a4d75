package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/cmd/zkgo/internal/tlsflags"
	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/internal/boundedfile"
)

// runTop is "zkgo top": the numbers of the metrics and the web console,
// one row per member, polled with mntr on each member's client port
// (zkgo's and Apache ZooKeeper's, where mntr is whitelisted) and redrawn
// every interval. Formatting and the pure parts are in top_table.go.
func runTop(args []string) int {
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	servers := fs.String("server", "127.0.0.1:2181", "the members' client addresses: a connect string, `host:port,...` (a chroot is ignored)")
	cfgPath := fs.String("config", "", "a member's `zoo.cfg`: watch every member of its server.N lines (their client addresses; clientPort where a line has none), or the standalone server it describes (instead of -server)")
	interval := fs.Duration("interval", 2*time.Second, "time between refreshes, and what rates are computed over")
	timeout := fs.Duration("timeout", 2*time.Second, "time allowed to each member's connection and answer")
	once := fs.Bool("once", false, "print one snapshot and exit (polls twice, -interval apart, for the rates; -interval 0: once, without rates)")
	count := fs.Int("n", 0, "stop after `N` refreshes; 0: until interrupted (default: 0 on a terminal, else one snapshot as -once)")
	tlsFlags := tlsflags.AddClientFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: zkgo top [flags]

A terminal view of the numbers of the metrics and the web console, one row
per member: its role (or "unreachable: ERROR": a member that does not
answer never stops the view), znodes, sessions, connections, watches,
outstanding requests, packets received and sent per second (REQ/S,
SENT/S), average and maximum latency in ms (LATENCY), raft term, applied
index and how far it lags the highest applied index of the members
(LAG), and the approximate data size. The header has the time, the
leader and how many members answered.

The numbers come from the mntr four-letter word on each member's client
port: it must be in 4lw.commands.whitelist. Apache ZooKeeper members
work too; what their mntr lacks (zkgo's raft numbers) prints as "-".
Rates are the difference between two polls: the first screen has none.

On a terminal the view is redrawn every -interval until Ctrl-C (or -n
refreshes). With -once, or when stdout is not a terminal and -n is not
given, it prints one snapshot and exits: it polls twice, -interval
apart, to compute the rates (with -interval 0 it polls once, without
rates). The exit status is 0, or 1 if no member answered the last poll.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 0); err != nil {
		return flagExit(err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if fs.NArg() != 0 || *count < 0 || *timeout <= 0 || *interval < 0 {
		fs.Usage()
		return 2
	}
	if set["server"] && set["config"] {
		fmt.Fprintln(os.Stderr, "zkgo top: -server and -config exclude each other")
		return 2
	}
	addrs, err := topTargets(*servers, *cfgPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo top: %v\n", err)
		return 2
	}
	tlsCfg, ok := clientTLS("top", tlsFlags)
	if !ok {
		return 2
	}
	t := &topView{addrs: addrs, tls: tlsCfg, interval: *interval, timeout: *timeout, out: os.Stdout, redraw: isTerminal(os.Stdout)}
	switch {
	case *once || (!t.redraw && !set["n"]):
		t.once = true
	case *count > 0:
		t.frames = *count
	}
	if !t.once && *interval == 0 {
		fmt.Fprintln(os.Stderr, "zkgo top: -interval 0 goes only with -once")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return t.run(ctx)
}

// topTargets returns the client addresses to poll: those of cfgPath's
// members if it is set, else those of the connect string servers.
func topTargets(servers, cfgPath string) ([]string, error) {
	if cfgPath == "" {
		s, _, _ := strings.Cut(servers, "/") // a chroot
		var addrs []string
		for _, h := range strings.Split(s, ",") {
			if h = strings.TrimSpace(h); h == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(h); err != nil {
				h = net.JoinHostPort(strings.Trim(h, "[]"), strconv.Itoa(config.DefaultClientPort))
			}
			addrs = append(addrs, h)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("no address in -server %q", servers)
		}
		return addrs, nil
	}
	cfg, err := membersConfig(cfgPath)
	if err != nil {
		return nil, err
	}
	return configClientAddrs(cfg)
}

// membersConfig reads the zoo.cfg at path, and the dynamic configuration
// file it names, for the members' addresses only: unlike config.Load it
// needs no myid (nor the member's data directory) on this machine.
func membersConfig(path string) (*config.Config, error) {
	data, err := boundedfile.ReadFile(path, "configuration file", config.MaxConfigFileSize)
	if err != nil {
		return nil, err
	}
	cfg, _, err := config.Parse(bytes.NewReader(data), path)
	if err != nil || cfg.DynamicConfigFile == "" {
		return cfg, err
	}
	dyn := cfg.DynamicConfigFile
	if !filepath.IsAbs(dyn) {
		dyn = filepath.Join(filepath.Dir(path), dyn)
	}
	if data, err = boundedfile.ReadFile(dyn, "dynamic configuration file", config.MaxConfigFileSize); err != nil {
		return nil, fmt.Errorf("dynamicConfigFile: %w", err)
	}
	cfg.Servers = nil
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "server.") {
			sv, err := config.ParseServerLine(l)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", dyn, err)
			}
			cfg.Servers = append(cfg.Servers, sv)
		}
	}
	return cfg, nil
}

// configClientAddrs returns the client addresses of cfg's members (a
// wildcard address stands for the member's host), or of the standalone
// server it describes (a wildcard is the loopback address).
func configClientAddrs(cfg *config.Config) ([]string, error) {
	connectable := func(host, fallback string, port int) string {
		if host == "" || net.ParseIP(host).IsUnspecified() {
			host = fallback
		}
		return net.JoinHostPort(host, strconv.Itoa(port))
	}
	var addrs []string
	for _, sv := range cfg.Servers {
		switch {
		case sv.ClientPort != 0:
			addrs = append(addrs, connectable(sv.ClientAddr, sv.Host, sv.ClientPort))
		case cfg.ClientPort != 0: // a static configuration: every member on clientPort
			addrs = append(addrs, connectable("", sv.Host, cfg.ClientPort))
		default:
			return nil, fmt.Errorf("server.%d has no client port, and there is no clientPort", sv.ID)
		}
	}
	if len(cfg.Servers) == 0 {
		if cfg.ClientPort == 0 {
			return nil, fmt.Errorf("no clientPort (only a TLS port: use -server with the TLS flags)")
		}
		addrs = append(addrs, connectable(cfg.ClientPortAddress, "127.0.0.1", cfg.ClientPort))
	}
	return addrs, nil
}

// topView polls the members and draws what they answered.
type topView struct {
	addrs             []string
	tls               *tls.Config
	interval, timeout time.Duration
	out               io.Writer
	redraw            bool // clear the screen before each snapshot (a terminal)
	once              bool // one snapshot, with rates if interval > 0
	frames            int  // stop after this many snapshots, 0 for none
}

// run polls and draws until ctx ends or the snapshots are all drawn, and
// returns the exit status.
func (t *topView) run(ctx context.Context) int {
	prev := map[string]mntrSample{}
	cur := t.poll(ctx)
	if ctx.Err() != nil {
		return 0 // interrupted: a clean exit
	}
	if t.once && t.interval > 0 && !t.wait(ctx) {
		// A second poll for the rates (interrupted: the first, without).
		if next := t.poll(ctx); ctx.Err() == nil {
			for _, s := range cur {
				prev[s.addr] = s
			}
			cur = next
		}
	}
	for drawn := 1; ; drawn++ {
		var b bytes.Buffer
		switch {
		case t.redraw:
			b.WriteString("\x1b[H\x1b[2J") // home, clear the screen
		case drawn > 1:
			b.WriteString("\n") // snapshots one after another
		}
		answered := renderTop(&b, time.Now(), cur, prev)
		t.out.Write(b.Bytes())
		if t.once || (t.frames > 0 && drawn >= t.frames) {
			if answered == 0 {
				return 1
			}
			return 0
		}
		if t.wait(ctx) {
			return 0 // interrupted: a clean exit
		}
		for _, s := range cur {
			prev[s.addr] = s
		}
		cur = t.poll(ctx)
		if ctx.Err() != nil {
			return 0
		}
	}
}

// wait sleeps for the interval and reports whether ctx ended first.
func (t *topView) wait(ctx context.Context) bool {
	tm := time.NewTimer(t.interval)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-tm.C:
		return false
	}
}

// poll asks every member for mntr at once and returns their answers in
// the order of t.addrs.
func (t *topView) poll(ctx context.Context) []mntrSample {
	out := make([]mntrSample, len(t.addrs))
	var wg sync.WaitGroup
	for i, a := range t.addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = t.pollMember(ctx, a)
		}()
	}
	wg.Wait()
	return out
}

// maxMntrBytes bounds an mntr answer; zkgo's is about 1.5 KiB.
const maxMntrBytes = 1 << 20

// pollMember sends mntr to the member at addr, within t.timeout.
func (t *topView) pollMember(ctx context.Context, addr string) mntrSample {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	s := mntrSample{addr: addr}
	nc, err := dialFourLW(ctx, addr, t.tls)
	if err != nil {
		s.err = err
		return s
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := io.WriteString(nc, "mntr"); err != nil {
		s.err = err
		return s
	}
	b, err := io.ReadAll(io.LimitReader(nc, maxMntrBytes+1))
	s.at = time.Now()
	if err != nil {
		s.err = err
		return s
	}
	if len(b) > maxMntrBytes {
		// Keep the whole lines only: a cut number would be a wrong one.
		b = b[:bytes.LastIndexByte(b[:maxMntrBytes], '\n')+1]
	}
	s.vals, s.err = parseMntr(string(b))
	return s
}
