package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
)

// The hostile-client comparison (-hostile): both servers get the same
// misbehaving connections, on loopback, while one well-behaved client
// keeps writing; the report gives the servers' memory and that client's
// latency before, during and after. The kinds of hostile connection:
//
//   - silent: connects and sends nothing;
//   - announcer: announces a 1 MiB first frame and sends 10 bytes of it;
//   - slow reader: opens a session, pipelines reads of a 1 MB znode and
//     never reads the replies.
type hostileMix struct {
	silent, announcers, slowReaders int
	reads                           int // reads each slow reader pipelines
}

type hostileResult struct {
	server                            string
	rssIdle, rssDuring, rssAfter      int64
	idleP50, idleP99, durP50, durP99  time.Duration
	aliveAfter                        int64 // the server's zk_num_alive_connections then
	total                             int
	setupErr, measureErr, hostilesErr string
}

const hostileNode = "/hostile-big"

func runHostile(ctx context.Context, o options, bin, root string, mix hostileMix) error {
	zk, zg, err := startBoth(o, bin, root)
	if err != nil {
		return err
	}
	defer zk.kill()
	defer zg.kill()
	var results []hostileResult
	for _, s := range []*server{zk, zg} {
		logf("hostile clients against %s", s.name)
		results = append(results, hostileOn(ctx, s, mix))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d hostile connections on loopback: %d silent, %d announcing a 1 MiB first frame, %d slow readers pipelining %d reads of a 1 MB znode each and reading nothing; one well-behaved session writes 100 bytes in a loop meanwhile.\n\n",
		mix.silent+mix.announcers+mix.slowReaders, mix.silent, mix.announcers, mix.slowReaders, mix.reads)
	b.WriteString("| server | RSS idle | RSS with the hostile connections | RSS 15 s later | setData p50 / p99 idle | setData p50 / p99 meanwhile | client connections the server holds 15 s later |\n|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %.0f MiB | %.0f MiB | %.0f MiB | %s / %s | %s / %s | %d (of %d hostile + 1) |\n", r.server,
			mib(r.rssIdle), mib(r.rssDuring), mib(r.rssAfter), durMs(r.idleP50), durMs(r.idleP99), durMs(r.durP50), durMs(r.durP99), r.aliveAfter, r.total)
		for _, e := range []string{r.setupErr, r.measureErr, r.hostilesErr} {
			if e != "" {
				fmt.Fprintf(&b, "\n%s: %s\n", r.server, e)
			}
		}
	}
	fmt.Print(b.String())
	return nil
}

func durMs(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func hostileOn(ctx context.Context, s *server, mix hostileMix) hostileResult {
	r := hostileResult{server: s.name}
	addr := s.addr()
	good, err := rawzk.Dial(addr, rawzk.Options{Timeout: 30 * time.Second})
	if err != nil {
		r.setupErr = err.Error()
		return r
	}
	defer good.Close()
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	good.Call(proto.OpCreate, &proto.CreateRequest{Path: hostileNode, Data: bytes.Repeat([]byte("h"), 1_000_000), ACL: open}, nil)
	good.Call(proto.OpCreate, &proto.CreateRequest{Path: hostileNode + "-k", ACL: open}, nil)
	measure := func(d time.Duration) (p50, p99 time.Duration, err error) {
		var lat []time.Duration
		data := make([]byte, 100)
		for end := time.Now().Add(d); time.Now().Before(end) && ctx.Err() == nil; {
			t0 := time.Now()
			h, err := good.Call(proto.OpSetData, &proto.SetDataRequest{Path: hostileNode + "-k", Data: data, Version: -1}, nil)
			if err != nil || h.Err != proto.ErrOk {
				return 0, 0, fmt.Errorf("setData: %v %v", h.Err, err)
			}
			lat = append(lat, time.Since(t0))
		}
		if len(lat) == 0 {
			return 0, 0, errors.New("no samples")
		}
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100], nil
	}
	if r.idleP50, r.idleP99, err = measure(3 * time.Second); err != nil {
		r.measureErr = err.Error()
		return r
	}
	r.rssIdle, _ = rssBytes(s.pid())

	conns, err := openHostiles(addr, mix)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		r.hostilesErr = err.Error()
	}
	r.total = mix.silent + mix.announcers + mix.slowReaders
	time.Sleep(time.Second)
	if r.durP50, r.durP99, err = measure(3 * time.Second); err != nil {
		r.measureErr = err.Error()
	}
	r.rssDuring, _ = rssBytes(s.pid())
	// Past the handshake timeouts (sessionlessCnxnTimeout, 10 s) and the
	// slow readers' session timeout: the server should hold only the
	// well-behaved client's connection.
	select {
	case <-time.After(15 * time.Second):
	case <-ctx.Done():
	}
	r.rssAfter, _ = rssBytes(s.pid())
	r.aliveAfter = mntr(addr)["zk_num_alive_connections"]
	return r
}

// openHostiles opens the hostile connections, 64 at a time.
func openHostiles(addr string, mix hostileMix) ([]net.Conn, error) {
	kinds := make([]int, 0, mix.silent+mix.announcers+mix.slowReaders)
	for range mix.silent {
		kinds = append(kinds, 0)
	}
	for range mix.announcers {
		kinds = append(kinds, 1)
	}
	for range mix.slowReaders {
		kinds = append(kinds, 2)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var first error
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for _, k := range kinds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			nc, err := openHostile(addr, k, mix.reads)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
				}
				return
			}
			conns = append(conns, nc)
		}()
	}
	wg.Wait()
	return conns, first
}

func openHostile(addr string, kind, reads int) (net.Conn, error) {
	switch kind {
	case 0:
		return net.DialTimeout("tcp", addr, 10*time.Second)
	case 1:
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			return nil, err
		}
		b := binary.BigEndian.AppendUint32(nil, 1<<20)
		nc.Write(append(b, make([]byte, 10)...))
		return nc, nil
	}
	c, err := rawzk.Dial(addr, rawzk.Options{Timeout: 4 * time.Second})
	if err != nil {
		return nil, err
	}
	c.NetConn().(*net.TCPConn).SetReadBuffer(16 << 10)
	for range reads {
		if _, err := c.Send(proto.OpGetData, &proto.GetDataRequest{Path: hostileNode}); err != nil {
			break
		}
	}
	return c.NetConn(), nil
}
