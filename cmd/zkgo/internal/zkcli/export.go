package zkcli

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/zkgo/zkgo/zk"
)

// Subtree export and import (zkgo's own commands): a subtree as a JSON
// document, to copy configuration trees between environments.
//
//	{"zkgo_export": 1, "root": "/app", "nodes": [
//	  {"path": "", "data": "text", "acl": [{"perms": "cdrwa", "scheme": "world", "id": "anyone"}]},
//	  {"path": "/a", "base64": "AAEC", "acl": [...]},
//	  {"path": "/a/e", "data": "", "ephemeral": true, "acl": [...]}
//	]}
//
// Paths are relative to the root ("" is the root itself), parents before
// children, siblings sorted. Data is "data" (UTF-8 text) when it is valid
// UTF-8, else "base64"; a node with null data has neither. Ephemeral
// nodes are listed (marked) but never imported: they belong to a
// session. A client cannot tell containers and TTL nodes from persistent
// ones (ZooKeeper shows them all with ephemeralOwner 0), so they export
// and import as persistent nodes.

// exportVersion is the document format's version.
const exportVersion = 1

// exportNode is one node of an export document.
type exportNode struct {
	Path      string      `json:"path"`
	Data      *string     `json:"data,omitempty"`
	Base64    *string     `json:"base64,omitempty"`
	Ephemeral bool        `json:"ephemeral,omitempty"`
	ACL       []exportACL `json:"acl"`
}

type exportACL struct {
	Perms  string `json:"perms"`
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
}

// Bounds of an import document: a node's data (jute.maxbuffer's default),
// the JSON text of one node (or of any other value of the document: data
// escaped as \u0000 takes six bytes a byte, and a request's ACL may take a
// few MiB of JSON) and the number of nodes. The document is read one value
// at a time, so memory is bounded by maxImportValue, not by its size.
const (
	maxImportData  = 1 << 20
	maxImportValue = 8 << 20
	maxImportNodes = 10_000_000
	// importBatch is how many creates go into one multi, and
	// importBatchBytes the data they may carry together (well under
	// jute.maxbuffer).
	importBatch      = 200
	importBatchBytes = 512 << 10
)

func cmdExport(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"f", true, "file"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() != 2 {
		return c.usage()
	}
	root := cl.arg(1)
	if err := checkPath(root, false); err != nil {
		return err
	}
	var out io.Writer = &shellWriter{s}
	if cl.has("f") {
		f, err := os.Create(cl.val("f"))
		if err != nil {
			return fail("export: %v", err)
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		defer bw.Flush()
		out = bw
	}
	n, err := exportTree(ctx, s.live(), root, out)
	if err != nil {
		return err
	}
	if cl.has("f") {
		s.errf("exported %d nodes of %s to %s\n", n, root, cl.val("f"))
	}
	return nil
}

// shellWriter writes to the shell's output.
type shellWriter struct{ s *Shell }

func (w *shellWriter) Write(p []byte) (int, error) {
	w.s.outf("%s", p)
	return len(p), nil
}

// exportTree writes the subtree at root as an export document, one node
// at a time (nothing but the path stack is held), and returns how many
// nodes it wrote.
func exportTree(ctx context.Context, conn *zk.Conn, root string, w io.Writer) (int, error) {
	head, _ := json.Marshal(root)
	if _, err := fmt.Fprintf(w, "{\"zkgo_export\": %d, \"root\": %s, \"nodes\": [\n", exportVersion, head); err != nil {
		return 0, fail("export: %v", err)
	}
	n := 0
	stack := []string{root}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		data, st, err := conn.Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) && p != root {
			continue // deleted meanwhile
		}
		if err != nil {
			return n, zkFail(err, p)
		}
		acl, _, err := conn.GetACL(ctx, p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return n, zkFail(err, p)
		}
		kids, _, err := conn.Children(ctx, p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return n, zkFail(err, p)
		}
		rel := strings.TrimPrefix(p, root)
		if root == "/" {
			rel = strings.TrimPrefix(p, "/")
			if rel != "" {
				rel = "/" + rel
			}
		}
		node := exportNode{Path: rel, Ephemeral: st.EphemeralOwner != 0, ACL: []exportACL{}}
		switch {
		case data == nil:
		case utf8.Valid(data):
			d := string(data)
			node.Data = &d
		default:
			d := base64.StdEncoding.EncodeToString(data)
			node.Base64 = &d
		}
		for _, a := range acl {
			node.ACL = append(node.ACL, exportACL{Perms: permString(a.Perms), Scheme: a.ID.Scheme, ID: a.ID.ID})
		}
		b, err := json.Marshal(node)
		if err != nil {
			return n, fail("export: %v", err)
		}
		sep := ",\n"
		if n == 0 {
			sep = ""
		}
		if _, err := fmt.Fprintf(w, "%s  %s", sep, b); err != nil {
			return n, fail("export: %v", err)
		}
		n++
		sort.Sort(sort.Reverse(sort.StringSlice(kids)))
		for _, k := range kids {
			stack = append(stack, joinPath(p, k))
		}
	}
	if _, err := io.WriteString(w, "\n]}\n"); err != nil {
		return n, fail("export: %v", err)
	}
	return n, nil
}

