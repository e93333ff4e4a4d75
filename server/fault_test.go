package server_test

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/storage/wal"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/storage"
	"github.com/zkgo/zkgo/storage/storagetest"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/tree"
)

// The power-loss fault test. A SIGKILL leaves the page cache intact, so
// the kill -9 tests cannot show that anything acknowledged was fsynced.
// Here a storagetest.Recorder follows the server's storage through its
// sync hook and keeps the directory's durable image (what each file held
// at its last fsync); at a random moment the test "crashes": it stops
// counting acknowledgements and freezes the image in one step, stops the
// server, writes the image to a fresh directory (every unsynced byte
// dropped; sometimes a torn WAL tail, sometimes undone deletions), starts
// a new server there and checks every acknowledged write. Each round goes
// on from the previous round's recovered directory. Replay a failure with
// -fault.seed (the interleaving of the writers is not replayed, the
// choices are).
var (
	faultSeed   = flag.Uint64("fault.seed", 0, "seed for TestFaultPowerLoss (0 picks one from the clock)")
	faultRounds = flag.Int("fault.rounds", 10, "crashes TestFaultPowerLoss simulates")
)

const faultWriters = 4

// faultNode is the acknowledged state of one path.
type faultNode struct {
	exists  bool
	version int32
	data    string
	mzxid   int64 // of the acknowledged create or setData
}

// faultOp is one write a writer sends.
type faultOp struct {
	kind    byte // 'c' create, 's' setData, 'd' delete
	path    string
	data    string
	version int32 // expected version of s and d
}

// after is the state of op's path once op is applied to st.
func (op *faultOp) after(st faultNode) faultNode {
	switch op.kind {
	case 'c':
		return faultNode{exists: true, data: op.data}
	case 's':
		return faultNode{exists: true, version: st.version + 1, data: op.data}
	}
	return faultNode{}
}

// faultModel is what the clients were told. Writer w owns /w<w> and its
// children and sends one write at a time, so after a crash each path is
// in its acknowledged state, or in the state the writer's one write in
// flight (sent, not acknowledged) would give it.
type faultModel struct {
	mu       sync.Mutex
	crashed  bool // set at the crash: later replies are not acknowledgements
	nodes    map[string]*faultNode
	cversion map[string]int32 // acknowledged cversion of /w<w>
	inflight [faultWriters]*faultOp
	nextN    [faultWriters]int
	maxZxid  int64 // highest zxid acknowledged
	baseZxid int64 // the recovered last zxid: every new write is above
	acks     int   // acknowledged writes, all rounds
	problems []string

	// The current round's crash trigger and image.
	rec       *storagetest.Recorder
	roundAcks int
	ackLimit  int
	trigPoint storage.SyncPoint
	trigN     int
	trigSeen  int
	trigPre   bool // crash before recording the point (its fsync in flight)
	how       string
	img       *storagetest.Image
	crashc    chan struct{}
}

func newFaultModel() *faultModel {
	return &faultModel{nodes: map[string]*faultNode{}, cversion: map[string]int32{}}
}

func (m *faultModel) node(p string) *faultNode {
	n := m.nodes[p]
	if n == nil {
		n = &faultNode{}
		m.nodes[p] = n
	}
	return n
}

// crashLocked is the crash: acknowledgements stop and the durable image
// freezes in one step (m.mu held), so that every write counted as
// acknowledged was fsynced — its sync point recorded — before the image
// froze. record says whether the current sync point, if any, is recorded
// first.
func (m *faultModel) crashLocked(how string, dir string, p storage.SyncPoint, record bool) {
	if m.crashed {
		return
	}
	m.crashed = true
	if record {
		m.rec.Hook(dir, p)
	}
	m.img = m.rec.Freeze()
	m.how = how
	close(m.crashc)
}

