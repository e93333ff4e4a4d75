package check

import "testing"

// seqC builds a sequential create under /q.
func seqC(client, prefix string, call, ret int64, out Outcome, name string) SeqCreate {
	return SeqCreate{Client: client, Parent: "/q", Prefix: prefix, Call: ms(call), Return: ms(ret), Outcome: out, Name: name}
}

// seqL builds a listing of /q.
func seqL(call, ret int64, names ...string) SeqListing {
	return SeqListing{Client: "lister", Parent: "/q", Call: ms(call), Return: ms(ret), Names: names}
}

func TestSequential(t *testing.T) {
	tests := []struct {
		name     string
		creates  []SeqCreate
		listings []SeqListing
		durable  bool
		want     verdict
	}{
		{"good", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, OK, "/q/a-1-0000000001"),
			seqC("c2", "b-1-", 5, 15, OK, "/q/b-1-0000000000"), // concurrent with a-1: either order
			seqC("c2", "b-2-", 20, 30, OK, "b-2-0000000002"),
		}, []SeqListing{seqL(40, 50, "a-1-0000000001", "b-1-0000000000", "b-2-0000000002", "not-sequential")},
			true, verdict{ok: true}},
		{"duplicated suffix", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, OK, "/q/a-1-0000000001"),
			seqC("c2", "b-1-", 20, 30, OK, "/q/b-1-0000000001"),
		}, nil, false, verdict{
			problem:  []string{"sequence number 1", "a-1-0000000001", "b-1-0000000001"},
			evidence: []string{"c1 create-sequential /q/a-1-", "c2 create-sequential /q/b-1-"}}},
		{"suffix of an unknown create seen in a listing reused after a failover", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, Unknown, ""),
			seqC("c2", "b-1-", 40, 50, OK, "/q/b-1-0000000005"),
		}, []SeqListing{seqL(20, 30, "a-1-0000000005")}, false, verdict{
			problem:  []string{"sequence number 5", "a-1-0000000005", "b-1-0000000005"},
			evidence: []string{"c1 create-sequential /q/a-1- [0.000000s, 0.010000s] -> unknown, listed at", "c2 create-sequential /q/b-1-"}}},
		{"same name answered twice", []SeqCreate{
			seqC("c1", "", 0, 10, OK, "/q/n-0000000001"),
			seqC("c2", "", 20, 30, OK, "/q/n-0000000001"),
		}, nil, false, verdict{problem: []string{"same name", "n-0000000001"}, evidence: []string{"c1 ", "c2 "}}},
		{"not increasing in real time", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, OK, "/q/a-1-0000000005"),
			seqC("c2", "b-1-", 20, 30, OK, "/q/b-1-0000000003"),
		}, nil, false, verdict{
			problem:  []string{"b-1-0000000003 was created after a-1-0000000005 existed"},
			evidence: []string{"c1 create-sequential", "c2 create-sequential"}}},
		{"smaller than a node a listing showed before the create was called", []SeqCreate{
			seqC("c2", "b-1-", 20, 30, OK, "/q/b-1-0000000003"),
		}, []SeqListing{seqL(0, 10, "x-0000000009")}, false, verdict{
			problem:  []string{"b-1-0000000003", "x-0000000009"},
			evidence: []string{"lister getChildren /q [0.000000s, 0.010000s] lists x-0000000009"}}},
		{"forged answer: not the prefix asked for", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, OK, "/q/zz-0000000001"),
		}, nil, false, verdict{problem: []string{`"zz-0000000001"`, `"a-1-"`}, evidence: []string{"c1 create-sequential"}}},
		{"forged answer: no sequence number", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, OK, "/q/a-1-"),
		}, nil, false, verdict{problem: []string{"sequence number"}}},
		{"one create, two names", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, OK, "/q/a-1-0000000001"),
		}, []SeqListing{seqL(20, 30, "a-1-0000000001", "a-1-0000000002")}, false, verdict{
			problem: []string{"answered a-1-0000000001", "a-1-0000000002"}}},
		{"listed before its create was called", []SeqCreate{
			seqC("c1", "a-1-", 20, 30, OK, "/q/a-1-0000000001"),
		}, []SeqListing{seqL(0, 10, "a-1-0000000001")}, false, verdict{
			problem: []string{"before its create was called"}, evidence: []string{"lists a-1-0000000001", "c1 create-sequential"}}},
		{"listed before the create that answered its name was called", []SeqCreate{
			seqC("c1", "", 20, 30, OK, "/q/n-0000000003"),
		}, []SeqListing{seqL(0, 10, "n-0000000003")}, false, verdict{
			problem: []string{"n-0000000003 before its create was called"}}},
		{"listed though its create failed", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, Failed, ""),
		}, []SeqListing{seqL(20, 30, "a-1-0000000001")}, false, verdict{
			problem: []string{"a-1-0000000001", "failed"}, evidence: []string{"-> failed"}}},
		{"a listing fine only if an unknown create happened", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, Unknown, ""),
			seqC("c2", "b-1-", 40, 50, OK, "/q/b-1-0000000008"),
		}, []SeqListing{seqL(20, 30, "a-1-0000000007")}, true, verdict{ok: true}},
		{"the unknown create's node is ordered by its listing", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, Unknown, ""),
			seqC("c2", "b-1-", 40, 50, OK, "/q/b-1-0000000006"),
		}, []SeqListing{seqL(20, 30, "a-1-0000000007")}, false, verdict{
			problem: []string{"b-1-0000000006 was created after a-1-0000000007 existed"}}},
		{"a listing names a child twice", nil, []SeqListing{seqL(0, 10, "a-0000000001", "a-0000000001")}, false,
			verdict{problem: []string{"twice"}}},
		{"durable: an acknowledged create missing from a later listing", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, OK, "/q/a-1-0000000001"),
		}, []SeqListing{seqL(20, 30)}, true, verdict{
			problem: []string{"a-1-0000000001", "later listing"}, evidence: []string{"does not list a-1-0000000001"}}},
		{"not durable: nodes may go", []SeqCreate{
			seqC("c1", "a-1-", 0, 10, OK, "/q/a-1-0000000001"),
		}, []SeqListing{seqL(20, 30)}, false, verdict{ok: true}},
		{"durable: a listed node vanishes", nil, []SeqListing{seqL(0, 10, "a-0000000001"), seqL(20, 30)}, true,
			verdict{problem: []string{"a-0000000001"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Sequential(SequentialHistory{Creates: tt.creates, Listings: tt.listings}, SequentialOptions{Durable: tt.durable})
			expectResult(t, got, tt.want)
			if got.Checked != len(tt.creates)+len(tt.listings) {
				t.Errorf("checked %d", got.Checked)
			}
		})
	}
}

// TestSequentialParents: suffixes are per parent.
func TestSequentialParents(t *testing.T) {
	a := seqC("c1", "a-", 0, 10, OK, "/q/a-0000000001")
	b := seqC("c2", "b-", 20, 30, OK, "/p/b-0000000001")
	b.Parent = "/p"
	expectResult(t, Sequential(SequentialHistory{Creates: []SeqCreate{a, b}}, SequentialOptions{}), verdict{ok: true})
}
