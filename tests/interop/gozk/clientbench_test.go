package gozk

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	ourzk "github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// The client benchmarks run zkgo's Go client (package zk) and
// go-zookeeper/zk side by side against the same server: zkgo's in-process
// server by default, or any server given with -bench.server (for example an
// Apache ZooKeeper 3.8 started by hand), so that client and server speed are
// separated:
//
//	go test ./tests/interop/gozk -run '^$' -bench Client -benchmem
//	go test ./tests/interop/gozk -run '^$' -bench Client -benchmem -bench.server 127.0.0.1:2181
//	go test ./tests/interop/gozk -run '^$' -bench Client -benchmem -bench.server stub
//
// "stub" is a canned-reply server (stub_test.go) whose cost per request is
// one frame in and one out: against it the numbers are the clients' own.
var benchServer = flag.String("bench.server", "", "run the client benchmarks against this server (host:port, or stub for a canned-reply server) instead of an in-process zkgo server")

// clientAPI is the part of a client the benchmarks use.
type clientAPI interface {
	get(path string) error
	set(path string, data []byte) error
	close()
}

type ourClient struct{ c *ourzk.Conn }

func (o ourClient) get(p string) error {
	_, _, err := o.c.Get(context.Background(), p)
	return err
}
func (o ourClient) set(p string, d []byte) error {
	_, err := o.c.Set(context.Background(), p, d, -1)
	return err
}
func (o ourClient) close() { o.c.Close() }

type theirClient struct{ c *gozk.Conn }

func (g theirClient) get(p string) error {
	_, _, err := g.c.Get(p)
	return err
}
func (g theirClient) set(p string, d []byte) error {
	_, err := g.c.Set(p, d, -1)
	return err
}
func (g theirClient) close() { g.c.Close() }

var clients = []struct {
	name string
	dial func(b *testing.B, addr string) clientAPI
}{
	{"zkgo", func(b *testing.B, addr string) clientAPI {
		c, err := ourzk.Connect(context.Background(), addr, ourzk.WithSessionTimeout(10*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		return ourClient{c}
	}},
	{"go-zookeeper", func(b *testing.B, addr string) clientAPI {
		c, _, err := gozk.Connect([]string{addr}, 10*time.Second, gozk.WithLogger(quietLogger{}))
		if err != nil {
			b.Fatal(err)
		}
		// Connect returns before the session exists; wait for it.
		deadline := time.Now().Add(10 * time.Second)
		for c.State() != gozk.StateHasSession {
			if time.Now().After(deadline) {
				b.Fatalf("go-zookeeper: no session with %s", addr)
			}
			time.Sleep(time.Millisecond)
		}
		return theirClient{c}
	}},
}

func benchAddr(b *testing.B) string {
	switch *benchServer {
	case "":
		return zktest.Start(b).Addr()
	case "stub":
		return startStub(b)
	}
	return *benchServer
}

// BenchmarkClient measures getData and setData of a 100-byte value, one
// caller at a time (sync) and with 64 goroutines sharing one connection
// (pipelined), for each client against the same server.
func BenchmarkClient(b *testing.B) {
	addr := benchAddr(b)
	path := fmt.Sprintf("/clientbench-%d", time.Now().UnixNano())
	if *benchServer != "stub" { // the stub answers every getData/setData
		setup, err := ourzk.Connect(context.Background(), addr)
		if err != nil {
			b.Fatal(err)
		}
		defer setup.Close()
		if _, err := setup.Create(context.Background(), path, make([]byte, 100), acl.OpenACLUnsafe, proto.ModeEphemeral); err != nil {
			b.Fatal(err)
		}
	}
	data := make([]byte, 100)
	for _, op := range []string{"get", "set"} {
		for _, workers := range []int{1, 64} {
			for _, cl := range clients {
				b.Run(fmt.Sprintf("%s/workers=%d/%s", op, workers, cl.name), func(b *testing.B) {
					c := cl.dial(b, addr)
					defer c.close()
					do := func() error { return c.get(path) }
					if op == "set" {
						do = func() error { return c.set(path, data) }
					}
					b.ReportAllocs()
					b.ResetTimer()
					var n atomic.Int64
					var wg sync.WaitGroup
					for w := 0; w < workers; w++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for n.Add(1) <= int64(b.N) {
								if err := do(); err != nil {
									b.Error(err)
									return
								}
							}
						}()
					}
					wg.Wait()
				})
			}
		}
	}
}
