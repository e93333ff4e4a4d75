package console

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

const uuidA, uuidB, uuidC = "0f8e6a3c-1b2d-4e5f-8a9b-0c1d2e3f4a5b", "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", "11111111-2222-4333-8444-555555555555"

func prot(uuid, rest string) string { return "_c_" + uuid + "-" + rest }

func TestParticipantName(t *testing.T) {
	for _, tt := range []struct {
		name, marker, seq string
		ok                bool
	}{
		{"lock-0000000001", "lock-", "0000000001", true},
		{prot(uuidA, "lock-0000000042"), "lock-", "0000000042", true},
		{prot(uuidA, "__READ__0000000003"), "__READ__", "0000000003", true},
		{prot(uuidA, "__WRIT__0000000004"), "__WRIT__", "0000000004", true},
		{prot(uuidA, "latch-0000000005"), "latch-", "0000000005", true},
		{"latch-0000000005", "latch-", "0000000005", true},
		{prot(uuidA, "lease-0000000006"), "lease-", "0000000006", true},
		{"n_0000000007", "n_", "0000000007", true},
		{"lock-000000001", "", "", false},   // nine digits
		{"lock-00000000012", "", "", false}, // eleven
		{"lock-", "", "", false},
		{"lock-abcdefghij", "", "", false},
		{"_c_notauuid-lock-0000000001", "", "", false},
		{"_c_" + uuidA + "lock-0000000001", "", "", false}, // no separator
		{prot(uuidA, "n_0000000001"), "", "", false},       // n_ is never protected
		{"mylock-0000000001", "", "", false},
		{"config", "", "", false},
		{"", "", "", false},
		{"\xff\xfe", "", "", false},
		{"<script>lock-0000000001", "", "", false},
	} {
		m, seq, ok := participantName(tt.name)
		if m != tt.marker || seq != tt.seq || ok != tt.ok {
			t.Errorf("participantName(%q) = %q, %q, %v; want %q, %q, %v", tt.name, m, seq, ok, tt.marker, tt.seq, tt.ok)
		}
	}
}

// summary writes a recipe as "kind path: holders | waiters" with node
// names shortened to their role and sequence number.
func summary(r Recipe) string {
	short := func(ps []Participant) string {
		var s []string
		for _, p := range ps {
			s = append(s, fmt.Sprintf("%s%s@%x", p.Role, strings.TrimLeft(p.Seq, "0"), p.Session))
		}
		return strings.Join(s, " ")
	}
	return fmt.Sprintf("%s %s: %s | %s", r.Kind, r.Path, short(r.Holders), short(r.Waiters))
}

