package storage

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// The kill -9 test re-executes the test binary as a child that appends to a
// data directory and prints "ack N" after each Save returns; the parent
// kills it with SIGKILL at a random moment and checks that everything
// acknowledged survived. Run a failing seed again with -crash.seed.
var (
	crashSeed  = flag.Uint64("crash.seed", 0, "seed for TestCrashKill9 (0 picks one from the clock)")
	crashIters = flag.Int("crash.iters", 10, "directories TestCrashKill9 crashes (three kills each)")
)

const (
	crashDirEnv  = "ZKGO_STORAGE_CRASH_DIR"
	crashSeedEnv = "ZKGO_STORAGE_CRASH_SEED"
	crashSnapGap = 37 // the child snapshots every crashSnapGap entries
)

// crashSize is the payload size of entry i in the kill -9 test.
func crashSize(i uint64) int { return 1 + int(i*7919%1800) }

func crashSnapData(i uint64) []byte { return fmt.Appendf(nil, "snap@%d", i) }

// crashChild is the child process: it appends batches of 1–8 entries with
// fsync, acknowledges each on stdout once Save returned, and snapshots now
// and then, until it is killed.
func crashChild() {
	dir := os.Getenv(crashDirEnv)
	seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 7))
	s, err := Open(dir, Options{SnapRetain: 2, CatchUpEntries: 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: Open:", err)
		os.Exit(2)
	}
	last := s.Recovered().LastIndex
	if s.Recovered().Repaired {
		os.Stdout.WriteString("repaired\n")
	}
	cs := raftpb.ConfState{Voters: []uint64{1}}
	for last < 1e6 {
		n := 1 + uint64(rng.IntN(8))
		ents := make([]raftpb.Entry, 0, n)
		for i := last + 1; i <= last+n; i++ {
			ents = append(ents, raftpb.Entry{Term: 1, Index: i, Data: entryData(i, crashSize(i))})
		}
		if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: last + n}, ents); err != nil {
			fmt.Fprintln(os.Stderr, "child: Save:", err)
			os.Exit(2)
		}
		prev := last
		last += n
		// One write(2) per line: a pipe write this small is atomic.
		if _, err := os.Stdout.WriteString("ack " + strconv.FormatUint(last, 10) + "\n"); err != nil {
			os.Exit(3)
		}
		if last/crashSnapGap > prev/crashSnapGap {
			if err := s.CreateSnapshot(last, &cs, crashSnapData(last)); err != nil {
				fmt.Fprintln(os.Stderr, "child: CreateSnapshot:", err)
				os.Exit(2)
			}
		}
	}
	os.Exit(0)
}

func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./storage -run TestCrashKill9 -crash.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	repairs := 0
	defer func() { t.Logf("%d of %d restarts repaired a torn tail", repairs, 2**crashIters) }()
	for it := range *crashIters {
		dir := t.TempDir()
		var acked uint64
		for round := range 3 {
			target := 1 + rng.IntN(1000)
			childSeed := rng.Uint64()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashSeedEnv+"="+strconv.FormatUint(childSeed, 10))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(out)
			seen := 0
			readAck := func() bool {
				line, err := br.ReadString('\n')
				if err != nil {
					return false // EOF, or a fragment without newline: not an acknowledgement
				}
				if line == "repaired\n" {
					repairs++
					return true // not an acknowledgement
				}
				n, perr := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(line), "ack "), 10, 64)
				if perr != nil {
					t.Fatalf("iteration %d round %d: bad line %q", it, round, line)
				}
				acked = max(acked, n)
				seen++
				return true
			}
			for seen < target && readAck() {
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			// Lines already in the pipe were printed after Save returned:
			// they are acknowledged too.
			for readAck() {
			}
			io.Copy(io.Discard, out)
			cmd.Wait()
			if seen < target {
				t.Fatalf("iteration %d round %d: child stopped after %d acks: %s", it, round, seen, stderr.String())
			}
			verifyCrashDir(t, dir, acked, fmt.Sprintf("seed %d iteration %d round %d", seed, it, round))
		}
	}
}

func verifyCrashDir(t *testing.T, dir string, acked uint64, where string) {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("%s: Open after kill: %v", where, err)
	}
	defer s.Close()
	rec := s.Recovered()
	if rec.LastIndex < acked || rec.HardState.Commit < acked {
		t.Fatalf("%s: acknowledged up to %d, recovered last index %d commit %d", where, acked, rec.LastIndex, rec.HardState.Commit)
	}
	si := rec.Snapshot.Metadata.Index
	if si > 0 && !bytes.Equal(recoveredData(t, s), crashSnapData(si)) {
		t.Fatalf("%s: snapshot %d has data %q", where, si, recoveredData(t, s))
	}
	if si+1 <= rec.LastIndex {
		ents, err := s.RaftStorage().Entries(si+1, rec.LastIndex+1, ^uint64(0))
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		for k, e := range ents {
			i := si + 1 + uint64(k)
			if e.Index != i || !bytes.Equal(e.Data, entryData(i, crashSize(i))) {
				t.Fatalf("%s: entry %d is wrong (index %d, %d bytes)", where, i, e.Index, len(e.Data))
			}
		}
	}
}