// onSync is the storage sync hook for the current round.
func (m *faultModel) onSync(dir string, p storage.SyncPoint) {
	if p == m.trigPoint {
		m.mu.Lock()
		if m.trigSeen++; m.trigSeen == m.trigN && !m.crashed {
			when := "after"
			if m.trigPre {
				when = "before"
			}
			m.crashLocked(fmt.Sprintf("%s %s #%d", when, p, m.trigN), dir, p, !m.trigPre)
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
	}
	m.rec.Hook(dir, p)
}

// pick chooses writer w's next write from its acknowledged state.
func (m *faultModel) pick(w int, rng *rand.Rand) *faultOp {
	parent := fmt.Sprintf("/w%d", w)
	data := func(p string, v int32) string {
		s := fmt.Sprintf("%s v%d r%d ", p, v, rng.Uint32())
		return s + strings.Repeat("x", rng.IntN(300))
	}
	if !m.node(parent).exists {
		return &faultOp{kind: 'c', path: parent, data: data(parent, 0)}
	}
	var kids []string
	for p, n := range m.nodes {
		if n.exists && path.Dir(p) == parent {
			kids = append(kids, p)
		}
	}
	slices.Sort(kids)
	r := rng.IntN(10)
	if len(kids) < 3 || r < 3 {
		p := fmt.Sprintf("%s/n%d", parent, m.nextN[w])
		m.nextN[w]++
		return &faultOp{kind: 'c', path: p, data: data(p, 0)}
	}
	p := kids[rng.IntN(len(kids))]
	n := m.nodes[p]
	if r < 9 {
		return &faultOp{kind: 's', path: p, data: data(p, n.version+1), version: n.version}
	}
	return &faultOp{kind: 'd', path: p, version: n.version}
}

// do sends op and returns the reply's zxid and the node's new mzxid.
func faultDo(c *rawzk.Conn, op *faultOp) (zxid, mzxid int64, err error) {
	var h proto.ReplyHeader
	switch op.kind {
	case 'c':
		var resp proto.Create2Response
		h, err = c.Call(proto.OpCreate2, &proto.CreateRequest{Path: op.path, Data: []byte(op.data), ACL: acl.OpenACLUnsafe, Flags: proto.ModePersistent}, &resp)
		mzxid = resp.Stat.Mzxid
	case 's':
		var resp proto.SetDataResponse
		h, err = c.Call(proto.OpSetData, &proto.SetDataRequest{Path: op.path, Data: []byte(op.data), Version: op.version}, &resp)
		mzxid = resp.Stat.Mzxid
	case 'd':
		h, err = c.Call(proto.OpDelete, &proto.DeleteRequest{Path: op.path, Version: op.version}, nil)
	}
	if err == nil && h.Err != proto.ErrOk {
		err = fmt.Errorf("%c %s: error code %d", op.kind, op.path, h.Err)
	}
	return h.Zxid, mzxid, err
}

// writer sends writes until the crash and records each acknowledgement.
func (m *faultModel) writer(w int, addr string, rng *rand.Rand) {
	c, err := rawzk.Dial(addr, rawzk.Options{Timeout: 30 * time.Second})
	if err != nil {
		m.mu.Lock()
		if !m.crashed { // a crash during the server's start closes it at once
			m.problems = append(m.problems, fmt.Sprintf("writer %d: dial: %v", w, err))
			m.crashLocked("after a writer failed", "", 0, false) // end the round
		}
		m.mu.Unlock()
		return
	}
	defer c.Close()
	for {
		m.mu.Lock()
		if m.crashed {
			m.mu.Unlock()
			return
		}
		op := m.pick(w, rng)
		m.inflight[w] = op
		m.mu.Unlock()

		zxid, mzxid, err := faultDo(c, op)

		m.mu.Lock()
		if m.crashed {
			m.mu.Unlock()
			return // too late: not counted, op stays in flight
		}
		if err != nil {
			hint := ""
			if strings.Contains(err.Error(), "error code") {
				// The writer chose the write from the state verified
				// after the last crash: the server changed it since.
				hint = " (the state changed after the server was checked: did it serve before applying its recovered log?)"
			}
			m.problems = append(m.problems, fmt.Sprintf("writer %d before the crash: %v%s", w, err, hint))
			m.crashLocked("after a writer failed", "", 0, false) // end the round
			m.mu.Unlock()
			return
		}
		if zxid <= m.baseZxid {
			m.problems = append(m.problems, fmt.Sprintf("writer %d: %c %s acknowledged with zxid %#x, not above the recovered %#x", w, op.kind, op.path, zxid, m.baseZxid))
		}
		n := m.node(op.path)
		*n = op.after(*n)
		n.mzxid = mzxid
		if op.kind != 's' {
			m.cversion[path.Dir(op.path)]++
		}
		m.inflight[w] = nil
		m.maxZxid = max(m.maxZxid, zxid)
		m.acks++
		if m.roundAcks++; m.roundAcks >= m.ackLimit {
			m.crashLocked(fmt.Sprintf("after ack %d", m.roundAcks), "", 0, false)
		}
		m.mu.Unlock()
	}
}

// verify checks a recovered tree against the model and returns the
// problems found, a digest of the state of the model's paths, and a
// function that adopts the recovered state (if there are no problems, one
// of the allowed ones) for the next round. Call it with tr locked
// (Server.Tree).
func (m *faultModel) verify(tr *tree.Tree) (bad []string, digest string, adopt func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	nodes := map[string]*faultNode{}
	cversion := map[string]int32{}
	add := func(format string, args ...any) {
		if len(bad) < 30 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	last := tr.LastZxid()
	if last < m.maxZxid {
		add("last zxid %#x is below the highest acknowledged %#x", last, m.maxZxid)
	}
	got := func(p string) faultNode {
		n := tr.Get(p)
		if n == nil {
			return faultNode{}
		}
		st := n.Stat()
		return faultNode{exists: true, version: st.Version, data: string(n.Data()), mzxid: st.Mzxid}
	}
	same := func(a, b faultNode) bool {
		return a.exists == b.exists && (!a.exists || a.version == b.version && a.data == b.data)
	}
	describe := func(n faultNode) string {
		if !n.exists {
			return "absent"
		}
		d := n.data
		if i := strings.IndexByte(d, ' '); i >= 0 {
			if j := strings.IndexByte(d[i+1:], ' '); j >= 0 {
				d = d[:i+1+j]
			}
		}
		if n.mzxid <= 0 { // not known
			return fmt.Sprintf("version %d data %q", n.version, d)
		}
		return fmt.Sprintf("version %d data %q mzxid %#x", n.version, d, n.mzxid)
	}
	applied := map[string]bool{} // paths whose write in flight landed
	for w := range faultWriters {
		if op := m.inflight[w]; op != nil {
			acked := *m.node(op.path)
			if g := got(op.path); same(g, op.after(acked)) && !same(g, acked) {
				applied[op.path] = true
			}
		}
	}
	for p, n := range m.nodes {
		g := got(p)
		want := *n
		if applied[p] {
			for _, op := range m.inflight {
				if op != nil && op.path == p {
					want = op.after(want)
				}
			}
		} else if n.exists && g.exists && n.mzxid != 0 && g.mzxid != n.mzxid && same(g, want) {
			add("%s: acknowledged with mzxid %#x, recovered with %#x", p, n.mzxid, g.mzxid)
		}
		if !same(g, want) {
			inflight := ""
			for _, op := range m.inflight {
				if op != nil && op.path == p {
					inflight = fmt.Sprintf(" (in flight: %c %s)", op.kind, describe(op.after(*n)))
				}
			}
			add("%s: acknowledged %s, recovered %s%s", p, describe(*n), describe(g), inflight)
		}
		nodes[p] = &g
	}
	for w := range faultWriters {
		parent := fmt.Sprintf("/w%d", w)
		want := m.cversion[parent]
		if op := m.inflight[w]; op != nil && applied[op.path] && op.kind != 's' && op.path != parent {
			want++
		}
		if n := tr.Get(parent); n != nil {
			if cv := n.Stat().Cversion; cv != want {
				add("%s: cversion %d, want %d", parent, cv, want)
			}
			for _, k := range n.Children() {
				if _, ok := m.nodes[parent+"/"+k]; !ok {
					add("%s/%s: recovered but never written", parent, k)
				}
			}
		}
		cversion[parent] = want
	}
	bad = append(bad, treeInvariants(tr)...)
	var b strings.Builder
	for _, p := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[p]
		fmt.Fprintf(&b, "%s %v %d %d %q\n", p, n.exists, n.version, n.mzxid, n.data)
	}
	for _, p := range slices.Sorted(maps.Keys(cversion)) {
		fmt.Fprintf(&b, "%s cversion %d\n", p, cversion[p])
	}
	return bad, b.String(), func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.nodes, m.cversion = nodes, cversion
		m.inflight = [faultWriters]*faultOp{}
		// maxZxid stays the highest acknowledged zxid: the recovered
		// last zxid may count entries the server wrote after a crash
		// during its start (the sync's session), which may vanish.
		m.baseZxid = last
	}
}

