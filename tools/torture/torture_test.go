package torture

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/zkgo/zkgo/tests/framework/linearize"
)

var (
	tortureSeeds    = flag.String("torture.seeds", "", "comma-separated seeds for TestTorture (default: two fixed ones)")
	tortureDuration = flag.Duration("torture.duration", 52*time.Second, "how long each of TestTorture's runs injects faults")
	tortureKeep     = flag.Bool("torture.keep", false, "keep the runs' directories (data, logs, report.html) and print where")
)

// binary is zkgo built with the fault hooks, once for the package.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "zkgo-torture-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "zkgo")
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-tags", "zkgofaults", "-o", binary, "./cmd/zkgo")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building zkgo with -tags zkgofaults: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func runDir(t *testing.T) string {
	if *tortureKeep {
		d, err := os.MkdirTemp("", "zkgo-torture-")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("run directory: %s", d)
		return d
	}
	return t.TempDir()
}

// TestTorture runs short schedules against three members, every fault
// kind in one of the two default runs, and requires every checker to
// hold (with -torture.seeds, each seed gets every kind). The seeds are fixed (a
// failure replays with -torture.seeds=N, or with zkgo torture -seed N);
// a long soak is zkgo torture -duration 10m.
func TestTorture(t *testing.T) {
	// The two default runs share the fault kinds between them, so that
	// CI sees every kind on every change.
	all := AllKinds()
	seeds := []uint64{1, 7}
	kinds := map[uint64][]Kind{1: all[:7], 7: all[7:]}
	if *tortureSeeds != "" {
		seeds = nil
		for _, s := range strings.Split(*tortureSeeds, ",") {
			var v uint64
			if _, err := fmt.Sscan(s, &v); err != nil {
				t.Fatalf("-torture.seeds: %v", err)
			}
			seeds = append(seeds, v)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), *tortureDuration+4*time.Minute)
			defer cancel()
			dir := runDir(t)
			rep, err := Run(ctx, Config{Binary: binary, Dir: dir, Members: 3, Duration: *tortureDuration, Seed: seed, Kinds: kinds[seed]})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("schedule:\n  %s", strings.Join(rep.Schedule, "\n  "))
			t.Logf("\n%s", rep.Summary())
			if !rep.Passed() {
				for _, r := range rep.Results {
					if !r.OK {
						t.Errorf("%s: %s\n  %s", r.Name, r.Problem, strings.Join(r.Evidence, "\n  "))
					}
				}
				printLogs(t, dir)
			}
			if ks := kinds[seed]; *tortureSeeds == "" {
				for _, k := range ks {
					found := false
					for _, f := range rep.Schedule {
						found = found || strings.HasPrefix(f, k.String()+" ")
					}
					if !found {
						t.Errorf("the schedule has no %v fault: make -torture.duration longer", k)
					}
				}
			}
			if len(rep.Schedule) == 0 || rep.Ops.OK == 0 {
				t.Fatalf("nothing happened: %d faults, %d operations answered", len(rep.Schedule), rep.Ops.OK)
			}
		})
	}
}

// printLogs prints the tail of each member's log.
func printLogs(t *testing.T, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "member*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if len(b) > 8000 {
			b = b[len(b)-8000:]
		}
		t.Logf("--- %s (tail) ---\n%s", filepath.Base(l), b)
	}
}

// TestCheckersCatchBrokenRuns: with workloads that misbehave on purpose (a
// lock holder that ignores the fence, a forged read, replies recorded out
// of order), the run fails, and on the checkers that exist for it.
func TestCheckersCatchBrokenRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := runDir(t)
	kinds, _ := ParseKinds("delay")
	rep, err := Run(ctx, Config{Binary: binary, Dir: dir, Members: 3, Duration: 8 * time.Second, Seed: 1, Kinds: kinds, Break: "fence,read,fifo"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep.Summary())
	failed := map[string]bool{}
	for _, r := range rep.Results {
		if !r.OK {
			failed[r.Name] = true
		}
	}
	for _, want := range []string{"locks", "registers", "sessions"} {
		if !failed[want] {
			t.Errorf("the %s checker did not catch the broken workload", want)
		}
	}
	if rep.Passed() {
		t.Error("a run with broken workloads passed")
	}
}

var recheck = flag.String("torture.recheck", "", "a run directory: TestRecheckRegisters checks its registers.jsonl again, one znode at a time")

// TestRecheckRegisters checks a saved register history again, one path at
// a time with a time limit each, to find which path a failing run's
// history is not linearizable on (skipped without -torture.recheck).
func TestRecheckRegisters(t *testing.T) {
	if *recheck == "" {
		t.Skip("no -torture.recheck directory")
	}
	h, err := readRegisters(filepath.Join(*recheck, "registers.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string][]porcupine.Operation{}
	for _, op := range h {
		k := op.Input.(linearize.Input).Key
		byKey[k] = append(byKey[k], op)
	}
	for k, ops := range byKey {
		start := time.Now()
		res := linearize.Check(ops, 30*time.Second)
		t.Logf("%s: %d operations: %v in %v", k, len(ops), res, time.Since(start).Round(time.Millisecond))
	}
}
