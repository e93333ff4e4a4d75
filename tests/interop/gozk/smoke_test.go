// Package gozk drives the zkgo server with github.com/go-zookeeper/zk, a
// client we did not write, and checks the results against Apache ZooKeeper
// 3.8 semantics (the reference is the 3.8.x server source: PrepRequestProcessor,
// FinalRequestProcessor, DataTree, PathUtils).
//
// Helpers live in this file; scenarios are grouped by topic in the other
// *_test.go files. Tests never sleep to synchronize: they wait on watch
// channels or recorded session events, always with a bounded deadline.
// Where ZooKeeper guarantees that a notification reaches a client before the
// reply to a later read that observes the change, tests use that read as
// the synchronization point for "no (other) event was sent".
package gozk

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgo/zkgo/zktest"
)

const (
	// sessionTimeout is what clients ask for; zktest's server (tickTime
	// 100ms) caps sessions at 2s.
	sessionTimeout = 2 * time.Second
	// eventWait bounds every wait for a watch or session event.
	eventWait = 5 * time.Second
)

var openACL = zk.WorldACL(zk.PermAll)

type quietLogger struct{}

func (quietLogger) Printf(string, ...interface{}) {}

// client is a go-zookeeper connection that records every event the library
// publishes (session state changes and watch notifications), so tests can
// look for events that must or must not have arrived.
type client struct {
	*zk.Conn
	t *testing.T

	mu     sync.Mutex
	events []zk.Event
	notify chan struct{} // closed and replaced on every event
}

func (c *client) record(ev zk.Event) {
	c.mu.Lock()
	c.events = append(c.events, ev)
	close(c.notify)
	c.notify = make(chan struct{})
	c.mu.Unlock()
}

// Events returns a copy of the events recorded so far.
func (c *client) Events() []zk.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]zk.Event(nil), c.events...)
}

// waitEvent waits until an event at index >= from satisfies match and
// returns its index. It fails the test that created the client, so call it
// from that test's goroutine.
func (c *client) waitEvent(from int, what string, match func(zk.Event) bool) int {
	c.t.Helper()
	deadline := time.NewTimer(eventWait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		for i := from; i < len(c.events); i++ {
			if match(c.events[i]) {
				c.mu.Unlock()
				return i
			}
		}
		ch := c.notify
		c.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			c.t.Fatalf("timed out after %v waiting for %s; events: %v", eventWait, what, c.Events())
		}
	}
}

// waitState waits for a session state event at index >= from.
func (c *client) waitState(from int, st zk.State) int {
	c.t.Helper()
	return c.waitEvent(from, st.String(), func(e zk.Event) bool {
		return e.Type == zk.EventSession && e.State == st
	})
}

// countEvents counts recorded watch notifications of type typ for path.
func (c *client) countEvents(typ zk.EventType, path string) int {
	n := 0
	for _, e := range c.Events() {
		if e.Type == typ && e.Path == path {
			n++
		}
	}
	return n
}

// connect opens a go-zookeeper session to addr and waits until it is
// established. The connection is closed when the test ends (before the
// server, since cleanups run last-in first-out).
func connect(t *testing.T, addr string) *client {
	t.Helper()
	return connectDial(t, addr, nil)
}

// connectDial is connect with a custom dialer (nil: the default).
func connectDial(t *testing.T, addr string, dial zk.Dialer) *client {
	t.Helper()
	c := &client{t: t, notify: make(chan struct{})}
	if dial == nil {
		dial = net.DialTimeout
	}
	// The address is listed twice: with a single server go-zookeeper waits
	// a second before every reconnect, which eats into the 2s session
	// timeout of tests that drop connections; with two it retries at once.
	conn, _, err := zk.Connect([]string{addr, addr}, sessionTimeout,
		zk.WithLogInfo(false),
		zk.WithLogger(quietLogger{}),
		zk.WithEventCallback(c.record),
		zk.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	c.Conn = conn
	t.Cleanup(conn.Close)
	c.waitState(0, zk.StateHasSession)
	return c
}

// start starts a fresh server and one connected client.
func start(t *testing.T, opts ...zktest.Option) (*zktest.Server, *client) {
	t.Helper()
	srv := startServer(t, opts...)
	return srv, connect(t, srv.Addr())
}

// startServer starts an in-process zkgo server closed when the test ends.
func startServer(t *testing.T, opts ...zktest.Option) *zktest.Server {
	t.Helper()
	return zktest.Start(t, opts...)
}

// waitWatch waits for one event on a go-zookeeper watch channel.
func waitWatch(t *testing.T, ch <-chan zk.Event, what string) zk.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("%s: watch channel closed without an event", what)
		}
		return ev
	case <-time.After(eventWait):
		t.Fatalf("timed out after %v waiting for %s", eventWait, what)
	}
	return zk.Event{}
}