func TestRecognizeChildren(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	n := func(name string, owner int64) NodeInfo {
		return NodeInfo{Name: name, EphemeralOwner: owner, Czxid: owner * 100, Ctime: now.Add(-time.Duration(owner) * time.Second)}
	}
	for _, tt := range []struct {
		desc   string
		parent string
		kids   []NodeInfo
		want   []string
	}{
		{"mutex: Curator order is by sequence, not by uuid", "/locks/a", []NodeInfo{
			n(prot(uuidB, "lock-0000000003"), 3), n(prot(uuidA, "lock-0000000001"), 1), n(prot(uuidC, "lock-0000000002"), 2),
		}, []string{"mutex /locks/a: lock1@1 | lock2@2 lock3@3"}},
		{"plain lock- names and strangers", "/l", []NodeInfo{
			n("lock-0000000010", 2), n("lock-0000000009", 1), n("readme", 0),
		}, []string{"mutex /l: lock9@1 | lock10@2"}},
		{"rwlock: readers ahead of the first writer hold", "/rw", []NodeInfo{
			n(prot(uuidA, "__READ__0000000001"), 1), n(prot(uuidB, "__READ__0000000002"), 2),
			n(prot(uuidC, "__WRIT__0000000003"), 3), n(prot(uuidA, "__READ__0000000004"), 4),
		}, []string{"rwlock /rw: read1@1 read2@2 | write3@3 read4@4"}},
		{"rwlock: a writer first holds alone", "/rw", []NodeInfo{
			n(prot(uuidA, "__READ__0000000002"), 2), n(prot(uuidB, "__WRIT__0000000001"), 1), n(prot(uuidC, "__WRIT__0000000003"), 3),
		}, []string{"rwlock /rw: write1@1 | read2@2 write3@3"}},
		{"latch", "/election/app", []NodeInfo{
			n(prot(uuidA, "latch-0000000007"), 7), n(prot(uuidB, "latch-0000000005"), 5),
		}, []string{"latch /election/app: latch5@5 | latch7@7"}},
		{"LeaderElectionSupport", "/le", []NodeInfo{
			n("n_0000000002", 2), n("n_0000000000", 1), n("n_0000000001", 3),
		}, []string{"election /le: offer@1 | offer1@3 offer2@2"}},
		{"semaphore leases under leases/", "/sem/leases", []NodeInfo{
			n(prot(uuidA, "lease-0000000002"), 2), n(prot(uuidB, "lease-0000000001"), 1),
		}, []string{"semaphore /sem: lease1@1 lease2@2 | "}},
		{"lease- nodes elsewhere are not a semaphore", "/sem/other", []NodeInfo{
			n(prot(uuidA, "lease-0000000002"), 2),
		}, nil},
		{"two recipes in one node", "/mixed", []NodeInfo{
			n("lock-0000000001", 1), n(prot(uuidA, "latch-0000000002"), 2),
		}, []string{"mutex /mixed: lock1@1 | ", "latch /mixed: latch2@2 | "}},
		{"nothing", "/x", []NodeInfo{n("a", 0), n("b", 1)}, nil},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var got []string
			for _, r := range RecognizeChildren(tt.parent, tt.kids, now) {
				got = append(got, summary(r))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n  %q\nwant\n  %q", got, tt.want)
			}
		})
	}
}

func TestRecognizeFencingAndAges(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	kids := []NodeInfo{
		{Name: "lock-0000000001", Czxid: 0x101, EphemeralOwner: 0xabc, Ctime: now.Add(-90 * time.Second)},
		{Name: "lock-0000000002", Czxid: 0x105, EphemeralOwner: 0xdef, Ctime: now.Add(-30 * time.Second)},
	}
	rs := RecognizeChildren("/q", kids, now)
	if len(rs) != 1 {
		t.Fatalf("recipes: %v", rs)
	}
	h, w := rs[0].Holders[0], rs[0].Waiters[0]
	if h.Token != 0x101 || h.Session != 0xabc || h.Path != "/q/lock-0000000001" || h.Age != 90*time.Second {
		t.Errorf("holder %+v", h)
	}
	if w.Token != 0x105 || w.Session != 0xdef || w.Age != 30*time.Second {
		t.Errorf("waiter %+v", w)
	}
}

// memTree is a TreeReader over a map of path → node.
type memTree map[string]NodeInfo

func (m memTree) Children(ctx context.Context, p string) ([]string, NodeInfo, error) {
	info, ok := m[p]
	if !ok {
		return nil, NodeInfo{}, zk.ErrNoNode
	}
	var names []string
	for q := range m {
		if q != "/" && path.Dir(q) == p {
			names = append(names, path.Base(q))
		}
	}
	return names, info, nil
}

func (m memTree) Data(ctx context.Context, p string, max int) ([]byte, error) {
	d := m[p].Data
	return d[:min(len(d), max)], nil
}

func (m memTree) add(p string, owner int64, data string) {
	m[p] = NodeInfo{Name: path.Base(p), EphemeralOwner: owner, Czxid: owner, Data: []byte(data)}
	for q := path.Dir(p); ; q = path.Dir(q) {
		if _, ok := m[q]; !ok {
			m[q] = NodeInfo{Name: path.Base(q)}
		}
		if q == "/" {
			break
		}
	}
}

