package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/tools/torture"
)

// runTorture is "zkgo torture": a schedule of faults against a local
// ensemble of this binary's servers, with the clients' histories checked.
func runTorture(args []string) int {
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	members := fs.Int("members", 3, "ensemble size (3 or 5)")
	duration := fs.Duration("duration", time.Minute, "how long faults are injected (the clients run through it and a short quiet phase after)")
	seed := fs.Uint64("seed", 0, "the schedule's seed (0: a random one, printed); the same seed replays the same faults at the same times")
	runs := fs.Int("runs", 1, "runs one after another, with seeds seed, seed+1, ... (each in its own directory under -out), and a summary of all at the end")
	kinds := fs.String("faults", "all", "comma-separated fault kinds, or all: "+faultKindNames())
	out := fs.String("out", "", "directory for the members' data and logs and the report (default: a new temporary directory)")
	sessionTimeout := fs.Duration("session-timeout", 3*time.Second, "the clients' session timeout")
	verbose := fs.Bool("v", false, "log each fault and recovery as it happens")
	debug := fs.Bool("debug", false, "with -v, also log the clients' failed lock operations")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, `Usage: zkgo torture [flags]

Starts an ensemble of this binary's servers on 127.0.0.1 with a proxy on
every peer and client link, runs clients (registers, sequential nodes,
ephemerals, a recursive watch, locks with fencing, leader latches) while a
seeded schedule partitions, delays, drops, pauses (SIGSTOP), kills and
fails the disks of members, then checks every guarantee over the recorded
histories and writes report.html. Exit status 0: every checker held; 1: a
checker failed; 2: the run could not be carried out.

The binary must be built with the fault hooks:
  go run -tags zkgofaults ./cmd/zkgo torture -duration 10m
  go run -tags zkgofaults ./cmd/zkgo torture -runs 10 -duration 10m -out soak

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 0); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if !faultHooks {
		fmt.Fprintln(os.Stderr, "zkgo torture: this binary was built without the fault hooks; build or run it with -tags zkgofaults:\n  go run -tags zkgofaults ./cmd/zkgo torture")
		return 2
	}
	if *members != 3 && *members != 5 {
		fmt.Fprintln(os.Stderr, "zkgo torture: -members must be 3 or 5")
		return 2
	}
	ks, err := torture.ParseKinds(*kinds)
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo torture: -faults: %v\n", err)
		return 2
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo torture: %v\n", err)
		return 2
	}
	dir := *out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "zkgo-torture-"); err != nil {
			fmt.Fprintf(os.Stderr, "zkgo torture: %v\n", err)
			return 2
		}
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
		if *debug {
			level = slog.LevelDebug
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *runs < 1 {
		*runs = 1
	}
	first := *seed
	if first == 0 {
		first = rand.Uint64N(1 << 32)
	}
	code := 0
	var summary []string
	for i := 0; i < *runs && ctx.Err() == nil; i++ {
		s := first + uint64(i)
		runDir := dir
		if *runs > 1 {
			runDir = filepath.Join(dir, fmt.Sprintf("seed-%d", s))
		}
		rep, err := torture.Run(ctx, torture.Config{
			Binary: bin, Dir: runDir, Members: *members, Duration: *duration, Seed: s,
			Kinds: ks, SessionTimeout: *sessionTimeout, Logger: log,
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "zkgo torture: seed %d: %v\n", s, err)
			if rep == nil {
				summary = append(summary, fmt.Sprintf("seed %d: not carried out: %v", s, err))
				code = max(code, 2)
				continue
			}
		}
		fmt.Print(rep.Summary())
		fmt.Printf("report: %s\n", filepath.Join(runDir, "report.html"))
		line := strings.SplitN(rep.Summary(), "\n", 2)[0]
		summary = append(summary, line)
		if !rep.Passed() {
			code = max(code, 1)
		}
	}
	if *runs > 1 {
		fmt.Printf("\n%d runs:\n  %s\n", len(summary), strings.Join(summary, "\n  "))
	}
	if code == 2 && len(summary) > 1 {
		code = 1
	}
	return code
}

func faultKindNames() string {
	var s string
	for i, k := range torture.AllKinds() {
		if i > 0 {
			s += ", "
		}
		s += k.String()
	}
	return s
}
