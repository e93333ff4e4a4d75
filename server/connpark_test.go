package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// connGoroutines counts the goroutines serving client connections: readers
// and writers.
func connGoroutines(t *testing.T) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "server.(*Conn).serve(") || strings.Contains(g, "server.(*Conn).readLoop(") ||
			strings.Contains(g, "server.(*Conn).writeLoop(") {
			n++
		}
	}
	return n
}

func waitGoroutines(t *testing.T, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := connGoroutines(t)
		if ok(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection goroutines stayed %d", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Idle connections park: no reader or writer goroutine until their next
// request. A parked connection still gets its watch notifications, is
// served when it sends again, sees its client close, and ends with its
// session; the server closes with connections parked.
func TestIdleConnectionsPark(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.IdleAfter = 5 * time.Millisecond
	}))
	if mntrValue(t, srv.Addr(), "zkgo_parked_connections") != 0 {
		t.Fatal("parked connections before any client")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 20
	clients := make([]*zk.Conn, n)
	watches := make([]<-chan zk.Event, n)
	for i := range clients {
		c, err := zk.Connect(ctx, srv.Addr(), zk.WithSessionTimeout(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
		p := fmt.Sprintf("/n%d", i)
		if _, err := c.Create(ctx, p, []byte("a"), zk.WorldACL(zk.PermAll), zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		if _, _, watches[i], err = c.GetW(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitMntr(t, srv.Addr(), "zkgo_parked_connections", func(v int64) bool { return v == n })
	waitGoroutines(t, func(g int) bool { return g == 0 })

	// Notifications reach parked connections.
	writer, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	for i := range n {
		if _, err := writer.Set(ctx, fmt.Sprintf("/n%d", i), []byte("b"), -1); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range watches {
		select {
		case ev := <-w:
			if ev.Type != zk.EventNodeDataChanged || ev.Path != fmt.Sprintf("/n%d", i) {
				t.Fatalf("client %d: event %+v", i, ev)
			}
		case <-ctx.Done():
			t.Fatalf("client %d: no notification", i)
		}
	}

	// Parked again, each is served when it sends; pipelined requests
	// from all of them at once keep their order.
	waitMntr(t, srv.Addr(), "zkgo_parked_connections", func(v int64) bool { return v >= n })
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("/n%d", i)
			var sets sync.WaitGroup
			for v := range 20 {
				sets.Add(1)
				go func() {
					defer sets.Done()
					if _, err := c.Set(ctx, p, []byte{byte(v)}, -1); err != nil {
						errs <- err
					}
				}()
			}
			sets.Wait()
			data, st, err := c.Get(ctx, p)
			if err != nil {
				errs <- err
				return
			}
			if st.Version != 21 || len(data) != 1 {
				errs <- fmt.Errorf("%s: version %d data %v", p, st.Version, data)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// A client that closes its parked connection: the server notices.
	waitMntr(t, srv.Addr(), "zkgo_parked_connections", func(v int64) bool { return v >= n })
	for _, c := range clients[n/2:] {
		c.Close()
	}
	waitMntr(t, srv.Addr(), "zk_num_alive_connections", func(v int64) bool { return v == n/2+1 })

	// A parked connection whose session expires is closed, its client
	// told.
	waitMntr(t, srv.Addr(), "zkgo_parked_connections", func(v int64) bool { return v >= n/2 })
	victim := clients[0]
	srv.ExpireSession(victim.SessionID())
	for {
		_, _, err := victim.Get(ctx, "/n0")
		if errors.Is(err, zk.ErrSessionExpired) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("expired session's client: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The server closes with connections parked, and their goroutines
	// are all gone.
	waitMntr(t, srv.Addr(), "zkgo_parked_connections", func(v int64) bool { return v >= n/2-1 })
	srv.Close()
	waitGoroutines(t, func(g int) bool { return g == 0 })
}

// A burst of pipelined requests in one write to a parked connection: it
// resumes with a small buffer, moves to the large one with what the small
// one holds, and answers every request in order.
func TestParkedConnectionBurst(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.IdleAfter = 5 * time.Millisecond
	}))
	c := dial(t, srv.Addr())
	waitMntr(t, srv.Addr(), "zkgo_parked_connections", func(v int64) bool { return v == 1 })
	const n = 3000
	var enc jute.Encoder
	for i := range n {
		proto.AppendRequest(&enc, &proto.RequestHeader{Xid: int32(2*i + 1), Type: proto.OpSetData},
			&proto.SetDataRequest{Path: "/", Data: bytes.Repeat([]byte{byte(i)}, 40), Version: -1})
		proto.AppendRequest(&enc, &proto.RequestHeader{Xid: int32(2*i + 2), Type: proto.OpGetData},
			&proto.GetDataRequest{Path: "/"})
	}
	werr := make(chan error, 1)
	go func() {
		_, err := c.NetConn().Write(enc.Bytes())
		werr <- err
	}()
	for i := range n {
		var sr proto.SetDataResponse
		h, err := c.Recv(&sr)
		if err != nil || h.Err != proto.ErrOk || h.Xid != int32(2*i+1) {
			t.Fatalf("set %d: %+v %v", i, h, err)
		}
		var gr proto.GetDataResponse
		h, err = c.Recv(&gr)
		if err != nil || h.Err != proto.ErrOk || h.Xid != int32(2*i+2) {
			t.Fatalf("get %d: %+v %v", i, h, err)
		}
		if len(gr.Data) != 40 || gr.Data[0] != byte(i) || gr.Stat.Version != int32(i+1) {
			t.Fatalf("get %d saw %d bytes [%d...] version %d", i, len(gr.Data), gr.Data[0], gr.Stat.Version)
		}
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	// And it parks again.
	waitMntr(t, srv.Addr(), "zkgo_parked_connections", func(v int64) bool { return v == 1 })
}

// A TLS connection does not park (its TLS layer may hold bytes the socket
// no longer shows) and is served after any pause; a plaintext one on the
// same unified port parks.
func TestTLSConnectionsDoNotPark(t *testing.T) {
	srv, files := tlsServer(t, true, func(o *server.Options) { o.IdleAfter = 5 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	secure := connectTLS(t, srv.Addr(), clientTLS(t, files, "client"))
	plain, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	waitMntr(t, srv.Addr(), "zkgo_parked_connections", func(v int64) bool { return v >= 1 })
	for range 3 {
		// Longer than IdleAfter each time: the plaintext connection
		// parks again, the TLS one never does.
		time.Sleep(50 * time.Millisecond)
		if v := mntrValue(t, srv.Addr(), "zkgo_parked_connections"); v != 1 {
			t.Fatalf("%d connections parked, want the plaintext one only", v)
		}
		if _, err := secure.Exists(ctx, "/"); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Exists(ctx, "/"); err != nil {
			t.Fatal(err)
		}
	}
}

// A connection whose requests come a little more than IdleAfter apart
// (watchers setting their watch again on each notification) does not
// park and wake between them; once its requests stop it parks, although
// its pings come as close together.
func TestActiveConnectionDoesNotPark(t *testing.T) {
	const idle = 200 * time.Millisecond // a park between requests needs a 500 ms stall
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.IdleAfter = idle }))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zk.Connect(ctx, srv.Addr(), zk.WithSessionTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	get := func() {
		t.Helper()
		if _, err := c.Exists(ctx, "/"); err != nil {
			t.Fatal(err)
		}
	}
	// 1.5 × IdleAfter apart: each wait is longer than IdleAfter and
	// shorter than the active connection's 4 × IdleAfter.
	const gap = idle * 3 / 2
	for range 2 {
		get()
		time.Sleep(gap)
	}
	before := mntrValue(t, srv.Addr(), "zkgo_connection_parks")
	for range 8 {
		get()
		time.Sleep(gap)
	}
	get()
	if n := mntrValue(t, srv.Addr(), "zkgo_connection_parks") - before; n != 0 {
		t.Errorf("the connection parked %d times between requests %v apart", n, gap)
	}
	// Then only its pings come (zktest's session timeout is 2 s: one
	// every ~0.7 s, closer together than 4 × IdleAfter), and it parks.
	waitMntr(t, srv.Addr(), "zkgo_parked_connections", func(v int64) bool { return v == 1 })
}

// A change with more watchers than the state machine wakes at once
// (statemachine.deferFanOut) reaches every one of them, parked or not,
// and the writer, watching too, has its notification before its reply.
func TestLargeFanOutDelivered(t *testing.T) {
	for _, c := range []struct {
		name string
		idle time.Duration
	}{{"parking", 5 * time.Millisecond}, {"never parked", -1}} {
		t.Run(c.name, func(t *testing.T) { largeFanOut(t, c.idle) })
	}
}

func largeFanOut(t *testing.T, idle time.Duration) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.IdleAfter, o.MaxSessionTimeout = idle, time.Minute
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Sessions that send nothing on their own for 10 s (a ping every
	// third of the timeout): a notification not woken would wait for
	// that ping's reply.
	connect := func() *zk.Conn {
		c, err := zk.Connect(ctx, srv.Addr(), zk.WithSessionTimeout(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	writer := connect()
	if _, err := writer.Create(ctx, "/hot", []byte("0"), zk.WorldACL(zk.PermAll), zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	const n = 150
	clients := make([]*zk.Conn, n)
	watches := make([]<-chan zk.Event, n)
	for i := range clients {
		clients[i] = connect()
	}
	var err error
	for round := range 3 {
		for i, c := range clients {
			if _, _, watches[i], err = c.GetW(ctx, "/hot"); err != nil {
				t.Fatal(err)
			}
		}
		_, _, own, err := writer.GetW(ctx, "/hot")
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 && idle > 0 {
			waitMntr(t, srv.Addr(), "zkgo_parked_connections", func(v int64) bool { return v >= n/2 })
		}
		if _, err := writer.Set(ctx, "/hot", []byte(fmt.Sprint(round+1)), -1); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-own:
			if ev.Type != zk.EventNodeDataChanged {
				t.Fatalf("the writer's own watch: %+v", ev)
			}
		default:
			t.Fatalf("round %d: the writer's reply came before its notification", round)
		}
		for i, w := range watches {
			select {
			case ev := <-w:
				if ev.Type != zk.EventNodeDataChanged || ev.Path != "/hot" {
					t.Fatalf("watcher %d: %+v", i, ev)
				}
			case <-time.After(8 * time.Second):
				t.Fatalf("round %d: watcher %d got no notification", round, i)
			}
		}
	}
}
