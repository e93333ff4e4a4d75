package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/storage"
	"github.com/zkgo/zkgo/zk"
)

var rebuildMiB = flag.Int("rebuild.mib", 0, "TestRebuildLargeMember: MiB of znode data (0: 288 MiB, the CI size, past the 256 MiB the issue asks for; docs/BENCHMARKS.md uses 1024)")

// TestRebuildLargeMember: three zoo.cfg processes hold a tree of
// -rebuild.mib MiB of znode data (100 KB znodes); a follower is killed,
// its data directory emptied, and it is started again. It rejoins under a
// new raft identity and receives the tree as a streamed snapshot, while a
// client keeps writing to the leader. The test prints the rebuild time,
// the writer's latencies meanwhile and the members' peak RSS.
func TestRebuildLargeMember(t *testing.T) {
	mib := *rebuildMiB
	if mib == 0 {
		mib = 288
	}
	const n = 3
	cfgs, _ := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\nsnapCount=2000\njute.maxbuffer=2097152\n")
	m := newMemberProcs(t, cfgs)
	procs, start := m.procs, m.start
	for i := range n {
		start(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	mntr := func(i int, key string) string { return mntrKey(ctx, procs[i].addr, key) }
	lead := -1
	for lead < 0 {
		for i := range n {
			if mntr(i, "zk_server_state") == "leader" {
				lead = i
			}
		}
		if ctx.Err() != nil {
			t.Fatal("no leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fillTree(ctx, t, procs[lead].addr, mib)
	r := rebuildMember(ctx, t, m, cfgs, lead, (lead+1)%n, n)
	t.Logf("%s", r.String(mib))
}

// fillTree creates mib MiB of 100 KB znodes (/n0000000, …) through the
// member at addr, from 8 sessions.
func fillTree(ctx context.Context, t *testing.T, addr string, mib int) {
	t.Helper()
	const size = 100 << 10
	count := mib << 20 / size
	loadStart := time.Now()
	createParallel(ctx, t, addr, "/n", count, make([]byte, size))
	t.Logf("loaded %d znodes of %d KB (%d MiB) in %v", count, size>>10, mib, time.Since(loadStart).Round(time.Millisecond))
}

// createParallel creates count znodes prefix0000000, … holding data
// through the member at addr, from 8 sessions.
func createParallel(ctx context.Context, t *testing.T, addr, prefix string, count int, data []byte) {
	t.Helper()
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := zk.Connect(ctx, addr)
			if err != nil {
				errc <- err
				return
			}
			defer c.Close()
			for k := w; k < count; k += 8 {
				if _, err := c.Create(ctx, fmt.Sprintf("%s%07d", prefix, k), data, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}

// rebuild holds the figures of a member rebuilt from an empty disk.
type rebuild struct {
	member             int // 1-based
	znodes             string
	took               time.Duration
	writes             int
	p50, p99, maxLat   time.Duration
	rssLeader, rssNode int // peak RSS, MiB
}

func (r rebuild) String(mib int) string {
	return fmt.Sprintf("rebuilt member %d (%d MiB, %s znodes) in %v; leader setData during it: %d writes, p50 %v p99 %v max %v; peak RSS leader %d MiB, rebuilt member %d MiB",
		r.member, mib, r.znodes, r.took.Round(time.Millisecond), r.writes, r.p50, r.p99, r.maxLat, r.rssLeader, r.rssNode)
}

// rebuildMember kills follower f, empties its data directory and starts
// it again while a client keeps setting a znode on leader lead, and waits
// until f holds the leader's znodes and the leader counts voters-1 synced
// followers among voters voters.
func rebuildMember(ctx context.Context, t *testing.T, m *memberProcs, cfgs []string, lead, f, voters int) rebuild {
	t.Helper()
	procs := m.procs
	mntr := func(i int, key string) string { return mntrKey(ctx, procs[i].addr, key) }
	procs[f].kill()
	if err := os.RemoveAll(filepath.Join(filepath.Dir(cfgs[f]), "zkgo")); err != nil {
		t.Fatal(err)
	}
	w, err := zk.Connect(ctx, procs[lead].addr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Create(ctx, "/rebuild-w", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	stopW := make(chan struct{})
	var lat []time.Duration
	wdone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stopW:
				wdone <- nil
				return
			default:
			}
			s := time.Now()
			if _, err := w.Set(ctx, "/rebuild-w", []byte("x"), -1); err != nil && !errors.Is(err, zk.ErrConnectionLoss) {
				wdone <- err
				return
			}
			lat = append(lat, time.Since(s))
		}
	}()
	want := mntr(lead, "zk_znode_count") // the writer only sets /rebuild-w from now on
	rebuildStart := time.Now()
	lastLog := time.Now()
	m.start(f)
	for mntr(f, "zk_znode_count") != want || mntr(f, "zkgo_raft_voters") != fmt.Sprint(voters) || mntr(lead, "zk_synced_followers") != fmt.Sprint(voters-1) {
		if ctx.Err() != nil {
			t.Fatalf("member %d not rebuilt: %s of %s znodes", f+1, mntr(f, "zk_znode_count"), want)
		}
		if time.Since(lastLog) > 5*time.Second {
			lastLog = time.Now()
			t.Logf("waiting: member %d has %s of %s znodes, voters %s; leader's synced followers %s",
				f+1, mntr(f, "zk_znode_count"), want, mntr(f, "zkgo_raft_voters"), mntr(lead, "zk_synced_followers"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(rebuildStart)
	close(stopW)
	if err := <-wdone; err != nil {
		t.Fatal(err)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(float64(len(lat)-1)*p)] }
	return rebuild{member: f + 1, znodes: want, took: took, writes: len(lat), p50: pct(0.5), p99: pct(0.99), maxLat: lat[len(lat)-1],
		rssLeader: peakRSSMiB(procs[lead].pid), rssNode: peakRSSMiB(procs[f].pid)}
}

// peakRSSMiB reads a process's peak resident set (VmHWM) in MiB.
func peakRSSMiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb >> 10
		}
	}
	return -1
}

// TestRebuildResumesSnapshot: a member that was down while the tree grew
// needs it as a snapshot; it is killed while the snapshot streams in, and
// started again. The stream resumes where the partial file ends instead
// of starting over: the member's log says at which byte, and the member
// ends with the tree.
func TestRebuildResumesSnapshot(t *testing.T) {
	const n, mib = 3, 48
	// A small snapCount, and more entries than the leader keeps behind a
	// snapshot (storage.DefaultCatchUpEntries): the log is compacted past
	// what the stopped member holds, so it needs a snapshot.
	cfgs, _ := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\nsnapCount=100\njute.maxbuffer=2097152\n")
	m := newMemberProcs(t, cfgs)
	for i := range n {
		m.start(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mntr := func(i int, key string) string { return mntrKey(ctx, m.procs[i].addr, key) }
	lead := waitLeader(ctx, t, m)
	f := (lead + 1) % n
	m.procs[f].kill()
	fillTree(ctx, t, m.procs[lead].addr, mib)
	createParallel(ctx, t, m.procs[lead].addr, "/m", storage.DefaultCatchUpEntries+500, nil)
	want := mntr(lead, "zk_znode_count")
	dataDir := filepath.Join(filepath.Dir(cfgs[f]), "zkgo")
	// Kill the member while the snapshot streams in. The stream takes
	// tens of milliseconds on loopback: the leader is held (SIGSTOP)
	// while the member starts so that the stream begins while the
	// partial file is watched closely. Try again if the stream ended
	// before the kill (with more entries, so that the member needs a
	// snapshot again), or if it was of a snapshot the leader has
	// replaced since (a deferred one).
	for attempt := 1; ; attempt++ {
		if attempt > 5 {
			t.Fatal("in five attempts, the snapshot stream always ended before the member was killed, or the leader had a newer snapshot to send by its restart")
		}
		// A partial file from an earlier attempt is of a snapshot the
		// leader no longer sends: without it, the size watched below
		// is the new stream's.
		removePartialSnapshots(t, dataDir)
		syscall.Kill(m.procs[lead].pid, syscall.SIGSTOP)
		m.start(f)
		syscall.Kill(m.procs[lead].pid, syscall.SIGCONT)
		whole := false
		for i := 0; ; i++ {
			if _, n := partialSnapshot(dataDir); n >= 4<<20 {
				break
			}
			if ctx.Err() != nil {
				t.Fatal("no snapshot stream")
			}
			if i%100 == 99 && mntr(f, "zk_znode_count") == want {
				whole = true
				break
			}
		}
		m.procs[f].kill()
		// again makes the member need a snapshot once more: it missed
		// more entries than the leader keeps.
		again := func(why string, args ...any) {
			t.Logf(why+": again", args...)
			lead = waitLeader(ctx, t, m)
			createParallel(ctx, t, m.procs[lead].addr, fmt.Sprintf("/m%d-", attempt), storage.DefaultCatchUpEntries+500, nil)
			want = mntr(lead, "zk_znode_count")
		}
		if whole {
			again("the member took the whole snapshot before it was killed")
			continue
		}
		index, held := partialSnapshot(dataDir)
		lead = waitLeader(ctx, t, m)
		if leaderSnap := mntr(lead, "zkgo_raft_snapshot_index"); fmt.Sprint(index) != leaderSnap {
			t.Logf("the partial snapshot is of index %d, the leader's newest %s: again", index, leaderSnap)
			continue
		}
		killedLog := m.procs[f].log.String()
		t.Logf("killed member %d holding %d bytes of the snapshot of index %d", f+1, held, index)
		m.start(f)
		for mntr(f, "zk_znode_count") != want || mntr(lead, "zk_synced_followers") != fmt.Sprint(n-1) {
			if ctx.Err() != nil {
				t.Fatalf("member %d not rebuilt: %s of %s znodes", f+1, mntr(f, "zk_znode_count"), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
		after := m.procs[f].log.String()
		if line := resumedRE.FindString(after); line != "" {
			t.Logf("member %d: %s", f+1, line)
			return
		}
		// The leader may have replaced that snapshot meanwhile (a
		// deferred one, taken once the writes stopped): a partial file
		// of another snapshot cannot be resumed.
		if got := receivedRE.FindStringSubmatch(after); got != nil && got[1] != fmt.Sprint(index) {
			m.procs[f].kill()
			again("the leader sent snapshot %s, newer than the partial one of %d", got[1], index)
			continue
		}
		t.Fatalf("member %d took the snapshot without resuming; its log before the kill:\n%s\nand after:\n%s", f+1, killedLog, after)
	}
}

var (
	resumedRE  = regexp.MustCompile(`received snapshot.*resumed_at=[1-9][0-9]*.*`)
	receivedRE = regexp.MustCompile(`received snapshot.* index=([0-9]+) `)
)

// partialSnapshot returns the index and size of the partial snapshot file
// under dir (0, 0: none). Its name is <index hex>-<term hex>.snap.partial.
func partialSnapshot(dir string) (index uint64, size int64) {
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".snap.partial") {
			if fi, err := d.Info(); err == nil {
				size = fi.Size()
				index, _ = strconv.ParseUint(strings.SplitN(d.Name(), "-", 2)[0], 16, 64)
			}
		}
		return nil
	})
	return index, size
}

// removePartialSnapshots deletes the partial snapshot files under dir.
func removePartialSnapshots(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".snap.partial") {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
}

// waitLeader returns the index of the member mntr calls the leader.
func waitLeader(ctx context.Context, t *testing.T, m *memberProcs) int {
	t.Helper()
	for {
		for i := range m.procs {
			if mntrKey(ctx, m.procs[i].addr, "zk_server_state") == "leader" {
				return i
			}
		}
		if ctx.Err() != nil {
			t.Fatal("no leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