func cmdImport(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"n", false, "dry-run"}, {"o", false, "overwrite"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() != 3 {
		return c.usage()
	}
	file, root := cl.arg(1), cl.arg(2)
	if err := checkPath(root, false); err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return fail("import: %v", err)
	}
	defer f.Close()
	im := &importer{ctx: ctx, conn: s.live(), root: root, dry: cl.has("n"), overwrite: cl.has("o"), s: s}
	if err := readExport(bufio.NewReader(f), im.node); err != nil {
		return err
	}
	if err := im.flush(); err != nil {
		return err
	}
	verb := "imported"
	if im.dry {
		verb = "would import"
	}
	s.outf("%s %d nodes under %s: %d created, %d updated, %d left as they were, %d ephemeral skipped\n",
		verb, im.created+im.updated+im.same, root, im.created, im.updated, im.same, im.ephemeral)
	return nil
}

// readExport reads an export document and calls fn for each node, in
// order, holding one node at a time: no value of the document (a node, a
// key, an unknown member) may take more than maxImportValue bytes of JSON.
func readExport(r io.Reader, fn func(exportNode) error) error {
	lr := &valueLimiter{r: r}
	dec := json.NewDecoder(lr)
	bad := func(format string, a ...any) error {
		for _, x := range a {
			if err, ok := x.(error); ok && errors.Is(err, errValueTooLarge) {
				return fail("import: a value of the document is larger than %d bytes of JSON (a node's data may hold %d bytes)", maxImportValue, maxImportData)
			}
		}
		return fail("import: not a zkgo export document: "+format, a...)
	}
	// token and decode read one value with a fresh budget.
	token := func() (json.Token, error) {
		lr.reset()
		return dec.Token()
	}
	decode := func(v any) error {
		lr.reset()
		return dec.Decode(v)
	}
	if t, err := token(); err != nil || t != json.Delim('{') {
		return bad("%v", err)
	}
	sawVersion, sawNodes := false, false
	for dec.More() {
		t, err := token()
		if err != nil {
			return bad("%v", err)
		}
		switch t {
		case "zkgo_export":
			var v int
			if err := decode(&v); err != nil || v != exportVersion {
				return bad("version %d (%v), want %d", v, err, exportVersion)
			}
			sawVersion = true
		case "nodes":
			if !sawVersion {
				return bad("\"zkgo_export\" must come before \"nodes\"")
			}
			if t, err := token(); err != nil || t != json.Delim('[') {
				return bad("nodes is not a list (%v)", err)
			}
			for i := 0; dec.More(); i++ {
				if i >= maxImportNodes {
					return fail("import: more than %d nodes", maxImportNodes)
				}
				var n exportNode
				if err := decode(&n); err != nil {
					if errors.Is(err, errValueTooLarge) {
						return fail("import: node %d is larger than %d bytes of JSON (its data may hold %d bytes)", i+1, maxImportValue, maxImportData)
					}
					return bad("node %d: %v", i+1, err)
				}
				if err := fn(n); err != nil {
					return err
				}
			}
			if _, err := token(); err != nil {
				return bad("%v", err)
			}
			sawNodes = true
		default:
			var skip json.RawMessage
			if err := decode(&skip); err != nil {
				return bad("%v", err)
			}
		}
	}
	if !sawNodes {
		return bad("no \"nodes\"")
	}
	return nil
}

// errValueTooLarge is valueLimiter's error.
var errValueTooLarge = errors.New("value too large")

// valueLimiter lets the JSON decoder read at most maxImportValue bytes
// after each reset, so one value of any size cannot make it buffer the
// rest of the file. (The decoder reads ahead, so the budget also covers
// the start of the next value; maxImportValue is far above any real
// node.)
type valueLimiter struct {
	r    io.Reader
	left int
}

func (l *valueLimiter) reset() { l.left = maxImportValue }

func (l *valueLimiter) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errValueTooLarge
	}
	if len(p) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= n
	return n, err
}

// importer creates the nodes of a document under root, in multis of
// creates; nodes that exist already are compared and, with overwrite,
// updated (data and ACL).
type importer struct {
	ctx            context.Context
	conn           *zk.Conn
	root           string
	dry, overwrite bool
	s              *Shell
	// batch holds the pending creates (batchFirst the first one's path);
	// made holds the paths this import created that are ancestors of the
	// last node (or that node), deepest last: the children of a created
	// node cannot exist yet, so they are batched without a read. Export
	// documents list parents right before their subtrees, so the stack
	// is all it takes, and memory does not grow with the document; a
	// node whose created parent is no longer on it is read first, which
	// is only slower.
	batch                             []zk.Op
	batchFirst                        string
	batchBytes                        int
	made                              []string
	created, updated, same, ephemeral int
}

