package replica

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/storage"
)

// A pending member finds a formation in its own log, applied or not, and
// only that one: what formationRefused adopts when a member holding it
// is refused.
func TestLogHoldsFormation(t *testing.T) {
	st, err := storage.Open(t.TempDir(), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := &Replica{}
	r.setStorage(st, 1)
	const chosen, other = 0x5eed5eed5eed5eed, 0x0ddba11c0ffee
	if r.logHoldsFormation(chosen) {
		t.Fatal("an empty log holds a formation")
	}
	data := func(e *statemachine.Entry) []byte {
		var enc jute.Encoder
		statemachine.AppendEntry(&enc, e)
		return enc.Bytes()
	}
	ents := []raftpb.Entry{
		{Term: 1, Index: 1},
		{Term: 1, Index: 2, Data: data(statemachine.SyncEntry())},
		{Term: 2, Index: 3, Data: data(statemachine.FormationEntry(chosen))},
		{Term: 2, Index: 4, Data: data(statemachine.TouchEntry([]int64{7}))},
	}
	if err := st.Save(raftpb.HardState{Term: 2, Commit: 2}, ents); err != nil {
		t.Fatal(err)
	}
	if !r.logHoldsFormation(chosen) {
		t.Fatal("the formation logged (not yet committed) is not found")
	}
	if r.logHoldsFormation(other) {
		t.Fatal("a formation not in the log is found")
	}
}
