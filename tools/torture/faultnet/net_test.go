package faultnet

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestEcho(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, true)
	addr, err := n.Listen("c", "s", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr)
	write(t, c, []byte("hello"))
	if got := readN(t, c, 5); string(got) != "hello" {
		t.Fatalf("echo %q", got)
	}

	// A stream larger than the queue and the chunks, written while it is
	// read back, comes back whole.
	big := make([]byte, 3*MaxQueuedBytes/2)
	rand.Read(big)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(big)
		errc <- err
	}()
	if got := readN(t, c, len(big)); !bytes.Equal(got, big) {
		t.Fatal("the echoed stream differs")
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestListenBadLink(t *testing.T) {
	n := newNet(t, 1)
	for _, l := range []Dir{{"", "s"}, {"c", ""}, {"c", "c"}} {
		if _, err := n.Listen(l.From, l.To, "127.0.0.1:1"); !errors.Is(err, ErrLink) {
			t.Errorf("Listen(%v): %v, want ErrLink", l, err)
		}
	}
	n.Close()
	if _, err := n.Listen("c", "s", "127.0.0.1:1"); !errors.Is(err, ErrClosed) {
		t.Errorf("Listen after Close: %v, want ErrClosed", err)
	}
}

// A partition both ways: the open connection's bytes are lost both
// ways, writes still succeed, a new connection is accepted but its bytes
// do not arrive either.
func TestPartition(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, false)
	addr, _ := n.Listen("c", "s", s.addr())
	c := dial(t, addr)
	m := s.accept(t)
	write(t, c, []byte("before"))
	readN(t, m, 6)

	n.Partition("c", "s")
	write(t, c, []byte("lost"))
	write(t, m, []byte("lost too"))
	expectQuiet(t, m)
	expectQuiet(t, c)

	c2 := dial(t, addr)
	m2 := s.accept(t) // the proxy dials the member
	write(t, c2, []byte("hello?"))
	expectQuiet(t, m2)
	write(t, m2, []byte("ack"))
	expectQuiet(t, c2)

	st := n.Stats()
	if got := st[Dir{"c", "s"}]; got.BytesLost < 4+6 || got.Conns != 2 {
		t.Errorf("c->s stats %+v", got)
	}
	if got := st[Dir{"s", "c"}]; got.BytesLost < 8+3 {
		t.Errorf("s->c stats %+v", got)
	}
}

// Heal resets the connections that lost bytes (both ends see it), keeps
// a connection that lost nothing, and new connections work.
func TestHealResetsGappedConnections(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, false)
	addr, _ := n.Listen("c", "s", s.addr())
	gapped := dial(t, addr)
	gappedM := s.accept(t)
	idle := dial(t, addr)
	idleM := s.accept(t)

	n.Partition("c", "s")
	write(t, gapped, []byte("lost"))
	waitFor(t, "bytes discarded", func() bool { return n.Stats()[Dir{"c", "s"}].BytesLost == 4 })
	expectQuiet(t, gappedM)

	n.Heal("c", "s")
	expectClosed(t, gapped)
	expectClosed(t, gappedM)
	if got := n.Stats()[Dir{"c", "s"}].Resets; got != 1 {
		t.Errorf("Resets %d, want 1", got)
	}

	write(t, idle, []byte("still here"))
	if got := readN(t, idleM, 10); string(got) != "still here" {
		t.Fatalf("idle connection carried %q", got)
	}
	fresh := dial(t, addr)
	freshM := s.accept(t)
	write(t, freshM, []byte("new"))
	if got := readN(t, fresh, 3); string(got) != "new" {
		t.Fatalf("new connection carried %q", got)
	}
}

