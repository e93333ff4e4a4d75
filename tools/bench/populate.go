package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/zkgo/zkgo/proto"
)

// PopulatePath returns the path of the i-th znode Populate creates under
// root: 1,000 znodes per parent.
func PopulatePath(root string, i int) string {
	return fmt.Sprintf("%s/p%04d/c%03d", root, i/1000, i%1000)
}

// Populate creates n persistent znodes of size bytes under root (root, then
// root/pNNNN parents of 1,000 znodes each), pipelined over conns sessions.
// It stops at ctx's deadline and returns the znodes of the batches it
// completed (100,000 each): a lower bound, since a batch cut short leaves
// some of its znodes behind (read mntr's zk_znode_count for the count).
func Populate(ctx context.Context, addr, root string, n, size, conns int) (int, error) {
	cs, err := dialAll(ctx, []string{addr}, conns, conns, dialOptions{timeout: 30 * time.Second}, nil)
	if err != nil {
		return 0, err
	}
	defer closeAll(cs)
	if err := ensure(cs[0], root); err != nil {
		return 0, err
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	done := 0
	const batch = 100000
	for done < n && ctx.Err() == nil {
		m := min(batch, n-done)
		first := done
		// Parents first, on one session (applied in order), then the
		// batch's znodes over all sessions.
		var parents []string
		for i := first; i < first+m; i++ {
			if i%1000 == 0 {
				parents = append(parents, fmt.Sprintf("%s/p%04d", root, i/1000))
			}
		}
		if err := bulk(ctx, cs[:1], len(parents), 256, func(i int) (proto.OpCode, proto.Record) {
			return proto.OpCreate, &proto.CreateRequest{Path: parents[i], ACL: openACL}
		}, proto.ErrNodeExists); err != nil {
			return done, err
		}
		if err := bulk(ctx, cs, m, 2048, func(i int) (proto.OpCode, proto.Record) {
			return proto.OpCreate, &proto.CreateRequest{Path: PopulatePath(root, first+i), Data: data, ACL: openACL}
		}); err != nil {
			if ctx.Err() != nil {
				break
			}
			return done, err
		}
		done += m
	}
	return done, nil
}

// PopulateChildren creates n persistent children of size bytes under one
// parent (created if missing), the i-th named name(i), pipelined over conns
// sessions as Populate does (2,048 requests in flight).
func PopulateChildren(ctx context.Context, addr, parent string, n, size, conns int, name func(i int) string) error {
	cs, err := dialAll(ctx, []string{addr}, conns, conns, dialOptions{timeout: 30 * time.Second}, nil)
	if err != nil {
		return err
	}
	defer closeAll(cs)
	if err := ensure(cs[0], parent); err != nil {
		return err
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	return bulk(ctx, cs, n, 2048, func(i int) (proto.OpCode, proto.Record) {
		return proto.OpCreate, &proto.CreateRequest{Path: parent + "/" + name(i), Data: data, ACL: openACL}
	})
}

// Exists reports whether path exists, over a fresh session.
func Exists(addr, path string) (bool, error) {
	c, err := Dial(addr, 10*time.Second)
	if err != nil {
		return false, err
	}
	defer c.Close()
	code, err := c.Do(proto.OpExists, &proto.ExistsRequest{Path: path}, nil)
	if err != nil {
		return false, err
	}
	return code == proto.ErrOk, nil
}
