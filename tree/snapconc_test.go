package tree

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
)

var (
	concSeed   = flag.Uint64("snapconc.seed", 0, "seed for TestSnapshotWhileApplying (0: pick one and log it)")
	concRounds = flag.Int("snapconc.rounds", 60, "snapshots TestSnapshotWhileApplying takes")
)

// concGen adds to randGen's transactions (a few paths, colliding often)
// creates, deletes and setData under /big, a parent with up to 200
// children (a hashed children table), so that snapshots meet both.
type concGen struct {
	*randGen
	zxid int64
}

func (g *concGen) txn() *Txn {
	if g.rng.IntN(2) == 0 {
		return g.next()
	}
	g.now += int64(g.rng.IntN(40))
	txn := &Txn{Time: g.now}
	p := fmt.Sprintf("/big/n%03d", g.rng.IntN(200))
	switch g.rng.IntN(4) {
	case 0, 1:
		txn.Op, txn.Req = proto.OpCreate, &proto.CreateRequest{Path: p, Data: g.data(), ACL: openACL}
	case 2:
		txn.Op, txn.Req = proto.OpDelete, &proto.DeleteRequest{Path: p, Version: -1}
	default:
		txn.Op, txn.Req = proto.OpSetData, &proto.SetDataRequest{Path: p, Data: g.data(), Version: -1}
	}
	return txn
}

func (g *concGen) apply(t *Tree) {
	if g.rng.IntN(50) == 0 {
		t.SetConfigData(g.data())
		return
	}
	g.zxid++
	t.Apply(g.zxid, g.txn())
}

// stepLocker is a read lock that first lets step run (which changes the
// tree): the snapshot's writer then meets changes between any two nodes,
// in an order the seed replays.
type stepLocker struct {
	mu   *sync.RWMutex
	step func()
}

func (l stepLocker) Lock()   { l.step(); l.mu.RLock() }
func (l stepLocker) Unlock() { l.mu.RUnlock() }

// TestSnapshotWhileApplying checks that a snapshot begun with BeginSnapshot
// and written while transactions are applied holds exactly the tree at its
// start: the same bytes WriteSnapshot gave then. The first rounds apply 0–3
// random transactions before each node the writer reads (deterministic for
// a seed); the last rounds apply from another goroutine, under a
// read/write lock as the server does (for the race detector).
func TestSnapshotWhileApplying(t *testing.T) {
	seed := *concSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with go test ./tree -run TestSnapshotWhileApplying -snapconc.seed=%d)", seed, seed)
	a := New()
	a.SetOptions(snapOpts)
	g := &concGen{randGen: &randGen{rng: rand.New(rand.NewPCG(seed, seed^0xc0c0)), tree: a, now: 1_000_000, auth: map[int64][]proto.Id{
		1: {{Scheme: "digest", ID: acl.DigestID("u1", "p")}},
		2: {{Scheme: "digest", ID: acl.DigestID("u2", "p")}},
	}}}
	g.zxid++
	if r := a.Apply(g.zxid, &Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/big", ACL: openACL}}); r.Err != proto.ErrOk {
		t.Fatalf("create /big: %v", r.Err)
	}
	for i := 0; i < 600; i++ {
		g.apply(a)
	}
	var mu sync.RWMutex
	rounds := *concRounds
	for round := 0; round < rounds; round++ {
		want := writeSnap(t, a)
		sn, err := a.BeginSnapshot()
		if err != nil {
			t.Fatalf("round %d: BeginSnapshot: %v", round, err)
		}
		if _, err := a.BeginSnapshot(); !errors.Is(err, ErrSnapshotInProgress) {
			t.Fatalf("round %d: a second BeginSnapshot gave %v, want ErrSnapshotInProgress", round, err)
		}
		var buf bytes.Buffer
		concurrent := round >= rounds-rounds/4
		if !concurrent {
			err = sn.Write(&buf, stepLocker{&mu, func() {
				for k := g.rng.IntN(4); k > 0; k-- {
					g.apply(a)
				}
			}})
		} else {
			stop := make(chan struct{})
			applied := make(chan struct{})
			go func() {
				defer close(applied)
				for {
					select {
					case <-stop:
						return
					default:
					}
					mu.Lock()
					g.apply(a)
					mu.Unlock()
				}
			}()
			err = sn.Write(&buf, mu.RLocker())
			close(stop)
			<-applied
		}
		if err != nil {
			t.Fatalf("seed %d round %d: Write: %v", seed, round, err)
		}
		if got := buf.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("seed %d round %d: the snapshot differs from the tree at its start (%d vs %d bytes)", seed, round, len(got), len(want))
		}
		// The state reads back, and the tree drops its pre-images.
		if _, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), ReadOptions{}); err != nil {
			t.Fatalf("round %d: ReadSnapshot: %v", round, err)
		}
		for i := 0; i < 20; i++ {
			g.apply(a)
		}
		if a.snap != nil && !a.snap.done.Load() {
			t.Fatalf("round %d: the snapshot state is still active after Write", round)
		}
		if bad := checkInvariants(a); len(bad) > 0 {
			t.Fatalf("round %d: invariants: %v", round, bad)
		}
	}
}

// TestSnapshotWriteNil checks that Write(nil) ends a snapshot without
// writing, so that the next can begin.
func TestSnapshotWriteNil(t *testing.T) {
	a := New()
	sn, err := a.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := sn.Write(nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.BeginSnapshot(); err != nil {
		t.Fatalf("BeginSnapshot after Write(nil): %v", err)
	}
}

// TestSortKids compares sortKids with a plain sort by bytes.Compare on
// sibling names of many shapes: shared prefixes, names that are prefixes
// of others, names longer than the 8-byte key, sequential suffixes.
func TestSortKids(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var tmp []kidRef
	for round := 0; round < 300; round++ {
		n := 1 + rng.IntN(400)
		prefix := []string{"", "lock-", "n", "_c_0f1e2d3c-", "aaaaaaaaaaaa"}[rng.IntN(5)]
		alpha := []string{"ab", "0123456789", "abcdefghijklmnopqrstuvwxyz-_."}[rng.IntN(3)]
		maxLen := 1 + rng.IntN(20)
		seen := map[string]bool{}
		var kids []kidRef
		for len(kids) < n {
			var b []byte
			b = append(b, prefix...)
			if rng.IntN(3) == 0 {
				b = fmt.Appendf(b, "%010d", rng.IntN(1_000_000))
			} else {
				for l := rng.IntN(maxLen + 1); l > 0; l-- {
					b = append(b, alpha[rng.IntN(len(alpha))])
				}
			}
			if len(b) == 0 || seen[string(b)] {
				if len(seen) > 0 && rng.IntN(50) == 0 {
					break // the name space may be small
				}
				continue
			}
			seen[string(b)] = true
			kids = append(kids, kidRef{name: b})
		}
		want := make([]string, len(kids))
		for i, k := range kids {
			want[i] = string(k.name)
		}
		slices.Sort(want)
		tmp = sortKids(kids, tmp)
		for i, k := range kids {
			if string(k.name) != want[i] {
				t.Fatalf("round %d (%d names, prefix %q): position %d holds %q, want %q", round, len(kids), prefix, i, k.name, want[i])
			}
		}
	}
}