// treeInvariants checks what every tree must satisfy, through the
// exported API.
func treeInvariants(tr *tree.Tree) []string {
	var bad []string
	last := tr.LastZxid()
	walked := 0
	tr.Walk(func(p string, n *tree.Node) {
		walked++
		st := n.Stat()
		kids := n.Children()
		if int(st.NumChildren) != len(kids) {
			bad = append(bad, fmt.Sprintf("%s: numChildren %d, %d children", p, st.NumChildren, len(kids)))
		}
		if int(st.DataLength) != len(n.Data()) {
			bad = append(bad, fmt.Sprintf("%s: dataLength %d, %d bytes", p, st.DataLength, len(n.Data())))
		}
		if st.Czxid > st.Mzxid || st.Mzxid > last || st.Pzxid > last {
			bad = append(bad, fmt.Sprintf("%s: czxid %#x mzxid %#x pzxid %#x, last zxid %#x", p, st.Czxid, st.Mzxid, st.Pzxid, last))
		}
		if int(st.Cversion) < len(kids) && !strings.HasPrefix(p, "/zookeeper") && p != "/" {
			bad = append(bad, fmt.Sprintf("%s: cversion %d with %d children", p, st.Cversion, len(kids)))
		}
		for _, k := range kids {
			c := tr.Get(path.Join(p, k))
			if c == nil {
				bad = append(bad, fmt.Sprintf("%s: child %s has no node", p, k))
			} else if cz := c.Stat().Czxid; cz > st.Pzxid && cz != 0 {
				bad = append(bad, fmt.Sprintf("%s: child %s created at %#x after pzxid %#x", p, k, cz, st.Pzxid))
			}
		}
	})
	if tr.NodeCount() != walked+1 { // the root is counted twice, as in ZooKeeper
		bad = append(bad, fmt.Sprintf("node count %d, %d nodes reachable", tr.NodeCount(), walked))
	}
	return bad
}

