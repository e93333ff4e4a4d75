package zkcli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzReadExport: an import document is read without a panic; every node
// it yields either is refused with an error or has a valid path and at
// most maxImportData bytes of data, and encodes back (as export writes
// it) to a document that yields the same node.
func FuzzReadExport(f *testing.F) {
	for _, s := range []string{
		// What export writes (TestExportImport's tree, shortened).
		"{\"zkgo_export\": 1, \"root\": \"/app\", \"nodes\": [\n" +
			`  {"path":"","data":"root data","acl":[{"perms":"cdrwa","scheme":"world","id":"anyone"}]},` + "\n" +
			`  {"path":"/bin","base64":"AAEC/w==","acl":[{"perms":"cdrwa","scheme":"world","id":"anyone"}]},` + "\n" +
			`  {"path":"/eph","data":"e","ephemeral":true,"acl":[{"perms":"cdrwa","scheme":"world","id":"anyone"}]},` + "\n" +
			`  {"path":"/null","acl":[{"perms":"ra","scheme":"digest","id":"bob:HEtFvBA7fBbU3gOSs+h9XEwvICk="},{"perms":"cdrwa","scheme":"world","id":"anyone"}]}` +
			"\n]}\n",
		`{"zkgo_export": 1, "nodes": [{"path": "/a", "data": "\u0000\ud800<>&", "acl": []}]}`,
		`{"zkgo_export": 1, "extra": {"x": [1, 2, {"y": null}]}, "nodes": []}`,
		`[1,2]`,
		`{"zkgo_export": 2, "nodes": []}`,
		`{"nodes": [], "zkgo_export": 1}`,
		`{"zkgo_export": 1, "nodes": [{"path": "x", "acl": []}]}`,
		`{"zkgo_export": 1, "nodes": [{"path": "/a", "base64": "!!", "acl": []}]}`,
		`{"zkgo_export": 1, "nodes": [{"path": "/a", "acl": [{"perms": "rx", "scheme": "world", "id": "anyone"}]}]}`,
		`{"zkgo_export": 1, "nodes": [{"path": "/a", "data": "x", "base64": "eA==", "acl": []}]}`,
		`{"zkgo_export": 1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var nodes []exportNode
		readExport(strings.NewReader(doc), func(n exportNode) error {
			nodes = append(nodes, n)
			return nil
		})
		for _, n := range nodes {
			p, err := importPath("/r", n)
			if err != nil {
				continue
			}
			if err := validatePath(p, false); err != nil {
				t.Fatalf("node %+v accepted at %q: %v", n, p, err)
			}
			data, acl, err := importContent(n)
			if err != nil {
				continue
			}
			if len(data) > maxImportData || len(acl) == 0 {
				t.Fatalf("node %+v: %d bytes, %d ACL entries", n, len(data), len(acl))
			}
			b, err := json.Marshal(n)
			if err != nil {
				t.Fatal(err)
			}
			var back []exportNode
			if err := readExport(strings.NewReader(`{"zkgo_export": 1, "nodes": [`+string(b)+`]}`), func(n exportNode) error {
				back = append(back, n)
				return nil
			}); err != nil {
				t.Fatalf("%s does not read back: %v", b, err)
			}
			if len(back) != 1 || !reflect.DeepEqual(normACL(back[0]), normACL(n)) {
				t.Fatalf("%s reads back as %+v, want %+v", b, back, n)
			}
		}
	})
}

// normACL makes a missing and an empty ACL list equal (export always
// writes a list; a document may leave it out).
func normACL(n exportNode) exportNode {
	if len(n.ACL) == 0 {
		n.ACL = nil
	}
	return n
}
