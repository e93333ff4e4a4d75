package tree

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
)

var (
	treeSeed  = flag.Uint64("tree.seed", 0, "seed for TestRandomOps (0: pick one and log it)")
	treeSteps = flag.Int("tree.steps", 3000, "number of transactions TestRandomOps applies")
)

// randGen produces random transactions over a small path space so that
// operations collide often.
type randGen struct {
	rng  *rand.Rand
	tree *Tree // the tree the transactions go to (to pick existing paths)
	now  int64
	auth map[int64][]proto.Id
}

var randNames = []string{"a", "b", "c"}

func (g *randGen) randPath() string {
	depth := 1 + g.rng.IntN(3)
	var b strings.Builder
	for i := 0; i < depth; i++ {
		b.WriteByte('/')
		b.WriteString(randNames[g.rng.IntN(len(randNames))])
	}
	return b.String()
}

// existingPath returns a random existing node outside /zookeeper, or a
// random path when there is none.
func (g *randGen) existingPath() string {
	var ps []string
	g.tree.Walk(func(p string, _ *Node) {
		if p != "/" && !strings.HasPrefix(p, ZookeeperPath) {
			ps = append(ps, p)
		}
	})
	if len(ps) == 0 {
		return g.randPath()
	}
	return ps[g.rng.IntN(len(ps))]
}

// somePath picks an existing node most of the time.
func (g *randGen) somePath() string {
	switch r := g.rng.IntN(20); {
	case r < 12:
		return g.existingPath()
	case r == 12:
		return g.existingPath() + "/" // invalid
	case r == 13:
		return "/zookeeper"
	default:
		return g.randPath()
	}
}

func (g *randGen) data() []byte {
	n := g.rng.IntN(5)
	if n == 0 && g.rng.IntN(2) == 0 {
		return nil
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + g.rng.IntN(26))
	}
	return b
}

func (g *randGen) version() int32 {
	if g.rng.IntN(3) > 0 {
		return -1
	}
	return int32(g.rng.IntN(3))
}

func (g *randGen) acls() []proto.ACL {
	switch g.rng.IntN(12) {
	case 0:
		return []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	case 1:
		return []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "digest", ID: acl.DigestID("u1", "p")}}, {Perms: proto.PermRead, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	case 2:
		return []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "auth"}}}
	case 3:
		return []proto.ACL{{Perms: proto.PermAll &^ proto.PermDelete, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	case 4:
		return nil // invalid
	default:
		return openACL
	}
}

func (g *randGen) createOp() (proto.OpCode, proto.Record) {
	path := g.randPath()
	if g.rng.IntN(4) == 0 {
		path = g.existingPath() + "/" + randNames[g.rng.IntN(len(randNames))]
	}
	var mode proto.CreateMode
	switch r := g.rng.IntN(100); {
	case r < 40:
		mode = proto.ModePersistent
	case r < 55:
		mode = proto.ModeEphemeral
	case r < 68:
		mode = proto.ModePersistentSequential
		path += "-"
	case r < 76:
		mode = proto.ModeEphemeralSequential
	case r < 88:
		mode = proto.ModeContainer
		return proto.OpCreateContainer, &proto.CreateRequest{Path: path, Data: g.data(), ACL: g.acls(), Flags: mode}
	case r < 98:
		mode = proto.ModePersistentWithTTL
		if g.rng.IntN(2) == 0 {
			mode = proto.ModePersistentSequentialWithTTL
		}
		ttl := int64(g.rng.IntN(200)) - 5
		return proto.OpCreateTTL, &proto.CreateTTLRequest{Path: path, Data: g.data(), ACL: g.acls(), Flags: mode, TTL: ttl}
	default:
		mode = proto.CreateMode(7 + g.rng.IntN(3)) // invalid
	}
	op := proto.OpCreate
	if g.rng.IntN(2) == 0 {
		op = proto.OpCreate2
	}
	return op, &proto.CreateRequest{Path: path, Data: g.data(), ACL: g.acls(), Flags: mode}
}

// multiSubOp returns a random operation allowed in a multi.
func (g *randGen) multiSubOp() proto.MultiOp {
	switch r := g.rng.IntN(10); {
	case r < 4:
		op, req := g.createOp()
		return proto.MultiOp{Type: op, Req: req}
	case r < 6:
		return proto.MultiOp{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: g.somePath(), Version: g.version()}}
	case r < 9:
		return proto.MultiOp{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: g.somePath(), Data: g.data(), Version: g.version()}}
	default:
		return proto.MultiOp{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: g.somePath(), Version: g.version()}}
	}
}

