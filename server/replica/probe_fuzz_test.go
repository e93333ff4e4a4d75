package replica

import (
	"encoding/json"
	"log/slog"
	"testing"
)

// FuzzAnswerProbe: a probe request of any bytes, from anyone, is
// answered with JSON and never panics a member (one that has not started
// raft, here: the state a stranger meets while a member forms).
func FuzzAnswerProbe(f *testing.F) {
	for _, q := range []probeRequest{
		{Op: "status"},
		{Op: "join", MyID: 4, ID: raftID(4, 9), Addr: "127.0.0.1:2888"},
		{Op: "join", MyID: 2, ID: raftID(2, 1), Via: new(int64)},
		{Op: "status", Ensemble: 7, Servers: []string{"server.1=a:1:2"}},
	} {
		b, _ := json.Marshal(&q)
		f.Add(b)
	}
	f.Add([]byte("{"))
	r := &Replica{opts: &Config{ServerID: 1, Peers: []Peer{{ID: 1, Addr: "127.0.0.1:1"}, {ID: 2, Addr: "127.0.0.1:2"}}},
		log: slog.New(slog.DiscardHandler)}
	f.Fuzz(func(t *testing.T, req []byte) {
		ans := r.answerProbe(req, nil)
		var a probeAnswer
		if err := json.Unmarshal(ans, &a); err != nil {
			t.Fatalf("answer %q is not JSON: %v", ans, err)
		}
		r.view.mu.Lock()
		n := len(r.view.joiners)
		r.view.mu.Unlock()
		if n > maxJoiners {
			t.Fatalf("%d joiners remembered", n)
		}
	})
}

// Anyone may ask to join; what is remembered of them stays bounded.
func TestJoinersBounded(t *testing.T) {
	r := &Replica{opts: &Config{ServerID: 1, Peers: []Peer{{ID: 1, Addr: "127.0.0.1:1"}}}, log: slog.New(slog.DiscardHandler)}
	for id := int64(2); id < 256; id++ {
		q, _ := json.Marshal(&probeRequest{Op: "join", MyID: id, ID: raftID(id, 1), Addr: "10.0.0.1:2888"})
		r.answerProbe(q, nil)
	}
	if n := len(r.view.joiners); n > maxJoiners || n == 0 {
		t.Fatalf("%d joiners remembered (bound %d)", n, maxJoiners)
	}
	last := int64(255)
	if _, ok := r.joiner(last); !ok {
		t.Fatal("the newest joiner was forgotten")
	}
}
