package server_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/zkgo/zkgo/proto"
)

// TestPipelinedWritesDurable: several connections pipeline many creates
// into a durable server at once, so that proposals of different
// connections are combined into raft batches. Every create is answered
// once, in request order per connection, with its own path, and the tree
// holds them all.
func TestPipelinedWritesDurable(t *testing.T) {
	srv := durableServer(t, t.TempDir(), 0)
	defer srv.Close()
	const conns, each = 8, 400
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for w := 0; w < conns; w++ {
		c := dial(t, srv.Addr().String())
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
