package faultnet

import (
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Generous bounds: an event that must happen is waited for up to
// eventually; "nothing arrives" is checked over quiet.
const (
	eventually = 10 * time.Second
	quiet      = 300 * time.Millisecond
)

// newNet returns a Net closed at the end of the test. Its log goes to
// stderr with -v.
func newNet(t *testing.T, seed uint64) *Net {
	t.Helper()
	var log *slog.Logger
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	n := New(seed, log)
	t.Cleanup(func() { n.Close() })
	return n
}

// server is a listener whose accepted connections are handed to the
// test; everything it accepted is closed at the end of the test.
type server struct {
	ln    net.Listener
	conns chan net.Conn
	wg    sync.WaitGroup

	mu   sync.Mutex // guards open
	open []net.Conn
}

// startServer listens on loopback until the end of the test. With echo,
// every accepted connection echoes its bytes (and is not handed over).
func startServer(t *testing.T, echo bool) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, conns: make(chan net.Conn, 64)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.open = append(s.open, c)
			s.mu.Unlock()
			if !echo {
				s.conns <- c
				continue
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *server) addr() string { return s.ln.Addr().String() }

// close closes the listener and every accepted connection, and waits for
// the server's goroutines.
func (s *server) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.open {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// accept returns the next connection the server accepted.
func (s *server) accept(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-s.conns:
		return c
	case <-time.After(eventually):
		t.Fatal("server accepted no connection")
		return nil
	}
}

// dial connects to addr; the connection is closed at the end of the test.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, eventually)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func write(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(eventually))
	if _, err := c.Write(b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// readN reads exactly n bytes.
func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(eventually))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return b
}

// expectQuiet fails if anything (bytes, EOF or an error) comes from c
// within quiet.
func expectQuiet(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(quiet))
	defer c.SetReadDeadline(time.Time{})
	var b [1]byte
	k, err := c.Read(b[:])
	if k > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes, err %v; want nothing within %v", k, err, quiet)
	}
}

// expectClosed waits for c to fail or end (reset or EOF).
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(eventually))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, 1024)
	for {
		_, err := c.Read(b)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("connection still open after %v", eventually)
		}
		if err != nil {
			return
		}
	}
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, eventually)
		}
		time.Sleep(time.Millisecond)
	}
}

// frame returns payload as a raft transport frame.
func frame(payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	return append(b, payload...)
}

// hello returns a raft hello frame (version 1) with magic, from member
// from to member to (to 0: a probe).
func hello(magic string, from, to uint64) []byte {
	p := []byte(magic)
	p = binary.BigEndian.AppendUint32(p, 1)
	p = binary.BigEndian.AppendUint64(p, 0xc1)
	p = binary.BigEndian.AppendUint64(p, from)
	p = binary.BigEndian.AppendUint64(p, to)
	return frame(p)
}

// readFrame reads one frame and returns its payload.
func readFrame(t *testing.T, c net.Conn) []byte {
	t.Helper()
	hdr := readN(t, c, 4)
	return readN(t, c, int(binary.BigEndian.Uint32(hdr)))
}

// raftPair opens a raft message stream from the client through addr to
// s: the hello and the ack are exchanged. It returns both ends.
func raftPair(t *testing.T, addr string, s *server) (client, member net.Conn) {
	t.Helper()
	client = dial(t, addr)
	write(t, client, hello(RaftMagic, 1, 2))
	member = s.accept(t)
	if got := readFrame(t, member); string(got[:8]) != RaftMagic {
		t.Fatalf("hello arrived as %q", got)
	}
	write(t, member, frame([]byte{0}))
	if ack := readFrame(t, client); len(ack) != 1 || ack[0] != 0 {
		t.Fatalf("ack arrived as %q", ack)
	}
	return client, member
}

// msgs returns n frames whose payloads are "m1", "m2"... from first.
func msgs(first, n int) (stream []byte, payloads []string) {
	for i := first; i < first+n; i++ {
		p := "m" + itoa(i)
		payloads = append(payloads, p)
		stream = append(stream, frame([]byte(p))...)
	}
	return stream, payloads
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
