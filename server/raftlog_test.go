package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
)

// TestPipelinedWritesDurable: several connections pipeline many creates
// into a durable server at once, so that proposals of different
// connections are combined into raft batches. Every create is answered
// once, in request order per connection, with its own path, and the tree
// holds them all.
func TestPipelinedWritesDurable(t *testing.T) {
	// A long session timeout: under the race detector and a loaded disk,
	// 400 pipelined creates may take longer than a short one, and the
	// client sends nothing (no ping) while it waits for their replies.
	srv, err := server.New(server.Options{
		Addr: "127.0.0.1:0", TickTime: 100 * time.Millisecond, MaxSessionTimeout: time.Minute,
		DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const conns, each = 8, 400
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for w := 0; w < conns; w++ {
		c, err := rawzk.Dial(srv.Addr().String(), rawzk.Options{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := fmt.Sprintf("/w%d", w)
			if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: base, ACL: openACL}, nil); code != proto.ErrOk {
				errs <- fmt.Errorf("create %s: %v", base, code)
				return
			}
			xids := make([]int32, each)
			for i := range each {
				xid, err := c.Send(proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("%s/n%04d", base, i), Data: []byte{byte(i)}, ACL: openACL})
				if err != nil {
					errs <- err
					return
				}
				xids[i] = xid
			}
			for i := range each {
				var cr proto.CreateResponse
				h, err := c.Recv(&cr)
				want := fmt.Sprintf("%s/n%04d", base, i)
				if err != nil || h.Err != proto.ErrOk || h.Xid != xids[i] || cr.Path != want {
					errs <- fmt.Errorf("reply %d of %s: %+v %q %v (want xid %d, %s)", i, base, h, cr.Path, err, xids[i], want)
					return
				}
			}
			var gr proto.GetChildren2Response
			if code := call(t, c, proto.OpGetChildren2, &proto.GetChildren2Request{Path: base}, &gr); code != proto.ErrOk || len(gr.Children) != each {
				errs <- fmt.Errorf("children of %s: %d, %v", base, len(gr.Children), code)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
