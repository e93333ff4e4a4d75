package zkcli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/zk"
)

// export writes a subtree (text and binary data, null data, ACLs,
// ephemerals marked) that import re-creates elsewhere exactly — in
// batches, as a dry run first, refusing to change a node that differs
// unless -o — and a document the shell did not write is refused with a
// message.
func TestExportImport(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	c := h.s.Conn()
	digest := zk.ACL{Perms: zk.PermRead | zk.PermAdmin, ID: zk.Id{Scheme: "digest", ID: "bob:HEtFvBA7fBbU3gOSs+h9XEwvICk="}}
	world := zk.OpenACLUnsafe
	mk := func(p string, data []byte, acl []zk.ACL, mode zk.CreateMode) {
		t.Helper()
		if _, err := c.Create(ctx, p, data, acl, mode); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	mk("/app", []byte("root data"), world, zk.ModePersistent)
	mk("/app/bin", []byte{0, 1, 2, 0xff}, world, zk.ModePersistent)
	mk("/app/null", nil, append([]zk.ACL{digest}, world...), zk.ModePersistent)
	mk("/app/eph", []byte("e"), world, zk.ModeEphemeral)
	mk("/app/many", nil, world, zk.ModePersistent)
	for i := 0; i < 450; i++ { // more than two multis' worth
		mk(fmt.Sprintf("/app/many/n%03d", i), []byte(fmt.Sprintf("v%d", i)), world, zk.ModePersistent)
	}

	file := filepath.Join(t.TempDir(), "app.json")
	if out, errs, code := h.exec("export -f " + file + " /app"); code != 0 || out != "" || !strings.Contains(errs, "exported 455 nodes") {
		t.Fatalf("export: %d %q %q", code, out, errs)
	}
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"zkgo_export": 1`, `"root": "/app"`, `{"path":"","data":"root data"`, `"path":"/bin","base64":"AAEC/w=="`, `"path":"/eph","data":"e","ephemeral":true`} {
		if !strings.Contains(string(doc), want) {
			t.Fatalf("export lacks %s:\n%.600s", want, doc)
		}
	}
	stdout, _, code := h.exec("export /app/null")
	if code != 0 || !strings.Contains(stdout, `{"path":"","acl":[{"perms":"ra","scheme":"digest","id":"bob:HEtFvBA7fBbU3gOSs+h9XEwvICk="},{"perms":"cdrwa","scheme":"world","id":"anyone"}]}`) {
		t.Fatalf("export to stdout: %d %q", code, stdout)
	}

	if out, errs, code := h.exec("import -n " + file + " /copy"); code != 0 || errs != "" || out != "would import 454 nodes under /copy: 454 created, 0 updated, 0 left as they were, 1 ephemeral skipped\n" {
		t.Fatalf("dry run: %d %q %q", code, out, errs)
	}
	if st, _ := c.Exists(ctx, "/copy"); st != nil {
		t.Fatal("a dry run created /copy")
	}
	if out, errs, code := h.exec("import " + file + " /copy"); code != 0 || errs != "" || !strings.HasPrefix(out, "imported 454 nodes under /copy: 454 created") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	same := func(a, b string) {
		t.Helper()
		da, _, err1 := c.Get(ctx, a)
		db, _, err2 := c.Get(ctx, b)
		aa, _, err3 := c.GetACL(ctx, a)
		ab, _, err4 := c.GetACL(ctx, b)
		if err := errorsJoin(err1, err2, err3, err4); err != nil || string(da) != string(db) || (da == nil) != (db == nil) || !sameACL(aa, ab) {
			t.Fatalf("%s and %s differ: %q/%q %v/%v %v", a, b, da, db, aa, ab, err)
		}
	}
	same("/app", "/copy")
	same("/app/bin", "/copy/bin")
	same("/app/null", "/copy/null")
	same("/app/many/n449", "/copy/many/n449")
	if st, _ := c.Exists(ctx, "/copy/eph"); st != nil {
		t.Fatal("an ephemeral was imported")
	}

	// Importing again changes nothing; a node changed meanwhile is only
	// overwritten with -o.
	if out, _, code := h.exec("import " + file + " /copy"); code != 0 || !strings.Contains(out, "0 created, 0 updated, 454 left as they were") {
		t.Fatalf("import again: %d %q", code, out)
	}
	if _, err := c.Set(ctx, "/copy/many/n007", []byte("changed"), zk.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := h.exec("import " + file + " /copy"); code != 1 || !strings.Contains(errs, "/copy/many/n007 exists with other data or ACL (-o overwrites it)") {
		t.Fatalf("import over a changed node: %d %q", code, errs)
	}
	if out, _, code := h.exec("import -o " + file + " /copy"); code != 0 || !strings.Contains(out, "1 updated") {
		t.Fatalf("import -o: %d %q", code, out)
	}
	same("/app/many/n007", "/copy/many/n007")

	bad := filepath.Join(t.TempDir(), "bad.json")
	for _, tc := range []struct{ doc, want string }{
		{`[1,2]`, "not a zkgo export document"},
		{`{"zkgo_export": 2, "nodes": []}`, "version 2"},
		{`{"zkgo_export": 1, "nodes": [{"path": "x", "acl": []}]}`, `node path "x" must be empty`},
		{`{"zkgo_export": 1, "nodes": [{"path": "/a", "base64": "!!", "acl": []}]}`, "bad base64"},
		{`{"zkgo_export": 1, "nodes": [{"path": "/a", "acl": [{"perms": "rx", "scheme": "world", "id": "anyone"}]}]}`, `bad permissions "rx"`},
		{`{"zkgo_export": 1}`, `no "nodes"`},
	} {
		if err := os.WriteFile(bad, []byte(tc.doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, errs, code := h.exec("import " + bad + " /bad"); code != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("import %s: %d %q, want %q", tc.doc, code, errs, tc.want)
		}
	}
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
