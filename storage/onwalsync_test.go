package storage

import (
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// OnWALSync is told of each Save that fsyncs, with its entries; not of
// commit-only hard states (no fsync), nor with NoSync.
func TestOnWALSync(t *testing.T) {
	type call struct{ entries int }
	tests := []struct {
		name   string
		noSync bool
		want   []call
	}{
		{name: "sync", want: []call{{10}, {0}, {2}}},
		{name: "no sync", noSync: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []call
			s := openT(t, t.TempDir(), Options{NoSync: tt.noSync, OnWALSync: func(entries int, d time.Duration) {
				if d < 0 {
					t.Errorf("negative duration %v", d)
				}
				got = append(got, call{entries})
			}})
			defer closeT(t, s)
			saves := []struct {
				hs   raftpb.HardState
				ents []raftpb.Entry
			}{
				{raftpb.HardState{Term: 1, Vote: 1}, mkEntries(1, 1, 10, 10)},
				{raftpb.HardState{Term: 2, Vote: 1, Commit: 3}, nil}, // a new term: fsynced
				{raftpb.HardState{Term: 2, Vote: 1, Commit: 5}, nil}, // commit only: not fsynced
				{raftpb.HardState{}, mkEntries(2, 11, 12, 10)},
			}
			for _, sv := range saves {
				if err := s.Save(sv.hs, sv.ents); err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("calls %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("calls %v, want %v", got, tt.want)
				}
			}
		})
	}
}