func (g *randGen) session() int64 {
	switch r := g.rng.IntN(20); {
	case r < 4:
		return 0
	case r == 4:
		return 7 // never created: SessionExpired
	default:
		return int64(1 + g.rng.IntN(3))
	}
}

// next returns the next random transaction.
func (g *randGen) next() *Txn {
	g.now += int64(g.rng.IntN(40))
	txn := &Txn{Session: g.session(), Time: g.now}
	switch r := g.rng.IntN(100); {
	case r < 32:
		txn.Op, txn.Req = g.createOp()
	case r < 45:
		txn.Op, txn.Req = proto.OpDelete, &proto.DeleteRequest{Path: g.somePath(), Version: g.version()}
	case r < 58:
		txn.Op, txn.Req = proto.OpSetData, &proto.SetDataRequest{Path: g.somePath(), Data: g.data(), Version: g.version()}
	case r < 61:
		txn.Op, txn.Req = proto.OpCheck, &proto.CheckVersionRequest{Path: g.somePath(), Version: g.version()}
	case r < 65:
		txn.Op, txn.Req = proto.OpSetACL, &proto.SetACLRequest{Path: g.somePath(), ACL: g.acls(), Version: g.version()}
	case r < 82:
		m := &proto.MultiRequest{}
		for n := g.rng.IntN(5); n > 0; n-- {
			m.Ops = append(m.Ops, g.multiSubOp())
		}
		txn.Op, txn.Req = proto.OpMulti, m
	case r < 87:
		txn.Session = int64(1 + g.rng.IntN(3))
		txn.Op, txn.Req = proto.OpCreateSession, &CreateSessionReq{Timeout: 1000, Passwd: []byte{byte(txn.Session)}}
	case r < 89:
		txn.Session = int64(1 + g.rng.IntN(3))
		txn.Op = proto.OpCloseSession
	default:
		// The container/TTL sweep: a candidate, or any path.
		txn.Session = 0
		path := g.somePath()
		if c := g.tree.ReapCandidates(g.now); len(c) > 0 && g.rng.IntN(3) > 0 {
			path = c[g.rng.IntN(len(c))]
		}
		txn.Op, txn.Req = proto.OpDeleteContainer, &DeleteContainerReq{Path: path}
	}
	txn.Auth = g.auth[txn.Session]
	return txn
}

