package check

import (
	"testing"
	"time"
)

func wr(change Change, path string, call, ret int64, out Outcome, zxid int64) Write {
	return Write{Client: "writer", Path: path, Change: change, Call: ms(call), Return: ms(ret), Outcome: out, Zxid: zxid}
}

func wev(at int64, change Change, path string) WatchEvent {
	return WatchEvent{Watch: "w1", At: ms(at), Change: change, Path: path}
}

func down(at int64) ConnChange { return ConnChange{Client: "c9", At: ms(at)} }
func up(at int64) ConnChange   { return ConnChange{Client: "c9", At: ms(at), Connected: true} }

func TestWatches(t *testing.T) {
	recursive := []Watch{{ID: "w1", Client: "c9", Path: "/w", Recursive: true}}
	writes := []Write{
		wr(Created, "/w/a", 10, 20, OK, 10),
		wr(DataChanged, "/w/a", 30, 40, OK, 11),
		wr(Created, "/w/b", 50, 60, OK, 12),
		wr(Deleted, "/w/a", 70, 80, OK, 13),
		wr(Created, "/x", 70, 80, OK, 14),      // not watched
		wr(Created, "/w/c", 70, 80, Failed, 0), // did not happen
	}
	good := []WatchEvent{
		wev(25, Created, "/w/a"),
		wev(45, DataChanged, "/w/a"),
		wev(65, Created, "/w/b"),
		wev(85, Deleted, "/w/a"),
	}
	without := func(i int) []WatchEvent { return append(append([]WatchEvent{}, good[:i]...), good[i+1:]...) }
	tests := []struct {
		name    string
		watches []Watch
		writes  []Write
		events  []WatchEvent
		conns   []ConnChange
		slop    time.Duration
		want    verdict
	}{
		{"good", recursive, writes, good, nil, 0, verdict{ok: true}},
		{"a span may start and end anywhere", recursive, writes, good[1:3], nil, 0, verdict{ok: true}},
		{"gap", recursive, writes, without(1), nil, 0, verdict{
			problem: []string{"w1", "got Created /w/b where DataChanged /w/a (zxid 0xb) was next"},
			evidence: []string{"w1 event #1 at 0.025000s: Created /w/a", "matched writer create /w/a", "next committed change: writer setData /w/a",
				"w1 event #2 at 0.065000s: Created /w/b"}}},
		{"out of order", recursive, writes, []WatchEvent{good[0], good[2], wev(66, DataChanged, "/w/a"), good[3]}, nil, 0, verdict{
			problem: []string{"got Created /w/b where DataChanged /w/a"}}},
		{"duplicate", recursive, writes, []WatchEvent{good[0], good[0], good[1]}, nil, 0, verdict{
			problem: []string{"got Created /w/a where DataChanged /w/a"}, evidence: []string{"event #2"}}},
		{"duplicate of the last change", recursive, writes, append(append([]WatchEvent{}, good...), wev(90, Deleted, "/w/a")), nil, 0, verdict{
			problem: []string{"after the last committed change"}}},
		{"forged event", recursive, writes, []WatchEvent{good[0], wev(30, Created, "/w/zzz")}, nil, 0, verdict{
			problem: []string{"got Created /w/zzz where DataChanged /w/a"}}},
		{"an event no write makes", recursive, writes, []WatchEvent{wev(30, Created, "/w/zzz")}, nil, 0, verdict{
			problem: []string{"no write of that path makes that event"}}},
		{"an event before its write was called", recursive, writes, []WatchEvent{wev(45, Created, "/w/b")}, nil, 0, verdict{
			problem: []string{"before any write that makes it was called"}, evidence: []string{"writer create /w/b"}}},
		{"a failed write makes no event", recursive, writes, []WatchEvent{wev(85, Created, "/w/c")}, nil, 0, verdict{
			problem: []string{"no write of that path makes that event"}}},
		{"children events are not for recursive watches", recursive, writes, []WatchEvent{wev(25, ChildrenChanged, "/w")}, nil, 0, verdict{
			problem: []string{"ChildrenChanged /w"}}},
		{"a gap across a reconnection", recursive, writes, without(1), []ConnChange{down(47), up(48)}, 0, verdict{ok: true}},
		{"a repeat across a reconnection", recursive, writes, append(append([]WatchEvent{}, good[:3]...), wev(90, DataChanged, "/w/a"), wev(91, Created, "/w/b")),
			[]ConnChange{down(87), up(88)}, 0, verdict{ok: true}},
		{"a gap within the span after a reconnection", recursive, writes, without(2), []ConnChange{down(27), up(28)}, 0, verdict{
			problem: []string{"got Deleted /w/a where Created /w/b"}}},
		{"the boundary within slop of the observed disconnection", recursive, writes, without(2), []ConnChange{down(43), up(44)},
			5 * time.Millisecond, verdict{ok: true}},
		{"the boundary beyond slop", recursive, writes, without(2), []ConnChange{down(43), up(44)},
			time.Millisecond, verdict{problem: []string{"got Deleted /w/a where Created /w/b"}}},
		{"another client's disconnection splits nothing", recursive, writes, without(1),
			[]ConnChange{{Client: "other", At: ms(47)}}, 0, verdict{problem: []string{"where DataChanged /w/a"}}},
		{"fine only if an unknown write happened", recursive, []Write{
			wr(Created, "/w/a", 10, 20, OK, 10),
			wr(DataChanged, "/w/a", 30, 1000, Unknown, 0),
			wr(Deleted, "/w/a", 70, 80, OK, 13),
		}, []WatchEvent{good[0], good[1], good[3]}, nil, 0, verdict{ok: true}},
		{"an unknown write may not have happened", recursive, []Write{
			wr(Created, "/w/a", 10, 20, OK, 10),
			wr(DataChanged, "/w/a", 30, 1000, Unknown, 0),
			wr(Deleted, "/w/a", 70, 80, OK, 13),
		}, []WatchEvent{good[0], good[3]}, nil, 0, verdict{ok: true}},
		{"an unknown write explains one event only", recursive, []Write{
			wr(Created, "/w/a", 10, 20, OK, 10),
			wr(DataChanged, "/w/a", 30, 1000, Unknown, 0),
			wr(Deleted, "/w/a", 70, 80, OK, 13),
		}, []WatchEvent{good[0], good[1], wev(46, DataChanged, "/w/a"), good[3]}, nil, 0, verdict{
			problem: []string{"got DataChanged /w/a where Deleted /w/a"}}},
		{"the same events after a definite failure", recursive, []Write{
			wr(Created, "/w/a", 10, 20, OK, 10),
			wr(DataChanged, "/w/a", 30, 40, Failed, 0),
			wr(Deleted, "/w/a", 70, 80, OK, 13),
		}, []WatchEvent{good[0], good[1], good[3]}, nil, 0, verdict{problem: []string{"DataChanged /w/a"}}},
		{"an unknown write the final state shows, with its zxid, must be reported", recursive, []Write{
			wr(Created, "/w/a", 10, 20, OK, 10),
			wr(DataChanged, "/w/a", 30, 1000, Unknown, 11),
			wr(Deleted, "/w/a", 70, 80, OK, 13),
		}, []WatchEvent{good[0], good[3]}, nil, 0, verdict{problem: []string{"where DataChanged /w/a (zxid 0xb) was next"}}},
		{"persistent: children and own data", []Watch{{ID: "w1", Client: "c9", Path: "/w"}}, []Write{
			wr(DataChanged, "/w", 0, 5, OK, 9),
			wr(Created, "/w/a", 10, 20, OK, 10),
			wr(DataChanged, "/w/a", 30, 40, OK, 11), // not reported
			wr(Deleted, "/w/a", 70, 80, OK, 13),
			wr(Created, "/w/a/deep", 70, 80, OK, 14), // not reported
		}, []WatchEvent{wev(6, DataChanged, "/w"), wev(25, ChildrenChanged, "/w"), wev(85, ChildrenChanged, "/w")}, nil, 0, verdict{ok: true}},
		{"persistent: a missed child event", []Watch{{ID: "w1", Client: "c9", Path: "/w"}}, []Write{
			wr(Created, "/w/a", 10, 20, OK, 10),
			wr(Created, "/w/b", 30, 40, OK, 11),
			wr(DataChanged, "/w", 50, 60, OK, 12),
		}, []WatchEvent{wev(25, ChildrenChanged, "/w"), wev(65, DataChanged, "/w")}, nil, 0, verdict{
			problem: []string{"got DataChanged /w where ChildrenChanged /w (zxid 0xb) was next"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := WatchHistory{Watches: tt.watches, Writes: tt.writes, Events: tt.events, Conns: tt.conns}
			expectResult(t, Watches(h, WatchOptions{Slop: tt.slop}), tt.want)
		})
	}
}

// TestWatchesLong: a long span of changes to one path, where every event
// matches many writes, checks quickly and finds a gap at its end.
func TestWatchesLong(t *testing.T) {
	const n = 3000
	var writes []Write
	var events []WatchEvent
	for i := range int64(n) {
		writes = append(writes, wr(DataChanged, "/w", 10*i, 10*i+5, OK, 100+i))
		events = append(events, wev(10*i+6, DataChanged, "/w"))
	}
	writes = append(writes, wr(Created, "/w/x", 10*n, 10*n+5, OK, 100+n), wr(Deleted, "/w/x", 10*n+10, 10*n+15, OK, 101+n))
	h := WatchHistory{Watches: []Watch{{ID: "w1", Client: "c9", Path: "/w", Recursive: true}}, Writes: writes, Events: events}
	start := time.Now()
	expectResult(t, Watches(h, WatchOptions{}), verdict{ok: true})
	h.Events = append(h.Events, wev(10*n+16, Deleted, "/w/x"))
	expectResult(t, Watches(h, WatchOptions{}), verdict{problem: []string{"got Deleted /w/x where Created /w/x"}})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}
