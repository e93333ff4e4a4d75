package raftnode

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/storage"
)

// What a forger on the peer network sends, stepped into a follower as a
// transport would hand it over (Process), each after the cluster
// settled. None of it may be stored, change the term or the leader, or
// stop the member; each is counted in Status.Screened; the cluster goes
// on committing.
func TestScreenDropsForgedMessages(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	// The state machine applies entries starting with "k"; everything
	// else it cannot apply.
	c.mod = func(cfg *Config) {
		cfg.ValidateEntry = func(data []byte) error {
			if !bytes.HasPrefix(data, []byte("k")) {
				return errors.New("not a key")
			}
			return nil
		}
	}
	c.startAll()
	lead := c.waitLeader()
	c.propose(lead, "k-before")
	var f, other uint64 // a follower, and the third member
	for _, id := range c.ids() {
		switch {
		case id == lead:
		case f == 0:
			f = id
		default:
			other = id
		}
	}
	node, st := c.nodes[f], c.stores[f]
	status := node.Status()
	last, err := st.RaftStorage().LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	term := status.Term
	conf, _ := (&raftpb.ConfChange{Type: raftpb.ConfChangeRemoveNode, NodeID: lead}).Marshal()
	next := func(data []byte, typ raftpb.EntryType) []raftpb.Entry {
		return []raftpb.Entry{{Index: last + 1, Term: term, Type: typ, Data: data}}
	}
	app := func(from, term uint64, ents []raftpb.Entry) raftpb.Message {
		lt, _ := st.RaftStorage().Term(last)
		return raftpb.Message{Type: raftpb.MsgApp, From: from, To: f, Term: term, Index: last, LogTerm: lt, Commit: status.Commit, Entries: ents}
	}
	forged := []struct {
		name string
		m    raftpb.Message
	}{
		{"garbage entry from the leader", app(lead, term, next([]byte("\xff\xff\xff\xffgarbage"), raftpb.EntryNormal))},
		{"undecodable configuration change", app(lead, term, next([]byte{0xff, 0x01}, raftpb.EntryConfChange))},
		{"unknown entry type", app(lead, term, next([]byte("k-x"), raftpb.EntryType(7)))},
		{"append from a follower at the leader's term", app(other, term, next([]byte("k-forged"), raftpb.EntryNormal))},
		{"configuration change from a follower", app(other, term, next(conf, raftpb.EntryConfChange))},
		{"heartbeat of a higher term from a non-member", raftpb.Message{Type: raftpb.MsgHeartbeat, From: 9, To: f, Term: term + 1}},
		{"append of a higher term from a non-member", app(9, term+1, next([]byte("k-forged2"), raftpb.EntryNormal))},
		{"timeout-now from a follower", raftpb.Message{Type: raftpb.MsgTimeoutNow, From: other, To: f, Term: term}},
		{"append contradicting a committed entry", raftpb.Message{Type: raftpb.MsgApp, From: lead, To: f, Term: term, Index: status.Commit - 1,
			LogTerm: mustTerm(t, st, status.Commit-1), Commit: status.Commit,
			Entries: []raftpb.Entry{{Index: status.Commit, Term: term + 5, Data: []byte("k-rewrite")}}}},
		{"snapshot claiming a received file", raftpb.Message{Type: raftpb.MsgSnap, From: lead, To: f, Term: term,
			Snapshot: &raftpb.Snapshot{Data: storage.ReceivedMarker, Metadata: raftpb.SnapshotMetadata{Index: last + 100, Term: term,
				ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}}},
	}
	for i, fm := range forged {
		if err := node.Process(t.Context(), fm.m); err != nil {
			t.Fatalf("%s: Process: %v", fm.name, err)
		}
		s := node.Status()
		if got := s.Screened; got != uint64(i+1) {
			t.Errorf("%s: Screened = %d, want %d (not dropped)", fm.name, got, i+1)
		}
		if s.Term != term || s.Leader != lead {
			t.Fatalf("%s: follower %d moved to term %d leader %d (was term %d leader %d)", fm.name, f, s.Term, s.Leader, term, lead)
		}
		if err := node.Err(); err != nil {
			t.Fatalf("%s: follower stopped: %v", fm.name, err)
		}
		if i == 2 {
			// The first three are the leader's appends of entries no
			// state machine can apply: a member would store them
			// within a Ready (milliseconds) and stop at applying them.
			stored := func() bool { l, _ := st.RaftStorage().LastIndex(); return l > last }
			if c.waitForQuiet(300*time.Millisecond, stored) {
				l, _ := st.RaftStorage().LastIndex()
				ents, _ := st.RaftStorage().Entries(last+1, l+1, 1<<20)
				t.Fatalf("the follower stored what it cannot apply: %v", ents)
			}
		}
	}
	// The member goes on: it takes the leader's next entries.
	c.propose(lead, "k-after")
	if c.sms[f].has("k-forged") || c.sms[f].has("k-forged2") || c.sms[f].has("k-rewrite") {
		t.Fatal("a forged entry was applied")
	}
}

func mustTerm(t *testing.T, st *storage.Storage, i uint64) uint64 {
	t.Helper()
	term, err := st.RaftStorage().Term(i)
	if err != nil {
		t.Fatal(err)
	}
	return term
}

// checkingSM is a testSM that checks snapshots before they are installed
// (SnapshotChecker), as the server's state machine does.
type checkingSM struct{ *testSM }

func (s checkingSM) CheckSnapshot(r io.Reader, index uint64) error {
	var l []appliedEntry
	return json.NewDecoder(r).Decode(&l)
}

// Snapshot streams a forger sends: one from a member that does not lead
// is refused before anything is written; one from the leader's id whose
// data (with a valid checksum) the state machine cannot load is received,
// refused by the check and deleted. The member neither stops nor
// installs anything, and restarts on its directory.
func TestScreenRefusesForgedSnapshots(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.mod = func(cfg *Config) { cfg.StateMachine = checkingSM{cfg.StateMachine.(*testSM)} }
	c.startAll()
	lead := c.waitLeader()
	c.propose(lead, "k-before")
	var f, other uint64
	for _, id := range c.ids() {
		switch {
		case id == lead:
		case f == 0:
			f = id
		default:
			other = id
		}
	}
	node := c.nodes[f]
	st := node.Status()
	snapMsg := func(from uint64) raftpb.Message {
		return raftpb.Message{Type: raftpb.MsgSnap, From: from, To: f, Term: st.Term,
			Snapshot: &raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: st.Commit + 1000, Term: st.Term,
				ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}}
	}
	leftovers := func() []string {
		var names []string
		filepath.WalkDir(c.dirs[f], func(path string, d fs.DirEntry, err error) error {
			if err == nil && !strings.Contains(path, "/wal/") && (strings.HasSuffix(path, ".partial") || strings.HasSuffix(path, ".tmp")) {
				names = append(names, path)
			}
			return nil
		})
		return names
	}
	garbage := bytes.Repeat([]byte("\x00garbage"), 1<<17) // 1 MiB
	restores := c.sms[f].restoreCount()

	err := node.ProcessSnapshot(t.Context(), snapMsg(other), bytes.NewReader(garbage))
	if err == nil {
		t.Fatal("a snapshot from a follower was taken")
	}
	if l := leftovers(); len(l) > 0 {
		t.Fatalf("a snapshot from a follower left %v", l)
	}
	err = node.ProcessSnapshot(t.Context(), snapMsg(lead), bytes.NewReader(garbage))
	if err == nil {
		t.Fatal("a snapshot the state machine cannot load was taken")
	}
	if l := leftovers(); len(l) > 0 {
		t.Fatalf("a refused snapshot left %v", l)
	}
	if s := node.Status(); s.Screened != 1 || s.Snapshot >= st.Commit+1000 || s.Applied >= st.Commit+1000 {
		t.Fatalf("after the forged snapshots: %+v", s)
	}
	if err := node.Err(); err != nil {
		t.Fatalf("follower stopped: %v", err)
	}
	if c.sms[f].restoreCount() != restores {
		t.Fatal("the follower restored a snapshot")
	}
	c.stop(f)
	c.start(f, false)
	c.propose(lead, "k-after")
}

