package gozk

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgo/zkgo/zktest"
)

func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, 2*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for e := range ev {
		if e.State == zk.StateHasSession {
			break
		}
	}
	return c
}

func TestSmoke(t *testing.T) {
	srv := zktest.Start(t)
	c := connect(t, srv.Addr())
	p, err := c.Create("/a", []byte("x"), 0, zk.WorldACL(zk.PermAll))
	if err != nil || p != "/a" {
		t.Fatal(p, err)
	}
	d, st, err := c.Get("/a")
	if err != nil || string(d) != "x" || st.Version != 0 {
		t.Fatal(d, st, err)
	}
}