// expectWatch waits for an event on ch and checks its type and path.
func expectWatch(t *testing.T, ch <-chan zk.Event, typ zk.EventType, path string) {
	t.Helper()
	ev := waitWatch(t, ch, fmt.Sprintf("%v on %s", typ, path))
	if ev.Type != typ || ev.Path != path || ev.Err != nil {
		t.Fatalf("watch event = %+v, want type %v path %s", ev, typ, path)
	}
}

// pending reports whether ch already holds an event (without waiting).
func pending(ch <-chan zk.Event) (zk.Event, bool) {
	select {
	case ev, ok := <-ch:
		return ev, ok
	default:
		return zk.Event{}, false
	}
}

func mustCreate(t *testing.T, c *client, path string, data []byte, flags int32) string {
	t.Helper()
	p, err := c.Create(path, data, flags, openACL)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return p
}

func mustExists(t *testing.T, c *client, path string) *zk.Stat {
	t.Helper()
	ok, st, err := c.Exists(path)
	if err != nil || !ok {
		t.Fatalf("exists %s = %v, %v; want true", path, ok, err)
	}
	return st
}

func mustNotExist(t *testing.T, c *client, path string) {
	t.Helper()
	ok, _, err := c.Exists(path)
	if err != nil || ok {
		t.Fatalf("exists %s = %v, %v; want false", path, ok, err)
	}
}

func expectErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: err = %v, want %v", what, got, want)
	}
}

// expectUnknownCode matches the error go-zookeeper builds for server codes
// it has no sentinel for (ZRUNTIMEINCONSISTENCY -2, ZUNIMPLEMENTED -6, ...).
func expectUnknownCode(t *testing.T, what string, got error, code int) {
	t.Helper()
	if got == nil || got.Error() != fmt.Sprintf("unknown error: %d", code) {
		t.Fatalf("%s: err = %v, want server error code %d", what, got, code)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// dialer lets a test cut a client's TCP connection and hold reconnects.
type dialer struct {
	mu    sync.Mutex
	conns []net.Conn
	gate  chan struct{} // non-nil: dials wait for it to be closed
}

func (d *dialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	gate := d.gate
	d.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-time.After(eventWait):
		}
	}
	nc, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		d.mu.Lock()
		d.conns = append(d.conns, nc)
		d.mu.Unlock()
	}
	return nc, err
}

// hold makes future dials wait until release is called.
func (d *dialer) hold() {
	d.mu.Lock()
	d.gate = make(chan struct{})
	d.mu.Unlock()
}

func (d *dialer) release() {
	d.mu.Lock()
	if d.gate != nil {
		close(d.gate)
		d.gate = nil
	}
	d.mu.Unlock()
}

func (d *dialer) dials() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.conns)
}

// cut closes the most recent connection.
func (d *dialer) cut() {
	d.mu.Lock()
	nc := d.conns[len(d.conns)-1]
	d.mu.Unlock()
	nc.Close()
}

func TestSmoke(t *testing.T) {
	_, c := start(t)
	p, err := c.Create("/a", []byte("x"), 0, openACL)
	if err != nil || p != "/a" {
		t.Fatal(p, err)
	}
	d, st, err := c.Get("/a")
	if err != nil || string(d) != "x" || st.Version != 0 {
		t.Fatal(d, st, err)
	}
	if !strings.HasPrefix(c.Server(), "127.0.0.1:") {
		t.Fatalf("server = %q", c.Server())
	}
}
