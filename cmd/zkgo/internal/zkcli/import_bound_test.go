package zkcli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// repeatReader is an endless stream of one byte.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// A node of any size is refused after at most maxImportValue bytes of
// JSON: the decoder no longer buffers the whole value (a 300 MB node made
// import take 1.5 GB before it said the data was too large).
func TestImportValueBounded(t *testing.T) {
	const size = 128 << 20
	for _, tc := range []struct{ name, head, tail, want string }{
		{"node", `{"zkgo_export": 1, "nodes": [{"path": "/big", "data": "`, `"}]}`, "node 1 is larger than 8388608 bytes of JSON"},
		{"unknown member", `{"zkgo_export": 1, "comment": "`, `", "nodes": []}`, "a value of the document is larger than 8388608 bytes of JSON"},
		{"key", `{"zkgo_export": 1, "`, `": 1, "nodes": []}`, "a value of the document is larger than 8388608 bytes of JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := io.MultiReader(strings.NewReader(tc.head), io.LimitReader(repeatReader('a'), size), strings.NewReader(tc.tail))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := readExport(doc, func(exportNode) error { return nil })
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("reading a %d-byte value allocated %d bytes", size, alloc)
			}
		})
	}
}

// The largest node an export can hold still reads: 1 MiB of data that
// JSON escapes six bytes a byte, with a long ACL.
func TestImportLargestNode(t *testing.T) {
	var doc strings.Builder
	doc.WriteString(`{"zkgo_export": 1, "nodes": [{"path": "/big", "data": "`)
	doc.WriteString(strings.Repeat(`\u0001`, maxImportData))
	doc.WriteString(`", "acl": [`)
	for i := range 20_000 {
		if i > 0 {
			doc.WriteString(", ")
		}
		fmt.Fprintf(&doc, `{"perms": "r", "scheme": "digest", "id": "user%05d:hash"}`, i)
	}
	doc.WriteString(`]}]}`)
	var got []exportNode
	if err := readExport(strings.NewReader(doc.String()), func(n exportNode) error { got = append(got, n); return nil }); err != nil {
		t.Fatal(err)
	}
	data, acl, err := importContent(got[0])
	if err != nil || len(data) != maxImportData || data[0] != 1 || len(acl) != 20_000 {
		t.Fatalf("%d bytes, %d ACL entries, %v", len(data), len(acl), err)
	}
}

// The nodes an import creates are remembered along the current path only,
// so memory does not grow with the number of nodes; a document that is not
// in export order still imports (with reads).
func TestImportRemembersAncestorsOnly(t *testing.T) {
	h := newHarness(t)
	var doc strings.Builder
	doc.WriteString(`{"zkgo_export": 1, "nodes": [{"path": ""}, {"path": "/d"}`)
	const n = 100_000
	for i := range n {
		fmt.Fprintf(&doc, `, {"path": "/d/n%06d", "data": "v"}`, i)
	}
	doc.WriteString(`]}`)
	im := &importer{ctx: context.Background(), conn: h.s.live(), root: "/imp", dry: true, s: h.s}
	if err := readExport(strings.NewReader(doc.String()), im.node); err != nil {
		t.Fatal(err)
	}
	if im.created != n+2 || len(im.made) > 3 {
		t.Fatalf("created %d, remembering %d paths", im.created, len(im.made))
	}

	// Out of export order: /a/x comes after /b, /a/x/y after /c/z.
	mixed := `{"zkgo_export": 1, "nodes": [{"path": ""}, {"path": "/a"}, {"path": "/b"}, {"path": "/a/x"}, {"path": "/c"}, {"path": "/c/z"}, {"path": "/a/x/y", "data": "deep"}]}`
	for _, dry := range []bool{true, false} {
		im := &importer{ctx: context.Background(), conn: h.s.live(), root: "/mixed", dry: dry, s: h.s}
		if err := readExport(strings.NewReader(mixed), im.node); err != nil {
			t.Fatal(err)
		}
		if err := im.flush(); err != nil {
			t.Fatal(err)
		}
		if im.created != 7 {
			t.Fatalf("dry=%v: created %d, want 7", dry, im.created)
		}
	}
	if data, _, err := h.s.live().Get(context.Background(), "/mixed/a/x/y"); err != nil || string(data) != "deep" {
		t.Fatalf("/mixed/a/x/y: %q %v", data, err)
	}
}