// A connection whose lost direction is still blocked by an isolation is
// not reset by healing the pair; HealNode lifts the isolation and resets
// it.
func TestIsolate(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, false)
	addr, _ := n.Listen("c", "s", s.addr())
	c := dial(t, addr)
	m := s.accept(t)

	n.Isolate("s")
	write(t, c, []byte("x"))
	expectQuiet(t, m)
	n.Heal("c", "s") // no pair partition to lift: isolation stays
	write(t, c, []byte("y"))
	expectQuiet(t, m)
	expectQuiet(t, c)

	n.HealNode("s")
	expectClosed(t, c)
	c2 := dial(t, addr)
	m2 := s.accept(t)
	write(t, c2, []byte("z"))
	readN(t, m2, 1)
}

// A one-way partition loses one direction's bytes only.
func TestPartitionOneWay(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, false)
	addr, _ := n.Listen("c", "s", s.addr())
	c := dial(t, addr)
	m := s.accept(t)

	n.PartitionOneWay("c", "s")
	write(t, c, []byte("lost"))
	write(t, m, []byte("flows"))
	if got := readN(t, c, 5); string(got) != "flows" {
		t.Fatalf("got %q", got)
	}
	expectQuiet(t, m)

	n.PartitionOneWay("s", "c") // now both ways
	write(t, m, []byte("lost"))
	expectQuiet(t, c)
	n.HealAll()
	expectClosed(t, c)
}

func TestDelay(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, false)
	addr, _ := n.Listen("c", "s", s.addr())
	c := dial(t, addr)
	m := s.accept(t)

	const d = 150 * time.Millisecond
	n.Delay("c", "s", d, 0)
	start := time.Now()
	write(t, c, []byte("late"))
	readN(t, m, 4)
	if took := time.Since(start); took < d {
		t.Fatalf("delivered after %v, want at least %v", took, d)
	}

	// With jitter larger than the gap between chunks, order is kept.
	n.Delay("c", "s", time.Millisecond, 20*time.Millisecond)
	var want []byte
	for i := range 100 {
		b := []byte{byte(i)}
		want = append(want, b...)
		write(t, c, b)
		time.Sleep(100 * time.Microsecond) // pacing: separate chunks
	}
	if got := readN(t, m, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("order lost: %v", got)
	}

	n.Delay("c", "s", 0, 0)
	write(t, c, []byte("now"))
	readN(t, m, 3)
}

// A full queue stops the reader: a sender whose bytes are delayed for
// long is blocked by TCP backpressure, and Close unblocks it.
func TestBackpressure(t *testing.T) {
	n := New(1, nil)
	defer n.Close()
	s := startServer(t, false)
	addr, _ := n.Listen("c", "s", s.addr())
	c := dial(t, addr)
	s.accept(t)
	n.Delay("c", "s", time.Hour, 0)

	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(make([]byte, 8*MaxQueuedBytes))
		errc <- err
	}()
	select {
	case err := <-errc:
		t.Fatalf("a write of 8 queues returned (%v) while nothing was delivered", err)
	case <-time.After(time.Second):
	}
	n.Close()
	c.SetWriteDeadline(time.Now().Add(eventually))
	if err := <-errc; err == nil {
		t.Fatal("the blocked write succeeded after Close")
	}
}

func TestDropFrames(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, false)
	addr, _ := n.Listen("1", "2", s.addr())
	n.DropFrames("1", "2", 1)
	n.DropFrames("2", "1", 1)
	client, member := raftPair(t, addr, s) // hello and ack pass

	stream, _ := msgs(1, 3)
	write(t, client, stream)
	waitFor(t, "3 frames dropped", func() bool { return n.Stats()[Dir{"1", "2"}].FramesDropped == 3 })
	n.DropFrames("1", "2", 0)
	stream, _ = msgs(4, 1)
	write(t, client, stream)
	if got := readFrame(t, member); string(got) != "m4" {
		t.Fatalf("first frame after the drops is %q, want m4", got)
	}

	if st := n.Stats()[Dir{"1", "2"}]; st.Frames != 2 || st.FramesDropped != 3 {
		t.Errorf("stats %+v, want 2 frames (hello, m4) and 3 dropped", st)
	}
}

