package server_test

import (
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zktest"
)

// benchTarget lets the same benchmarks run against another server, e.g.
// Apache ZooKeeper: go test -bench . -run ^$ ./server -bench.addr 127.0.0.1:2181
var benchTarget = flag.String("bench.addr", "", "benchmark this server address instead of an in-process zkgo server")

func benchAddr(b *testing.B) string {
	if *benchTarget != "" {
		return *benchTarget
	}
	return zktest.Start(b).Addr()
}

// runClients runs b.N requests spread over n connections, each
// connection sending one request at a time (closed loop), and reports
// requests per second.
func runClients(b *testing.B, addr string, n int, setup func(c *rawzk.Conn, i int), do func(c *rawzk.Conn, i int) error) {
	conns := make([]*rawzk.Conn, n)
	for i := range conns {
		c, err := rawzk.Dial(addr, rawzk.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer c.CloseSession()
		if setup != nil {
			setup(c, i)
		}
		conns[i] = c
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	for i := range conns {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := do(conns[i], i); err != nil {
					failed.Store(err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func mustOK(h proto.ReplyHeader, err error) error {
	if err != nil {
		return err
	}
	if h.Err != proto.ErrOk {
		return fmt.Errorf("error %v", h.Err)
	}
	return nil
}

func BenchmarkGetData64(b *testing.B) {
	addr := benchAddr(b)
	setup, err := rawzk.Dial(addr, rawzk.Options{})
	if err != nil {
		b.Fatal(err)
	}
	setup.Call(proto.OpCreate, &proto.CreateRequest{Path: "/bench-get", Data: make([]byte, 100), ACL: openACL}, nil)
	setup.CloseSession()
	req := &proto.GetDataRequest{Path: "/bench-get"}
	runClients(b, addr, 64, nil, func(c *rawzk.Conn, _ int) error {
		var rsp proto.GetDataResponse
		return mustOK(c.Call(proto.OpGetData, req, &rsp))
	})
}

func BenchmarkSetData64(b *testing.B) {
	addr := benchAddr(b)
	runClients(b, addr, 64, func(c *rawzk.Conn, i int) {
		c.Call(proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("/bench-set-%d", i), ACL: openACL}, nil)
	}, func(c *rawzk.Conn, i int) error {
		var rsp proto.SetDataResponse
		return mustOK(c.Call(proto.OpSetData, &proto.SetDataRequest{Path: fmt.Sprintf("/bench-set-%d", i), Data: make([]byte, 100), Version: -1}, &rsp))
	})
	cleanup(b, addr, "/bench-set-", 64)
}

func BenchmarkCreate64(b *testing.B) {
	addr := benchAddr(b)
	setup, err := rawzk.Dial(addr, rawzk.Options{})
	if err != nil {
		b.Fatal(err)
	}
	parent := fmt.Sprintf("/bench-create-%d", b.N)
	setup.Call(proto.OpCreate, &proto.CreateRequest{Path: parent, ACL: openACL}, nil)
	setup.CloseSession()
	runClients(b, addr, 64, nil, func(c *rawzk.Conn, _ int) error {
		var rsp proto.CreateResponse
		return mustOK(c.Call(proto.OpCreate, &proto.CreateRequest{Path: parent + "/n-", Data: make([]byte, 100), ACL: openACL, Flags: proto.ModeEphemeralSequential}, &rsp))
	})
}

func cleanup(b *testing.B, addr, prefix string, n int) {
	c, err := rawzk.Dial(addr, rawzk.Options{})
	if err != nil {
		return
	}
	for i := 0; i < n; i++ {
		c.Call(proto.OpDelete, &proto.DeleteRequest{Path: fmt.Sprintf("%s%d", prefix, i), Version: -1}, nil)
	}
	c.CloseSession()
}

var openACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
