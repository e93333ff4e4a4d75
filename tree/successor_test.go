package tree

import (
	"fmt"
	"testing"

	"github.com/zkgo/zkgo/proto"
)

func TestSequenceOf(t *testing.T) {
	for name, want := range map[string]int64{
		"lock-0000000012":                       12,
		"_c_6f1a-lock-0000000000":               0,
		"0000000007":                            7,
		"x-2147483647":                          2147483647,
		"x-000000001":                           -1, // nine digits
		"lock-00000000a1":                       -1,
		"":                                      -1,
		"member_0000000003-with-a-suffix":       -1,
		"__lock__0000000101":                    101,
		"_c_0a0b-latch-00000000010000000002zzz": -1,
	} {
		got, ok := sequenceOf(name)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("sequenceOf(%q) = %d, want %d", name, got, want)
		}
	}
}

// SequenceSuccessor names the session whose node comes next by counter,
// in the order a waiter watching its predecessor uses, not by name.
func TestSequenceSuccessor(t *testing.T) {
	a := newApplier(Options{})
	for s := int64(1); s <= 4; s++ {
		a.mustOK(t, &Txn{Op: proto.OpCreateSession, Session: s, Req: &CreateSessionReq{Timeout: 1000}})
	}
	a.mustOK(t, createTxn("/lock", "", proto.ModePersistent, 0))
	// Names whose prefixes sort against their counters, as Curator's
	// protected names (a random GUID before the counter) do.
	var paths []string
	for i, p := range []struct {
		prefix  string
		session int64
	}{{"_c_f-lock-", 1}, {"_c_e-lock-", 2}, {"_c_a-lock-", 3}, {"_c_b-lock-", 4}} {
		r := a.mustOK(t, createTxn("/lock/"+p.prefix, "", proto.ModeEphemeralSequential, p.session))
		if want := fmt.Sprintf("/lock/%s%010d", p.prefix, i); r.Path != want {
			t.Fatalf("created %s, want %s", r.Path, want)
		}
		paths = append(paths, r.Path)
	}
	// A persistent sequential sibling (no session) and one without a
	// counter.
	a.mustOK(t, createTxn("/lock/q-", "", proto.ModePersistentSequential, 0))
	a.mustOK(t, createTxn("/lock/plain", "", proto.ModePersistent, 0))

	del := func(p string) {
		t.Helper()
		a.mustOK(t, &Txn{Op: proto.OpDelete, Session: 1, Req: &proto.DeleteRequest{Path: p, Version: -1}})
	}
	del(paths[0])
	if got := a.t.SequenceSuccessor(paths[0], 64); got != 2 {
		t.Fatalf("after deleting %s: successor's session %d, want 2", paths[0], got)
	}
	// The successor of a node in the middle, deleted by a waiter giving
	// up, skips nothing.
	del(paths[2])
	if got := a.t.SequenceSuccessor(paths[2], 64); got != 4 {
		t.Fatalf("after deleting %s: successor's session %d, want 4", paths[2], got)
	}
	// The last ephemeral node's successor is the persistent sequential
	// node: no session.
	if got := a.t.SequenceSuccessor(paths[3], 64); got != 0 {
		t.Fatalf("successor of the last one: session %d, want 0", got)
	}
	// Bounded: more children than the limit scans nothing.
	if got := a.t.SequenceSuccessor(paths[0], 2); got != 0 {
		t.Fatalf("with limit 2 (4 children): session %d, want 0", got)
	}
	for _, p := range []string{"/lock/plain", "/lock", "/", "/missing/x-0000000001", "nonsense"} {
		if got := a.t.SequenceSuccessor(p, 64); got != 0 {
			t.Fatalf("SequenceSuccessor(%q) = %d, want 0", p, got)
		}
	}
}

// The most a deletion's successor lookup costs: a parent at
// statemachine's limit (128 children).
func BenchmarkSequenceSuccessor128(b *testing.B) {
	a := newApplier(Options{})
	a.mustOK(b, &Txn{Op: proto.OpCreateSession, Session: 1, Req: &CreateSessionReq{Timeout: 1000}})
	a.mustOK(b, createTxn("/q", "", proto.ModePersistent, 0))
	for range 128 {
		a.mustOK(b, createTxn("/q/_c_0f2a9c1e-5d3b-4a7e-9c1d-2e3f4a5b6c7d-lock-", "", proto.ModeEphemeralSequential, 1))
	}
	p := "/q/_c_0f2a9c1e-5d3b-4a7e-9c1d-2e3f4a5b6c7d-lock-0000000000"
	b.ReportAllocs()
	for b.Loop() {
		if a.t.SequenceSuccessor(p, 128) != 1 {
			b.Fatal("no successor")
		}
	}
}