func TestScan(t *testing.T) {
	m := memTree{}
	m.add("/app/lock/"+prot(uuidA, "lock-0000000000"), 1, "10.0.0.1")
	m.add("/app/lock/"+prot(uuidB, "lock-0000000001"), 2, "10.0.0.2")
	m.add("/app/sem/leases/"+prot(uuidA, "lease-0000000000"), 3, "")
	m.add("/app/sem/leases/"+prot(uuidB, "lease-0000000001"), 4, "")
	m.add("/app/sem/locks/"+prot(uuidC, "lock-0000000000"), 5, "")
	m.add("/app/sem/locks/"+prot(uuidA, "lock-0000000001"), 6, "")
	m.add("/election/"+prot(uuidC, "latch-0000000003"), 7, "node-7")
	for i := range 50 {
		m.add(fmt.Sprintf("/data/n%02d/leaf", i), 0, "")
	}
	res := Scan(context.Background(), m, ScanOptions{}, time.Now())
	var got []string
	for _, r := range res.Recipes {
		got = append(got, summary(r))
	}
	want := []string{
		"mutex /app/lock: lock@1 | lock1@2",
		"semaphore /app/sem: lease@3 lease1@4 | lock@5 lock1@6",
		"latch /election: latch3@7 | ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n  %q\nwant\n  %q", got, want)
	}
	if res.Truncated || res.Visited != len(m) {
		t.Errorf("visited %d of %d, truncated %v", res.Visited, len(m), res.Truncated)
	}
	if d := string(res.Recipes[0].Holders[0].Node.Data); d != "10.0.0.1" {
		t.Errorf("holder data %q", d)
	}

	// A budget: participants are read before other nodes of their level,
	// so the lock under /app is still recognised whole.
	res = Scan(context.Background(), m, ScanOptions{Budget: 20}, time.Now())
	if !res.Truncated || res.Visited != 20 {
		t.Errorf("budget: visited %d, truncated %v", res.Visited, res.Truncated)
	}
	// Roots: only /election.
	res = Scan(context.Background(), m, ScanOptions{Roots: []string{"/election", "/election/x"}}, time.Now())
	if len(res.Recipes) != 1 || res.Recipes[0].Kind != KindLatch {
		t.Errorf("roots: %v", res.Recipes)
	}
}

// slowTree is a TreeReader whose reads of children take delay each.
type slowTree struct {
	memTree
	delay time.Duration
}

func (s slowTree) Children(ctx context.Context, p string) ([]string, NodeInfo, error) {
	time.Sleep(s.delay)
	return s.memTree.Children(ctx, p)
}

// A scan reports how long it took: the overview shows it and the feed
// spaces its scans by it (feedScanDuty).
func TestScanTook(t *testing.T) {
	m := memTree{}
	m.add("/app/lock/"+prot(uuidA, "lock-0000000000"), 1, "10.0.0.1")
	const delay = 20 * time.Millisecond
	res := Scan(context.Background(), slowTree{m, delay}, ScanOptions{}, time.Now())
	// Three levels under / (/app, /app/lock, its child), each at least one
	// read after the one before.
	if res.Took < 3*delay {
		t.Errorf("Took %v, want at least %v", res.Took, 3*delay)
	}
	if len(res.Recipes) != 1 {
		t.Errorf("recipes %v", res.Recipes)
	}
}

func TestMergeSemaphoreAcquiring(t *testing.T) {
	now := time.Now()
	leases := RecognizeChildren("/s/leases", []NodeInfo{
		{Name: prot(uuidA, "lease-0000000000"), EphemeralOwner: 1},
		{Name: prot(uuidB, "lease-0000000001"), EphemeralOwner: 2},
	}, now)
	locks := RecognizeChildren("/s/locks", []NodeInfo{
		{Name: prot(uuidB, "lock-0000000004"), EphemeralOwner: 2},
		{Name: prot(uuidC, "lock-0000000005"), EphemeralOwner: 3},
	}, now)
	rs := MergeSemaphores(append(leases, locks...))
	if len(rs) != 1 {
		t.Fatalf("recipes: %v", rs)
	}
	if got, want := summary(rs[0]), "semaphore /s: lease@1 | lease1@2 lock5@3"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDisjointRoots(t *testing.T) {
	for _, tt := range []struct{ in, want []string }{
		{[]string{"/a", "/a-b", "/a/b"}, []string{"/a", "/a-b"}},
		{[]string{"/x", "/"}, []string{"/"}},
		{[]string{"/b", "/a", "/b"}, []string{"/a", "/b"}},
	} {
		if got := disjointRoots(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("disjointRoots(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