// TestRandomOps applies random transactions to two trees and checks that
// they stay identical (determinism), that the tree's invariants hold after
// every step, that a failed multi leaves the tree exactly as it was, and
// that a multi behaves like its sub-operations applied one after the other
// at the same zxid (same results, same final state) when it succeeds, and
// fails at the same sub-operation with the same code when it does not.
func TestRandomOps(t *testing.T) {
	seed := *treeSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with go test ./tree -run TestRandomOps -tree.seed=%d)", seed, seed)
	steps := *treeSteps
	if testing.Short() && steps > 500 {
		steps = 500
	}

	opts := Options{ExtendedTypes: true, EnforceQuota: true}
	a, b := New(), New()
	a.SetOptions(opts)
	b.SetOptions(opts)
	g := &randGen{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), tree: a, now: 1_000_000, auth: map[int64][]proto.Id{
		1: {{Scheme: "digest", ID: acl.DigestID("u1", "p")}},
		2: {{Scheme: "digest", ID: acl.DigestID("u2", "p")}, {Scheme: "ip", ID: "10.0.0.2"}},
	}}
	var zxid int64
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d step zxid=%d: %s", seed, zxid, fmt.Sprintf(format, args...))
	}
	apply := func(txn *Txn) Result {
		zxid++
		ra := a.Apply(zxid, txn)
		rb := b.Apply(zxid, txn)
		if !reflect.DeepEqual(ra, rb) {
			fail("trees disagree on %v:\n%#v\n%#v", txn.Op, ra, rb)
		}
		return ra
	}
	// A quota on /a with a hard count limit, so that random creates hit it.
	for _, p := range []struct{ path, data string }{
		{"/a", ""},
		{QuotaPath + "/a", ""},
		{QuotaPath + "/a/" + quotaLimitNode, "count=4,bytes=-1,countHardLimit=8"},
		{QuotaPath + "/a/" + quotaStatNode, "count=0,bytes=0"},
	} {
		if r := apply(&Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: p.path, Data: []byte(p.data), ACL: openACL}}); r.Err != proto.ErrOk {
			fail("setup create %s: %v", p.path, r.Err)
		}
	}
	statPath := QuotaPath + "/a/" + quotaStatNode

	type nodeKey struct {
		path  string
		czxid int64
	}
	cversions := map[nodeKey]int32{}
	counts := map[string]int{}
	for i := 0; i < steps; i++ {
		txn := g.next()
		var before string
		var seq *Tree
		if txn.Op == proto.OpMulti {
			before = dumpState(a, false)
			seq = cloneTree(a)
			if got := dumpState(seq, true); got != dumpState(a, true) {
				fail("cloneTree is not exact:\n%s", lineDiff(dumpState(a, true), got))
			}
		}
		prevZxid := a.LastZxid()
		r := apply(txn)
		if a.LastZxid() != zxid || zxid <= prevZxid {
			fail("lastZxid %d after applying %d (was %d)", a.LastZxid(), zxid, prevZxid)
		}
		if da, db := dumpState(a, true), dumpState(b, true); da != db {
			fail("trees diverged after %v:\n%s", txn.Op, lineDiff(da, db))
		}
		if bad := checkInvariants(a); len(bad) > 0 {
			fail("invariants broken after %v %#v:\n%s", txn.Op, txn.Req, strings.Join(bad, "\n"))
		}
		a.Walk(func(p string, n *Node) {
			st := n.rawStat()
			k := nodeKey{p, st.Czxid}
			if old, ok := cversions[k]; ok && st.Cversion < old {
				fail("%s: cversion went from %d to %d", p, old, st.Cversion)
			}
			cversions[k] = st.Cversion
			if st.Mzxid > zxid || st.Pzxid > zxid || st.Czxid > zxid {
				fail("%s: stat from the future: %s", p, statString(st))
			}
		})
		if sn := a.Get(statPath); sn != nil {
			c, bytes := a.usage("/a")
			if want := string(statsTrack{"count": c, "bytes": bytes}.format()); string(sn.Data()) != want {
				fail("quota stats %q, usage of /a is %q", sn.Data(), want)
			}
		}

		if txn.Op == proto.OpMulti {
			m := txn.Req.(*proto.MultiRequest)
			failed := -1
			for j, sr := range r.Multi {
				if sr.Err != proto.ErrOk {
					failed = j
					break
				}
			}
			counts[fmt.Sprintf("multi/ok=%v", failed < 0)]++
			if failed >= 0 {
				if len(r.Events) != 0 {
					fail("failed multi produced events %v", r.Events)
				}
				if after := dumpState(a, false); after != before {
					fail("failed multi (op %d: %v) did not roll back exactly:\n%s", failed, r.Multi[failed].Err, lineDiff(before, after))
				}
				for j, sr := range r.Multi {
					want := proto.ErrRuntimeInconsistency
					switch {
					case j < failed:
						want = proto.ErrOk
					case j == failed:
						want = sr.Err
					}
					if sr.Op != proto.OpError || sr.Err != want || sr.Path != "" {
						fail("failed multi result %d: %+v", j, sr)
					}
				}
			}
			// Replay the sub-operations one by one on the copy, at the
			// same zxid.
			seq.lastZxid = zxid
			seq.events = seq.events[:0]
			var seqResults []OpResult
			seqFailed := -1
			for j, op := range m.Ops {
				typ, req := op.Type, op.Req
				switch typ {
				case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL:
					typ, req = multiCreateOp(op)
				}
				sr := seq.applyOne(zxid, txn, typ, req)
				seqResults = append(seqResults, sr)
				if sr.Err != proto.ErrOk {
					seqFailed = j
					break
				}
			}
			if seqFailed != failed {
				fail("multi failed at %d, sequential replay at %d (%+v)", failed, seqFailed, seqResults)
			}
			if failed >= 0 {
				if seqResults[failed].Err != r.Multi[failed].Err {
					fail("multi failed with %v, sequential replay with %v", r.Multi[failed].Err, seqResults[failed].Err)
				}
			} else {
				if len(m.Ops) > 0 && !reflect.DeepEqual(seqResults, r.Multi) {
					fail("multi results %+v, sequential %+v", r.Multi, seqResults)
				}
				if (len(seq.events) > 0 || len(r.Events) > 0) && !reflect.DeepEqual(seq.events, r.Events) {
					fail("multi events %+v, sequential %+v", r.Events, seq.events)
				}
				if da, ds := dumpState(a, true), dumpState(seq, true); da != ds {
					fail("multi and sequential replay disagree:\n%s", lineDiff(da, ds))
				}
			}
		} else {
			counts[fmt.Sprintf("%v/ok=%v", txn.Op, r.Err == proto.ErrOk)]++
		}
	}
	if testing.Verbose() {
		t.Logf("nodes at the end: %d; outcome counts: %v", a.NodeCount(), counts)
	}
}