// faultRun drives rounds of write, crash, recover and check.
type faultRun struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	noSync  bool
	m       *faultModel
	current atomic.Pointer[faultModel]
	dataDir string // the current round's data directory
	checked int    // acknowledged writes checked after a crash
	sectors int    // unsynced WAL sectors written by torn tails
	revived int    // deleted files brought back
}

func newFaultRun(t *testing.T, seed uint64, noSync bool) *faultRun {
	r := &faultRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 11)), noSync: noSync, m: newFaultModel(), dataDir: t.TempDir()}
	old := wal.SegmentSizeBytes
	// Small segments: cuts, and purges that delete segments, every round;
	// and the Recorder re-reads the tail at every fsync.
	storage.SetWALSegmentSize(16 << 10)
	prev := storage.SetSyncHook(func(dir string, p storage.SyncPoint) {
		if m := r.current.Load(); m != nil {
			m.onSync(dir, p)
		}
	})
	t.Cleanup(func() {
		storage.SetSyncHook(prev)
		storage.SetWALSegmentSize(old)
	})
	return r
}

func (r *faultRun) start(snapCount int) *server.Server {
	r.t.Helper()
	s, err := server.New(server.Options{
		// Sessions of up to 10 s: a writer's session must not expire
		// while a loaded machine runs the round.
		Addr: "127.0.0.1:0", TickTime: 500 * time.Millisecond, DataDir: r.dataDir, SnapCount: snapCount,
		NoSync: r.noSync, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		r.t.Fatalf("seed %d: start on %s: %v", r.seed, r.dataDir, err)
	}
	return s
}

// arm installs a Recorder for r.dataDir and chooses the next crash. It is
// called before the server opens the directory, so that the Recorder
// sees every sync point from the recovery on.
func (r *faultRun) arm() {
	m := r.m
	rng := r.rng
	m.mu.Lock()
	m.rec = storagetest.NewRecorder(filepath.Join(r.dataDir, "zkgo"))
	m.crashc = make(chan struct{})
	m.crashed = false
	m.img = nil
	m.roundAcks = 0
	m.ackLimit = 20 + rng.IntN(400)
	m.trigPoint, m.trigN, m.trigSeen, m.trigPre = 0, 0, 0, rng.IntN(2) == 0
	switch rng.IntN(7) {
	case 0, 1: // the ack limit only
	case 2:
		m.trigPoint, m.trigN = storage.PointWALSynced, 1+rng.IntN(150)
	case 3:
		// A crash while a WAL fsync is in flight: what it was writing
		// may be torn.
		m.trigPoint, m.trigN, m.trigPre = storage.PointWALSynced, 1+rng.IntN(150), true
	case 4:
		m.trigPoint, m.trigN = storage.PointWALSnapshot, 1+rng.IntN(4)
	case 5:
		// After the deletions, before the directory fsync that makes
		// them durable: Materialize may bring deleted files back.
		m.trigPoint, m.trigN, m.trigPre = storage.PointPurged, 1+rng.IntN(4), false
	case 6:
		m.trigPoint, m.trigN = storage.PointSnapTempSynced, 1+rng.IntN(4)
	}
	m.mu.Unlock()
	r.current.Store(m)
}

// round runs the writers on s, which runs on r.dataDir and was armed,
// until the crash, and leaves r.dataDir pointing at a fresh directory
// holding the crash's image. It returns a description of the crash.
func (r *faultRun) round(s *server.Server) string {
	m := r.m
	rng := r.rng
	var wg sync.WaitGroup
	for w := range faultWriters {
		wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.writer(w, s.Addr().String(), wrng)
		}()
	}
	select {
	case <-m.crashc:
	case <-time.After(2 * time.Minute): // a watchdog, not a synchronisation
		m.mu.Lock()
		m.problems = append(m.problems, "no crash after 2 minutes: are the writers stuck?")
		m.crashLocked("by the watchdog", "", 0, false)
		m.mu.Unlock()
	}
	s.Close()
	wg.Wait()
	r.current.Store(nil)

	m.mu.Lock()
	img, how := m.img, m.how
	problems := m.problems
	m.mu.Unlock()
	if len(problems) > 0 {
		r.t.Fatalf("seed %d: %s", r.seed, strings.Join(problems, "\n"))
	}
	o := storagetest.MaterializeOptions{Rand: rng, Resurrect: rng.IntN(2) == 0, Torn: rng.IntN(2) == 0}
	r.dataDir = r.t.TempDir()
	rep, err := img.Materialize(filepath.Join(r.dataDir, "zkgo"), o)
	if err != nil {
		r.t.Fatal(err)
	}
	r.sectors += rep.TornSectors
	r.revived += len(rep.Resurrected)
	return fmt.Sprintf("crash %s after %d acks (%v; %s)", how, m.roundAcks, img.Counts, rep)
}