func (im *importer) node(n exportNode) error {
	p, err := importPath(im.root, n)
	if err != nil {
		return err
	}
	if n.Ephemeral {
		im.ephemeral++
		return nil
	}
	data, acl, err := importContent(n)
	if err != nil {
		return err
	}
	for len(im.made) > 0 && !isAncestor(im.made[len(im.made)-1], p) {
		im.made = im.made[:len(im.made)-1]
	}
	if len(im.made) > 0 && im.made[len(im.made)-1] == parentPath(p) {
		return im.create(p, data, acl)
	}
	// A node that may exist already (the root, usually) is compared, not
	// created: flush first so that the read sees what came before.
	if err := im.flush(); err != nil {
		return err
	}
	old, st, err := im.conn.Get(im.ctx, p)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return im.create(p, data, acl)
	case err != nil:
		return zkFail(err, p)
	}
	oldACL, _, err := im.conn.GetACL(im.ctx, p)
	if err != nil {
		return zkFail(err, p)
	}
	if string(old) == string(data) && (old == nil) == (data == nil) && sameACL(oldACL, acl) {
		im.same++
		return nil
	}
	if !im.overwrite {
		return fail("import: %s exists with other data or ACL (-o overwrites it); nothing after it was imported", p)
	}
	im.updated++
	if im.dry {
		return nil
	}
	if _, err := im.conn.Set(im.ctx, p, data, st.Version); err != nil {
		return zkFail(err, p)
	}
	if !sameACL(oldACL, acl) {
		if _, err := im.conn.SetACL(im.ctx, p, acl, zk.AnyVersion); err != nil {
			return zkFail(err, p)
		}
	}
	return nil
}

// importPath returns the path under root of a node of an import document.
func importPath(root string, n exportNode) (string, error) {
	if n.Path != "" && !strings.HasPrefix(n.Path, "/") {
		return "", fail("import: node path %q must be empty (the root) or start with /", n.Path)
	}
	p := root + n.Path
	if root == "/" && n.Path != "" {
		p = n.Path
	}
	if err := validatePath(p, false); err != nil {
		return "", fail("import: node %q: %v", n.Path, err)
	}
	return p, nil
}

// importContent returns the data and ACL of a node of an import document.
func importContent(n exportNode) ([]byte, []zk.ACL, error) {
	var data []byte
	switch {
	case n.Data != nil && n.Base64 != nil:
		return nil, nil, fail("import: node %q has both data and base64", n.Path)
	case n.Data != nil:
		data = []byte(*n.Data)
	case n.Base64 != nil:
		var err error
		if data, err = base64.StdEncoding.DecodeString(*n.Base64); err != nil {
			return nil, nil, fail("import: node %q: bad base64: %v", n.Path, err)
		}
	}
	if len(data) > maxImportData {
		return nil, nil, fail("import: node %q: %d bytes of data, more than %d", n.Path, len(data), maxImportData)
	}
	acl := make([]zk.ACL, 0, len(n.ACL))
	for _, a := range n.ACL {
		perms, ok := parsePerms(a.Perms)
		if !ok {
			return nil, nil, fail("import: node %q: bad permissions %q (letters of cdrwa)", n.Path, a.Perms)
		}
		acl = append(acl, zk.ACL{Perms: perms, ID: zk.Id{Scheme: a.Scheme, ID: a.ID}})
	}
	if len(acl) == 0 {
		acl = zk.OpenACLUnsafe
	}
	return data, acl, nil
}

// create adds a create to the batch, sending the batch when it is full.
func (im *importer) create(p string, data []byte, acl []zk.ACL) error {
	if len(im.batch) == 0 {
		im.batchFirst = p
	}
	im.batch = append(im.batch, zk.CreateOp(p, data, acl, zk.ModePersistent))
	im.batchBytes += len(data) + len(p)
	im.made = append(im.made, p)
	im.created++
	if len(im.batch) >= importBatch || im.batchBytes >= importBatchBytes {
		return im.flush()
	}
	return nil
}

// flush sends the pending creates as one multi (none in a dry run).
func (im *importer) flush() error {
	if len(im.batch) == 0 {
		return nil
	}
	ops := im.batch
	im.batch, im.batchBytes = nil, 0
	if im.dry {
		return nil
	}
	if _, err := im.conn.Multi(im.ctx, ops...); err != nil {
		return fail("import: creating %d nodes from %s on (none of them was created; the nodes before were): %s",
			len(ops), im.batchFirst, cliMessage(err, im.batchFirst))
	}
	return nil
}

// isAncestor reports whether a is a proper ancestor of p.
func isAncestor(a, p string) bool {
	if a == "/" {
		return p != "/"
	}
	return len(p) > len(a) && p[len(a)] == '/' && p[:len(a)] == a
}

// parentPath returns the parent of a path other than the root.
func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func sameACL(a, b []zk.ACL) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// parsePerms reads "cdrwa" letters in any order.
func parsePerms(s string) (zk.Perm, bool) {
	var p zk.Perm
	for _, c := range s {
		switch c {
		case 'c':
			p |= zk.PermCreate
		case 'd':
			p |= zk.PermDelete
		case 'r':
			p |= zk.PermRead
		case 'w':
			p |= zk.PermWrite
		case 'a':
			p |= zk.PermAdmin
		default:
			return 0, false
		}
	}
	return p, true
}
