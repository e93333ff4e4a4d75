package report

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/server/metrics"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/watch"
)

// fake is a Source with fixed answers; heavy counts Heavy's computations.
type fake struct {
	quorum, readOnly bool
	waiting          string
	mask             int64
	resets           int
	heavy            int
}

func (f *fake) Running() bool      { return f.quorum || f.readOnly }
func (f *fake) HasQuorum() bool    { return f.quorum }
func (f *fake) ReadOnly() bool     { return f.readOnly }
func (f *fake) Clustered() bool    { return true }
func (f *fake) IsLeader() bool     { return false }
func (f *fake) WaitingFor() string { return f.waiting }
func (f *fake) ServerStats() ServerStats {
	return ServerStats{Version: "v", Mode: "follower", AvgLat: 2}
}
func (f *fake) Gauges() metrics.Gauges { return metrics.Gauges{} }
func (f *fake) Conns() []ConnInfo {
	return []ConnInfo{{Remote: "127.0.0.1:5", InterestOps: 1, SessionID: 0x10, LastCxid: -1}}
}
func (f *fake) Conf() Conf              { return Conf{ClientPort: 2181} }
func (f *fake) ConfigDump() []string    { return nil }
func (f *fake) InitialConfig() string   { return "" }
func (f *fake) Environment() []EnvEntry { return []EnvEntry{{Key: "user.name", Value: "zk"}} }
func (f *fake) Monitor() []MonitorValue {
	return []MonitorValue{{Key: "avg_latency", Value: 1.0}, {Key: "zkgo_x", Value: 3, Own: true}}
}
func (f *fake) Watches() *watch.Manager           { return watch.NewManager() }
func (f *fake) SessionDump() SessionDump          { return SessionDump{} }
func (f *fake) DirSizes() (int64, int64)          { return 1, 2 }
func (f *fake) DigestLog() []tree.ZxidDigest      { return nil }
func (f *fake) LastSnapshot() (int64, int64)      { return -1, -1 }
func (f *fake) Leader() LeaderView                { return LeaderView{LeaderID: -1} }
func (f *fake) Observers() []ObserverInfo         { return nil }
func (f *fake) VotingMembers() []config.Server    { return nil }
func (f *fake) ZabState() ZabState                { return ZabState{} }
func (f *fake) ResetConnectionStats()             { f.resets++ }
func (f *fake) ResetServerStats()                 { f.resets++ }
func (f *fake) TraceMask() int64                  { return f.mask }
func (f *fake) SetTraceMask(m int64)              { f.mask = m }
func (f *fake) YieldLeadership() (int64, error)   { return 0, errors.New("not the leader") }
func (f *fake) RequestLeadership() (int64, error) { return 2, nil }
func (f *fake) CreateSnapshot() (uint64, error)   { return 7, nil }
func (f *fake) LogInfo() ([]KV, error)            { return []KV{{Key: "first_log_idx", Value: 1}}, nil }
func (f *fake) Heavy(key string, compute func() string) string {
	f.heavy++
	return compute()
}

// A member without a quorum answers the words that need one with
// ZooKeeper's text, and says what it waits for after it on srvr, stat
// and mntr only; ruok and isro still answer.
func TestWordsWithoutQuorum(t *testing.T) {
	f := &fake{waiting: "a majority of the voters"}
	if got, want := Word(f, "srvr"), NotServing+"zkgo: waiting for a majority of the voters\n"; got != want {
		t.Errorf("srvr: %q, want %q", got, want)
	}
	if got := Word(f, "dump"); got != NotServing {
		t.Errorf("dump: %q", got)
	}
	if got := Word(f, "ruok"); got != "imok" {
		t.Errorf("ruok: %q", got)
	}
	if got := Word(f, "isro"); got != "rw" {
		t.Errorf("isro: %q", got)
	}
	if f.resets != 0 {
		t.Error("a reset ran without a quorum")
	}
}

// The heavy words go through Source.Heavy; the others do not. mntr
// prints ZooKeeper's keys with zk_ and Java's doubles; zkgo's keys as they are.
func TestWordsServing(t *testing.T) {
	f := &fake{quorum: true}
	if got := Word(f, "cons"); !strings.Contains(got, " /127.0.0.1:5[1](queued=0,recved=0,sent=0,sid=0x10,lop=,est=0,to=0,lzxid=0x0") || f.heavy != 1 {
		t.Errorf("cons: %q (heavy %d)", got, f.heavy)
	}
	if got := Word(f, "mntr"); got != "zk_avg_latency\t1.0\nzkgo_x\t3\n" || f.heavy != 1 {
		t.Errorf("mntr: %q (heavy %d)", got, f.heavy)
	}
	if got := Word(f, "lgif"); got != "first_log_idx\t1\n" {
		t.Errorf("lgif: %q", got)
	}
	if got := Word(f, "ydld"); got != "Failed to yield leadership request to leader." {
		t.Errorf("ydld: %q", got)
	}
}

// Commands answer JSON in ZooKeeper's shape: an unknown name and a server
// that is not running keep the name as given, with the reason in error.
func TestRunCommands(t *testing.T) {
	f := &fake{quorum: true}
	decode := func(b []byte) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return m
	}
	if m := decode(Run(f, "nope", nil)); m["command"] != "nope" || m["error"] != "Unknown command: nope" {
		t.Errorf("unknown: %v", m)
	}
	if m := decode(Run(&fake{}, "srvr", nil)); m["command"] != "srvr" || m["error"] != "This ZooKeeper instance is not currently serving requests" {
		t.Errorf("not serving: %v", m)
	}
	if m := decode(Run(f, "stmk", map[string]string{"traceMask": "12"})); m["command"] != "set_trace_mask" || m["tracemask"] != 12.0 || f.mask != 12 {
		t.Errorf("stmk: %v (mask %d)", m, f.mask)
	}
	if m := decode(Run(f, "csnp", nil)); m["last_committed_log_idx"] != 7.0 || m["error"] != nil {
		t.Errorf("csnp: %v", m)
	}
	if p, ok := Operator("ydld"); !ok || p != "yield_leadership" {
		t.Errorf("Operator(ydld) = %q, %v", p, ok)
	}
	if _, ok := Operator("srvr"); ok {
		t.Error("srvr is an operator command")
	}
	// avg_latency is written as Jackson writes a double.
	if b := Run(f, "server_stats", nil); !strings.Contains(string(b), `"avg_latency": 2.0`) {
		t.Errorf("server_stats: %s", b)
	}
}
