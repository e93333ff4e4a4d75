package raftnode

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/storage"
)

// benchSM wakes the proposer of each applied entry (identified by the
// first 8 bytes of its data).
type benchSM struct {
	mu      sync.Mutex // guards waiters
	waiters map[uint64]chan struct{}
}

func (s *benchSM) Apply(ents []raftpb.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range ents {
		id := binary.BigEndian.Uint64(e.Data)
		if ch := s.waiters[id]; ch != nil {
			close(ch)
			delete(s.waiters, id)
		}
	}
}

func (s *benchSM) Snapshot() (func(io.Writer) error, error) {
	return func(w io.Writer) error {
		if w == nil {
			return nil
		}
		_, err := w.Write([]byte("-"))
		return err
	}, nil
}
func (s *benchSM) Restore(r io.Reader, _ uint64) error { return nil }

func (s *benchSM) wait(id uint64) chan struct{} {
	ch := make(chan struct{})
	s.mu.Lock()
	s.waiters[id] = ch
	s.mu.Unlock()
	return ch
}

// BenchmarkPropose measures committed proposals per second: 64 goroutines
// each propose a 128-byte entry and wait until it is applied, then
// propose the next.
func BenchmarkPropose(b *testing.B) {
	for _, members := range []int{1, 3} {
		for _, noSync := range []bool{false, true} {
			mode := "sync"
			if noSync {
				mode = "nosync"
			}
			b.Run(fmt.Sprintf("members=%d/%s", members, mode), func(b *testing.B) {
				benchPropose(b, members, noSync)
			})
		}
	}
}

func benchPropose(b *testing.B, members int, noSync bool) {
	const proposers = 64
	nw := NewMemNetwork()
	var peers []Peer
	for id := uint64(1); id <= uint64(members); id++ {
		peers = append(peers, Peer{ID: id})
	}
	nodes := map[uint64]*Node{}
	sms := map[uint64]*benchSM{}
	for _, p := range peers {
		st, err := storage.Open(b.TempDir(), storage.Options{NoSync: noSync})
		if err != nil {
			b.Fatal(err)
		}
		sm := &benchSM{waiters: map[uint64]chan struct{}{}}
		n, err := Start(Config{ID: p.ID, Peers: peers, Storage: st, StateMachine: sm, Transport: nw.Transport(p.ID), TickInterval: testTick})
		if err != nil {
			b.Fatal(err)
		}
		nodes[p.ID], sms[p.ID] = n, sm
		defer st.Close()
		defer n.Stop()
	}
	var lead uint64
	deadline := time.After(waitTimeout)
	for lead == 0 {
		select {
		case lc := <-nodes[1].LeaderChanges():
			lead = lc.Leader
		case <-deadline:
			b.Fatal("no leader")
		}
	}
	n, sm := nodes[lead], sms[lead]

	var next atomic.Uint64
	var wg sync.WaitGroup
	todo := int64(b.N)
	var left atomic.Int64
	left.Store(todo)
	data := make([]byte, 128)
	b.ResetTimer()
	start := time.Now()
	for range proposers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := make([]byte, len(data))
			for left.Add(-1) >= 0 {
				id := next.Add(1)
				binary.BigEndian.PutUint64(d, id)
				ch := sm.wait(id)
				if err := n.Propose(context.Background(), append([]byte(nil), d...)); err != nil {
					b.Error(err)
					return
				}
				select {
				case <-ch:
				case <-time.After(waitTimeout):
					b.Error("proposal not applied")
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "proposals/s")
}
