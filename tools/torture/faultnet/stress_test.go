package faultnet

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNoGapAfterHeal races partitions and heals (and delay changes)
// against streams of counters: whatever a connection delivers is a
// prefix of what was sent on it, with no gap, however the faults race
// with the bytes. A connection that lost bytes may only end.
func TestNoGapAfterHeal(t *testing.T) {
	n := newNet(t, 3)
	s := startServer(t, false)
	addr, _ := n.Listen("c", "s", s.addr())

	var (
		wg        sync.WaitGroup
		delivered atomic.Int64
		gapMu     sync.Mutex // guards gaps
		gaps      []string
	)
	stop := make(chan struct{})

	// The member side: each connection must count 0, 1, 2... until it
	// ends.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			var m net.Conn
			select {
			case m = <-s.conns:
			case <-stop:
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var b [8]byte
				for want := uint64(0); ; want++ {
					if _, err := io.ReadFull(m, b[:]); err != nil {
						return
					}
					if got := binary.BigEndian.Uint64(b[:]); got != want {
						gapMu.Lock()
						gaps = append(gaps, "got "+itoa(int(got))+", want "+itoa(int(want)))
						gapMu.Unlock()
						return
					}
					delivered.Add(1)
				}
			}()
		}
	}()

	// Dialers: count on a connection until it fails, then dial again.
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					select {
					case <-stop:
					default:
						t.Error(err)
					}
					return
				}
				var next uint64
				for err == nil {
					var batch []byte
					for range 32 {
						batch = binary.BigEndian.AppendUint64(batch, next)
						next++
					}
					c.SetWriteDeadline(time.Now().Add(time.Second))
					_, err = c.Write(batch)
					select {
					case <-stop:
						c.Close()
						return
					case <-time.After(200 * time.Microsecond):
					}
				}
				c.Close() // reset by a heal, or blocked: dial again
			}
		}()
	}

	// The controller.
	r := rand.New(rand.NewPCG(1, 2))
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		switch r.IntN(7) {
		case 0:
			n.Partition("c", "s")
		case 1:
			n.PartitionOneWay("c", "s")
		case 2:
			n.PartitionOneWay("s", "c")
		case 3:
			n.Isolate("s")
		case 4:
			n.HealNode("s")
		case 5:
			n.Delay("c", "s", time.Duration(r.IntN(3))*time.Millisecond, time.Duration(r.IntN(3))*time.Millisecond)
		default:
			n.HealAll()
		}
		time.Sleep(time.Duration(1+r.IntN(10)) * time.Millisecond)
	}
	n.ClearAll()
	close(stop)
	n.Close() // ends the member side's connections
	wg.Wait()

	for _, g := range gaps {
		t.Error("a connection resumed with a gap:", g)
	}
	st := n.Stats()[Dir{"c", "s"}]
	t.Logf("delivered %d counters; stats %+v", delivered.Load(), st)
	if delivered.Load() == 0 || st.BytesLost == 0 || st.Resets == 0 {
		t.Errorf("the run exercised too little: delivered %d, stats %+v", delivered.Load(), st)
	}
}