// check starts a server on the crashed directory, armed for the next
// round, and verifies it twice: what it serves as soon as Start returns,
// and after a sync (a barrier: everything committed before it is
// applied), which tells a write lost from one not yet applied. Nothing
// writes in between, so the two states must be the same.
func (r *faultRun) check(snapCount int) (*server.Server, []string) {
	r.arm()
	s := r.start(snapCount)
	var first, after []string
	var digest1, digest2 string
	var adopt func()
	s.Tree(func(tr *tree.Tree) { first, digest1, _ = r.m.verify(tr) })
	c, err := rawzk.Dial(s.Addr().String(), rawzk.Options{})
	if err == nil {
		_, err = c.Call(proto.OpSync, &proto.SyncRequest{Path: "/"}, nil)
		c.CloseSession()
	}
	if err != nil {
		return s, []string{fmt.Sprintf("sync after the restart: %v", err)}
	}
	s.Tree(func(tr *tree.Tree) { after, digest2, adopt = r.m.verify(tr) })
	adopt()
	r.m.mu.Lock()
	r.checked = r.m.acks
	r.m.mu.Unlock()
	switch {
	case len(after) > 0:
		return s, append([]string{"acknowledged writes lost (still after a sync):"}, after...)
	case len(first) > 0:
		return s, append([]string{"served before applying acknowledged writes that are in its log (after a sync they are all there):"}, first...)
	case digest1 != digest2:
		return s, []string{"served before applying its recovered log: the state changed without writes between Start and a sync"}
	}
	return s, nil
}

