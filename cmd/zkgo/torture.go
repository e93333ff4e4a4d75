package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/torture"
)

// runTorture is "zkgo torture": a schedule of faults against a local
// ensemble of this binary's servers, with the clients' histories checked.
func runTorture(args []string) int {
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	members := fs.Int("members", 3, "ensemble size (3 or 5)")
	duration := fs.Duration("duration", time.Minute, "how long faults are injected (the clients run through it and a short quiet phase after)")
	seed := fs.Uint64("seed", 0, "the schedule's seed (0: a random one, printed); the same seed replays the same faults at the same times")
	kinds := fs.String("faults", "all", "comma-separated fault kinds, or all: "+faultKindNames())
	out := fs.String("out", "", "directory for the members' data and logs and the report (default: a new temporary directory)")
	sessionTimeout := fs.Duration("session-timeout", 3*time.Second, "the clients' session timeout")
	verbose := fs.Bool("v", false, "log each fault and recovery as it happens")
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

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
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
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := torture.Run(ctx, torture.Config{
		Binary: bin, Dir: dir, Members: *members, Duration: *duration, Seed: *seed,
		Kinds: ks, SessionTimeout: *sessionTimeout, Logger: log,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo torture: %v\n", err)
		if rep == nil {
			return 2
		}
	}
	fmt.Print(rep.Summary())
	fmt.Printf("report: %s\n", filepath.Join(dir, "report.html"))
	if !rep.Passed() {
		return 1
	}
	return 0
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