func TestReorderFrames(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, false)
	addr, _ := n.Listen("1", "2", s.addr())
	n.ReorderFrames("1", "2", 1)
	n.ReorderFrames("2", "1", 1)
	client, member := raftPair(t, addr, s)

	stream, _ := msgs(1, 4)
	write(t, client, stream)
	for _, want := range []string{"m2", "m1", "m4", "m3"} {
		if got := readFrame(t, member); string(got) != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	// A lone frame is held ReorderHold at most.
	stream, _ = msgs(5, 1)
	write(t, client, stream)
	if got := readFrame(t, member); string(got) != "m5" {
		t.Fatalf("got %q, want m5", got)
	}
	if got := n.Stats()[Dir{"1", "2"}].FramesReordered; got != 2 {
		t.Errorf("FramesReordered %d, want 2", got)
	}
}

// The same seed makes the same choices for the same frames.
func TestSeedReplays(t *testing.T) {
	run := func(seed uint64) string {
		n := newNet(t, seed)
		s := startServer(t, false)
		addr, _ := n.Listen("1", "2", s.addr())
		n.DropFrames("1", "2", 0.5)
		client, member := raftPair(t, addr, s)
		write(t, client, msgsBytes(1, 200))
		waitFor(t, "200 frames handled", func() bool {
			st := n.Stats()[Dir{"1", "2"}]
			return st.Frames-1+st.FramesDropped == 200 // the hello is not counted
		})
		client.Close()
		member.SetReadDeadline(time.Now().Add(eventually))
		got, err := io.ReadAll(member)
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	a, b, other := run(7), run(7), run(8)
	if a != b {
		t.Fatal("the same seed dropped other frames")
	}
	if a == other {
		t.Error("another seed dropped the same frames (possible, but unlikely)")
	}
	if len(a) == 0 || len(a) == len(msgsBytes(1, 200)) {
		t.Errorf("%d bytes arrived: p=0.5 should drop some and keep some", len(a))
	}
}

func msgsBytes(first, n int) []byte {
	b, _ := msgs(first, n)
	return b
}

// Frame faults do not touch opaque streams: snapshot streams, probes,
// and anything else.
func TestOpaqueStreamsUntouched(t *testing.T) {
	body := msgsBytes(1, 50)
	tests := []struct {
		name  string
		first []byte
	}{
		{"snapshot", hello("zkgosnp2", 1, 2)},
		{"old snapshot", hello("zkgosnap", 1, 2)},
		{"probe", hello(RaftMagic, 1, 0)},
		{"client", frame(make([]byte, 44))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNet(t, 1)
			s := startServer(t, false)
			addr, _ := n.Listen("1", "2", s.addr())
			n.DropFrames("1", "2", 1)
			n.ReorderFrames("1", "2", 1)
			n.DropFrames("2", "1", 1)
			c := dial(t, addr)
			write(t, c, tt.first)
			m := s.accept(t)
			readN(t, m, len(tt.first))
			write(t, m, frame([]byte{0}))
			readN(t, c, 5)
			write(t, c, body)
			if got := readN(t, m, len(body)); !bytes.Equal(got, body) {
				t.Fatal("an opaque stream was changed")
			}
			if st := n.Stats()[Dir{"1", "2"}]; st.Frames != 0 || st.FramesDropped != 0 || st.FramesReordered != 0 {
				t.Errorf("frame counts on an opaque stream: %+v", st)
			}
		})
	}
}

// A frame length over MaxFrameBytes turns the stream opaque: what
// follows passes untouched by frame faults.
func TestOversizedFrameGoesOpaque(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, false)
	addr, _ := n.Listen("1", "2", s.addr())
	client, member := raftPair(t, addr, s)
	n.DropFrames("1", "2", 1)

	tail := append([]byte{0x04, 0, 0, 1}, msgsBytes(1, 10)...) // 64 MiB + 1
	write(t, client, tail)
	if got := readN(t, member, len(tail)); !bytes.Equal(got, tail) {
		t.Fatal("the stream after an oversized length was changed")
	}
}

