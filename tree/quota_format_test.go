package tree

import "testing"

// ZooKeeper's own StatsTrack text reads back: the '=' after bytes that
// toString writes before extra keys is not part of the number.
func TestStatsTrackZooKeeperText(t *testing.T) {
	st := ParseStats([]byte("count=4,bytes=5=;countHardLimit=10;byteHardLimit=20"))
	if st.Get("count") != 4 || st.Get("bytes") != 5 || st.Get("countHardLimit") != 10 || st.Get("byteHardLimit") != 20 {
		t.Fatalf("parsed %v", st)
	}
	if got := string(st.Format()); got != "count=4,bytes=5=;byteHardLimit=20;countHardLimit=10" {
		t.Fatalf("formatted %q", got)
	}
	if got := string(StatsTrack{"count": 1, "bytes": 2}.Format()); got != "count=1,bytes=2" {
		t.Fatalf("formatted %q", got)
	}
}
