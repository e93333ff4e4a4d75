package server_test

import (
	"runtime"
	"testing"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zktest"
)

// The WAL prefiller runs by default on a durable server (Linux) and not
// with NoWALPrefill (zkgo.wal.prefill=false).
func TestWALPrefillOption(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the WAL prefiller runs on Linux only")
	}
	for _, off := range []bool{false, true} {
		srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
			o.DataDir, o.NoWALPrefill = t.TempDir(), off
		}))
		c := dial(t, srv.Addr())
		if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/p", ACL: openACL}, nil); code != proto.ErrOk {
			t.Fatal(code)
		}
		if !off {
			waitMntr(t, srv.Addr(), "zkgo_wal_prefilled_bytes", func(v int64) bool { return v > 0 })
			continue
		}
		if v := mntrValue(t, srv.Addr(), "zkgo_wal_prefilled_bytes"); v != 0 {
			t.Fatalf("%d bytes prefilled with NoWALPrefill", v)
		}
	}
}
