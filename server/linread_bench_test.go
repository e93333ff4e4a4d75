package server_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zktest"
)

// What linearizable reads cost (zkgo.reads=linearizable): getData of 100
// bytes from 64 connections, standalone and through a follower of a
// 3-member ensemble, with ZooKeeper's reads and with linearizable ones;
// req/s and the 99th percentile latency.
//
//	go test -run XXX -bench 'GetData64(Standalone|Follower)' ./server/
func BenchmarkGetData64Standalone(b *testing.B) {
	for _, lin := range []bool{false, true} {
		b.Run(readMode(lin), func(b *testing.B) {
			srv := zktest.Start(b, zktest.WithOptions(func(o *server.Options) { o.LinearizableReads = lin }))
			benchGets(b, srv.Addr())
		})
	}
}

func BenchmarkGetData64Follower(b *testing.B) {
	for _, lin := range []bool{false, true} {
		b.Run(readMode(lin), func(b *testing.B) {
			c := startCluster(b, 3, 0, func(o *server.Options) { o.LinearizableReads = lin })
			lead := c.createOnLeader("/warm", "")
			benchGets(b, c.addr((lead+1)%3))
		})
	}
}

func readMode(lin bool) string {
	if lin {
		return "linearizable"
	}
	return "sequential"
}

// benchGets reads one znode from 64 connections to addr.
func benchGets(b *testing.B, addr string) {
	setup, err := rawzk.Dial(addr, rawzk.Options{})
	if err != nil {
		b.Fatal(err)
	}
	setup.Call(proto.OpCreate, &proto.CreateRequest{Path: "/bench-lin", Data: make([]byte, 100), ACL: openACL}, nil)
	setup.CloseSession()
	req := &proto.GetDataRequest{Path: "/bench-lin"}
	var mu sync.Mutex // guards lats
	var lats []time.Duration
	runClients(b, addr, 64, nil, func(c *rawzk.Conn, _ int) error {
		start := time.Now()
		var rsp proto.GetDataResponse
		err := mustOK(c.Call(proto.OpGetData, req, &rsp))
		d := time.Since(start)
		mu.Lock()
		lats = append(lats, d)
		mu.Unlock()
		return err
	})
	slices.Sort(lats)
	if len(lats) > 0 {
		b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds()), "p99_us")
	}
}