// A target that cannot be dialed: the dialer sees the connection end,
// unless the link is partitioned, where it sees silence until the heal.
func TestTargetDown(t *testing.T) {
	n := newNet(t, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	addr, _ := n.Listen("c", "s", down)

	c := dial(t, addr)
	expectClosed(t, c)

	n.PartitionOneWay("s", "c")
	c2 := dial(t, addr)
	write(t, c2, []byte("anyone?"))
	expectQuiet(t, c2)
	n.Heal("c", "s")
	expectClosed(t, c2)
}

func TestResetConns(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, false)
	addr, _ := n.Listen("c", "s", s.addr())
	other := startServer(t, false)
	otherAddr, _ := n.Listen("s", "d", other.addr())
	c := dial(t, addr)
	m := s.accept(t)
	keep := dial(t, otherAddr)
	keepM := other.accept(t)

	n.ResetConns("s", "c") // either order names the pair
	expectClosed(t, c)
	expectClosed(t, m)
	write(t, keep, []byte("k"))
	readN(t, keepM, 1)

	c2 := dial(t, addr)
	m2 := s.accept(t)
	write(t, c2, []byte("again"))
	readN(t, m2, 5)
	if st := n.Stats()[Dir{"c", "s"}]; st.Resets != 1 || st.Conns != 2 {
		t.Errorf("stats %+v, want 2 connections, 1 reset", st)
	}
}

// An orderly close passes through as a half-close each way.
func TestHalfClose(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, false)
	addr, _ := n.Listen("c", "s", s.addr())
	c := dial(t, addr)
	m := s.accept(t)
	write(t, c, []byte("bye"))
	c.(*net.TCPConn).CloseWrite()
	m.SetReadDeadline(time.Now().Add(eventually))
	if got, err := io.ReadAll(m); err != nil || string(got) != "bye" {
		t.Fatalf("member read %q, %v", got, err)
	}
	write(t, m, []byte("ok"))
	m.Close()
	c.SetReadDeadline(time.Now().Add(eventually))
	if got, err := io.ReadAll(c); err != nil || string(got) != "ok" {
		t.Fatalf("dialer read %q, %v", got, err)
	}
	waitFor(t, "the connection leaves the Net", func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(n.conns) == 0
	})
}

func TestStats(t *testing.T) {
	n := newNet(t, 1)
	s := startServer(t, true)
	addr, _ := n.Listen("c", "s", s.addr())
	c := dial(t, addr)
	write(t, c, make([]byte, 1000))
	readN(t, c, 1000)
	dial(t, addr)
	waitFor(t, "counts", func() bool {
		st := n.Stats()
		return st[Dir{"c", "s"}] == DirStats{Conns: 2, Bytes: 1000} &&
			st[Dir{"s", "c"}] == DirStats{Bytes: 1000}
	})
}

// Close ends every goroutine of the Net: accept loops, connections with
// queued and delayed units, black holes, and is idempotent.
func TestCloseEndsGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := startServer(t, false)
	defer s.close()
	n := New(1, nil)
	addr, _ := n.Listen("c", "s", s.addr())
	down, _ := n.Listen("c", "gone", "127.0.0.1:1")
	c := dial(t, addr)
	defer c.Close()
	s.accept(t)
	n.Delay("c", "s", time.Hour, 0)
	write(t, c, []byte("queued"))
	n.Isolate("gone")
	hole := dial(t, down)
	defer hole.Close()
	write(t, hole, []byte("into the void"))
	waitFor(t, "the black hole swallows", func() bool { return n.Stats()[Dir{"c", "gone"}].BytesLost > 0 })

	n.Close()
	n.Close()
	expectClosed(t, c)
	expectClosed(t, hole)
}