// TestFaultPowerLoss: rounds of concurrent writers, a simulated power
// loss at a random moment (after an acknowledgement, or at a storage sync
// point such as a snapshot's temporary file or a purge), recovery from
// the durable image only, and a check that every acknowledged write is
// there with its version, data and mzxid, that zxids do not go back, and
// that the tree is consistent.
func TestFaultPowerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates crashes of a durable server")
	}
	seed := *faultSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./server -run TestFaultPowerLoss -fault.seed=%d -fault.rounds=%d)", seed, seed, *faultRounds)
	r := newFaultRun(t, seed, false)
	start := time.Now()
	snapCount := func() int { return 20 + r.rng.IntN(60) }
	r.arm()
	s := r.start(snapCount())
	for round := range *faultRounds {
		how := r.round(s)
		var bad []string
		s, bad = r.check(snapCount())
		if len(bad) > 0 {
			s.Close()
			t.Fatalf("seed %d round %d: %s:\n%s", seed, round, how, strings.Join(bad, "\n"))
		}
		if testing.Verbose() {
			t.Logf("round %d: %s", round, how)
		}
	}
	s.Close()
	t.Logf("%d rounds, %d acknowledged writes checked, %d nodes tracked, %d torn WAL sectors, %d deleted files revived, %v",
		*faultRounds, r.checked, len(r.m.nodes), r.sectors, r.revived, time.Since(start).Round(time.Millisecond))
}

// TestFaultNoSyncLosesAcks is the negative control: with NoSync the
// storage never fsyncs, so the durable image keeps nothing the writers
// were told, and the check must say so. A fault test that passed here
// would check nothing.
func TestFaultNoSyncLosesAcks(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates crashes of a durable server")
	}
	r := newFaultRun(t, 1, true)
	r.arm()
	s := r.start(30)
	how := r.round(s)
	s, bad := r.check(30)
	s.Close()
	if len(bad) == 0 {
		t.Fatalf("NoSync: %s, yet no acknowledged write was lost", how)
	}
	t.Logf("NoSync: %s; the check found %d problems, first: %s", how, len(bad), strings.Join(bad[:min(3, len(bad))], " / "))
}
