package gozk

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zktest"
)

// go-zookeeper's IncrementalReconfig and Reconfig against a zkgo
// ensemble: a fourth server is added and removed, and a stale version is
// refused with ErrBadVersion.
func TestGoZookeeperReconfig(t *testing.T) {
	e := zktest.StartEnsemble(t, 4, 3, func(o *server.Options) { o.ReconfigEnabled, o.SkipACL = true, true })
	e.Start(3, 3) // knows the ensemble and itself; waits to be added
	c := connectServing(t, e.ClientAddrs[0])
	deadline := time.Now().Add(time.Minute)
	var err error
	if _, err := c.IncrementalReconfig([]string{e.Line(3)}, nil, 0x7777); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("stale version: %v", err)
	}
	for {
		_, err = c.IncrementalReconfig([]string{e.Line(3)}, nil, -1)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the fourth has not asked to join yet
	}
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := c.Get("/zookeeper/config")
	if err != nil || !strings.Contains(string(data), "server.4=") {
		t.Fatalf("config %q, %v", data, err)
	}
	// Back to the three, as a whole member list, once the fourth is a
	// voter (until then: a reconfig in progress).
	members := strings.Split(e.Config.DynamicText(), "\n")[:3]
	for {
		_, err = c.Reconfig(members, -1)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	data, _, err = c.Get("/zookeeper/config")
	if err != nil || strings.Contains(string(data), "server.4=") {
		t.Fatalf("config %q, %v", data, err)
	}
}

// The sequence of go-zookeeper's own TestIncrementalReconfig: remove one
// of three members, then add a fourth server that has not started — each
// in one call, as against Apache ZooKeeper (a quorum of the new
// configuration is in sync without it). zkgo answered NewConfigNoQuorum
// for the fourth until it had asked to join.
func TestGoZookeeperIncrementalReconfigAsItsOwnTest(t *testing.T) {
	e := zktest.StartEnsemble(t, 4, 3, func(o *server.Options) { o.ReconfigEnabled, o.SkipACL = true, true })
	c := connectServing(t, e.ClientAddrs[0])
	deadline := time.Now().Add(time.Minute)
	if _, err := c.IncrementalReconfig(nil, []string{"3"}, -1); err != nil {
		t.Fatalf("removing server 3: %v", err)
	}
	if _, err := c.IncrementalReconfig([]string{e.Line(3)}, nil, -1); err != nil {
		t.Fatalf("adding server 4, not started: %v", err)
	}
	data, _, err := c.Get("/zookeeper/config")
	if err != nil || !strings.Contains(string(data), "server.4=") || strings.Contains(string(data), "server.3=") {
		t.Fatalf("config %q, %v", data, err)
	}
	// It starts, catches up and serves.
	e.Start(3, 2)
	c4, _, err := zk.Connect([]string{e.ClientAddrs[3]}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c4.Close()
	if _, err := c.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, err := c4.Get("/after"); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("server 4 never served /after")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// connectServing connects go-zookeeper's client to addr and waits (a
// minute at most) until it is answered: the ensemble has elected.
func connectServing(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, _, err := c.Exists("/"); err == nil || time.Now().After(deadline) {
			return c
		}
	}
}