// The same over the TCP transport, as a forger on the network would: a
// transport of its own that names the leader (or a stranger) in its
// hello sends a garbage entry, a heartbeat of a higher term and a
// garbage snapshot stream to a follower. The follower stores none of
// it, keeps its term and leader, and does not stop.
func TestScreenOverTCP(t *testing.T) {
	c, lns := newTCPCluster(t, 3)
	c.mod = func(cfg *Config) {
		cfg.StateMachine = checkingSM{cfg.StateMachine.(*testSM)}
		cfg.ValidateEntry = func(data []byte) error {
			if !bytes.HasPrefix(data, []byte("k")) {
				return errors.New("not a key")
			}
			return nil
		}
	}
	c.startAll()
	lead := c.waitLeader()
	c.propose(lead, "k-before")
	f := lead%3 + 1
	node, st := c.nodes[f], c.stores[f]
	s0 := node.Status()
	last, _ := st.RaftStorage().LastIndex()
	lt, _ := st.RaftStorage().Term(last)

	forger := func(id uint64) (*TCPTransport, *recorder) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		tr, err := NewTCPTransport(TCPConfig{ID: id, ClusterID: 0xc1, Listener: ln})
		if err != nil {
			t.Fatal(err)
		}
		rec := newRecorder()
		if err := tr.Start(rec); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.Stop)
		tr.AddPeer(f, lns[f].Addr().String())
		return tr, rec
	}
	asLeader, rec := forger(lead)
	asLeader.Send([]raftpb.Message{{Type: raftpb.MsgApp, From: lead, To: f, Term: s0.Term, Index: last, LogTerm: lt, Commit: s0.Commit,
		Entries: []raftpb.Entry{{Index: last + 1, Term: s0.Term, Data: []byte("\xff\xff\xff\xffgarbage")}}}})
	stranger, _ := forger(9)
	stranger.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 9, To: f, Term: s0.Term + 1}})
	garbage := bytes.Repeat([]byte("\x00garbage"), 1<<17)
	asLeader.SendSnapshot(raftpb.Message{Type: raftpb.MsgSnap, From: lead, To: f, Term: s0.Term,
		Snapshot: &raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: s0.Commit + 1000, Term: s0.Term,
			ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}}, io.NopCloser(bytes.NewReader(garbage)), int64(len(garbage)))
	// The stream's outcome is reported to the forger; the other two
	// messages are screened on arrival.
	select {
	case status := <-rec.snaps:
		if status != raft.SnapshotFailure {
			t.Fatalf("the garbage snapshot was reported %v", status)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no report of the snapshot stream")
	}
	// A drop is no event the cluster's waits wake on: poll.
	for deadline := time.Now().Add(waitTimeout); node.Status().Screened < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("follower %d screened %d of the 2 forged messages", f, node.Status().Screened)
		}
	}
	s := node.Status()
	if s.Term != s0.Term || s.Leader != lead || node.Err() != nil {
		t.Fatalf("follower after the forgery: term %d leader %d err %v (was term %d leader %d)", s.Term, s.Leader, node.Err(), s0.Term, lead)
	}
	if l, _ := st.RaftStorage().LastIndex(); l > last {
		ents, _ := st.RaftStorage().Entries(last+1, l+1, 1<<20)
		for _, e := range ents {
			if bytes.Contains(e.Data, []byte("garbage")) {
				t.Fatalf("stored the forged entry %d", e.Index)
			}
		}
	}
	c.propose(lead, "k-after")
}
