package zkdata

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// ReadOptions.Progress is told how far each file has been read, ending
// with the whole file.
func TestReadProgress(t *testing.T) {
	tr := tree.New()
	world := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	for i := 0; i < 3000; i++ {
		tr.Apply(int64(i+1), &tree.Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/n" + string(rune('a'+i%26)) + itoa(i), Data: bytes.Repeat([]byte("x"), 100), ACL: world}})
	}
	dir := t.TempDir()
	v2 := filepath.Join(dir, "version-2")
	if err := os.MkdirAll(v2, 0o755); err != nil {
		t.Fatal(err)
	}
	name := SnapshotName(tr.LastZxid(), "")
	var b bytes.Buffer
	if err := WriteSnapshot(&b, tr, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v2, name), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := 0
	var last, size int64
	_, err := ReadDir(dir, "", ReadOptions{Progress: func(file string, done, sz int64) {
		if file != name || done < last {
			t.Errorf("progress %s %d after %d", file, done, last)
		}
		calls, last, size = calls+1, done, sz
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 2 || last != int64(b.Len()) || size != int64(b.Len()) {
		t.Fatalf("%d progress calls, last %d of %d, file %d bytes", calls, last, size, b.Len())
	}
}

func itoa(i int) string {
	return string([]byte{byte('0' + i/1000%10), byte('0' + i/100%10), byte('0' + i/10%10), byte('0' + i%10)})
}
