package zkdata_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zkdata"
)

var importZnodes = flag.Int("import.znodes", 1_000_000, "znodes of 100 bytes in BenchmarkImport's ZooKeeper snapshot")

// BenchmarkImport measures zkgo import's work on a ZooKeeper snapshot of
// -import.znodes znodes of 100 bytes (1,000 parents of 1,000 children by
// default): reading the ZooKeeper data directory (checksums, digest),
// writing zkgo's snapshot, and seeding a data directory (which reads the
// tree again, checks it, and writes it fsynced into raft's storage).
//
//	go test -run '^$' -bench BenchmarkImport -benchtime 1x ./zkdata
func BenchmarkImport(b *testing.B) {
	n := *importZnodes
	zkDir := b.TempDir()
	zxid := buildZKSnapshot(b, zkDir, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		im, err := zkdata.ReadDir(zkDir, "", zkdata.ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		read := time.Since(start)
		var zb bytes.Buffer
		if err := im.WriteZkgoSnapshot(&zb); err != nil {
			b.Fatal(err)
		}
		converted := time.Since(start)
		dir := b.TempDir()
		if err := server.SeedDataDir(server.Options{DataDir: dir}, &zb); err != nil {
			b.Fatal(err)
		}
		total := time.Since(start)
		if im.LastZxid() != zxid || im.Summary().Znodes < n {
			b.Fatalf("read %d znodes, last zxid %#x", im.Summary().Znodes, im.LastZxid())
		}
		b.ReportMetric(float64(n)/total.Seconds(), "znodes/s")
		b.ReportMetric(read.Seconds(), "read-s")
		b.ReportMetric((converted - read).Seconds(), "convert-s")
		b.ReportMetric((total - converted).Seconds(), "seed-s")
	}
}

// buildZKSnapshot writes a ZooKeeper snapshot of n znodes into
// dir/version-2 and returns its zxid.
func buildZKSnapshot(b *testing.B, dir string, n int) int64 {
	b.Helper()
	t := tree.New()
	world := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	data := bytes.Repeat([]byte("x"), 100)
	zxid := int64(5 << 32)
	apply := func(p string) {
		zxid++
		if r := t.Apply(zxid, &tree.Txn{Op: proto.OpCreate, Time: 1_700_000_000_000, Req: &proto.CreateRequest{Path: p, Data: data, ACL: world}}); r.Err != proto.ErrOk {
			b.Fatalf("create %s: %v", p, r.Err)
		}
	}
	parents := max(n/1000, 1)
	for p := 0; p < parents; p++ {
		parent := fmt.Sprintf("/p%04d", p)
		apply(parent)
		for c := 0; c < n/parents-1; c++ {
			apply(fmt.Sprintf("%s/c%04d", parent, c))
		}
	}
	v2 := filepath.Join(dir, "version-2")
	if err := os.MkdirAll(v2, 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(v2, zkdata.SnapshotName(zxid, "")))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := zkdata.WriteSnapshot(f, t, zkdata.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	return zxid
}
