package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/zkgo/zkgo/zk"
)

// validPath reports whether p is a path ZooKeeper accepts for a read
// (absolute, no empty, "." or ".." element, no trailing slash, valid
// UTF-8, no NUL).
func validPath(p string) bool {
	if p == "/" {
		return true
	}
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || !utf8.ValidString(p) || strings.ContainsRune(p, 0) || len(p) > 4096 {
		return false
	}
	for _, e := range strings.Split(p[1:], "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}

// childPage is one page of a sorted child list.
type childPage struct {
	Names     []string
	Start     int    // index of Names[0] in the whole list
	Total     int    // children in the whole list
	PrevAfter string // "after" of the previous page ("" with HasPrev: the first page)
	HasPrev   bool
	NextAfter string // "after" of the next page
	HasNext   bool
}

// pageOf cuts one page out of sorted: the first size names greater than
// after (or, when from is set, not less than from), and no more than
// maxBytes of names (at least one), so that a page of very long names
// stays small. It is pure.
func pageOf(sorted []string, after, from string, size, maxBytes int) childPage {
	var i int
	switch {
	case from != "":
		i = sort.SearchStrings(sorted, from)
	case after != "":
		i = sort.SearchStrings(sorted, after)
		if i < len(sorted) && sorted[i] == after {
			i++
		}
	}
	j, bytes := i, 0
	for j < len(sorted) && j-i < size && (j == i || bytes+len(sorted[j]) <= maxBytes) {
		bytes += len(sorted[j])
		j++
	}
	p := childPage{Names: sorted[i:j], Start: i, Total: len(sorted)}
	if i > 0 {
		p.HasPrev = true
		k, bytes := i, 0
		for k > 0 && i-k < size && (k == i || bytes+len(sorted[k-1]) <= maxBytes) {
			bytes += len(sorted[k-1])
			k--
		}
		if k > 0 {
			p.PrevAfter = sorted[k-1]
		}
	}
	if j < len(sorted) {
		p.HasNext, p.NextAfter = true, sorted[j-1]
	}
	return p
}

// childRow is one child in the tree page's list.
type childRow struct {
	Name      string
	Shown     string // Name, cut to shownName runes
	Path      string
	Stat      *zk.Stat // nil if it could not be read (gone meanwhile)
	Ephemeral bool
}

// treeData is the tree page's content.
type treeData struct {
	Path     string
	Exists   bool
	Stat     *zk.Stat
	ACL      []zk.ACL
	ACLErr   string
	Data     Rendered
	DataErr  string
	Size     int
	View     View
	Views    []View
	Page     childPage
	Rows     []childRow
	ListErr  string
	EditText string // the data as text for the edit form ("" if not UTF-8)
	EditHex  bool   // the data is binary: the form edits hex
	Parent   string
	LoginURL string
	Now      time.Time
}

func (c *Console) serveTree(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := q.Get("path")
	if p == "" {
		p = "/"
	}
	if !validPath(p) {
		c.fail(w, r, http.StatusBadRequest, "not a valid znode path: "+p)
		return
	}
	ctx, cancel := c.reqCtx(r)
	defer cancel()
	conn, who, err := c.readSession(ctx, r)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, err.Error())
		return
	}
	d := treeData{Path: p, View: View(q.Get("view")), Views: []View{ViewText, ViewJSON, ViewHex}, Parent: parentPath(p), Now: time.Now(),
		LoginURL: c.cfg.BasePath + "/login?next=" + url.QueryEscape(c.cfg.BasePath+"/tree?path="+url.QueryEscape(p))}
	data, st, err := conn.Get(ctx, p)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		c.render(w, r, http.StatusNotFound, "tree", page{Title: p, Nav: "tree", Events: c.eventsURL("tree", p), Data: d})
		return
	case errors.Is(err, zk.ErrNoAuth):
		// The shared session may not read the data; stat and children
		// are still visible.
		d.DataErr = "the node's ACL does not let the console's anonymous session read its data"
		if who != "" {
			d.DataErr = "the node's ACL does not let " + who + " read its data"
		}
		st, err = conn.Exists(ctx, p)
		if err == nil && st == nil {
			err = zk.ErrNoNode
		}
		if errors.Is(err, zk.ErrNoAuth) {
			// exists needs READ too (ZooKeeper 3.8.4+); getACL answers
			// the stat with ADMIN.
			_, st, err = conn.GetACL(ctx, p)
		}
		if errors.Is(err, zk.ErrNoAuth) {
			// Neither READ nor ADMIN: the node is hidden from this
			// identity, stat included.
			c.fail(w, r, http.StatusForbidden, "the node's ACL hides "+p+" from "+identityName(who))
			return
		}
	}
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "read "+p+": "+err.Error())
		return
	}
	d.Exists, d.Stat, d.Size = true, st, len(data)
	switch v := d.View; v {
	case ViewText, ViewJSON, ViewHex, ViewAuto:
	default:
		d.View = ViewAuto
	}
	d.Data = RenderData(data, d.View)
	if utf8.Valid(data) && !strings.ContainsRune(string(data), 0) {
		d.EditText = string(data)
	} else {
		d.EditHex, d.EditText = true, strings.TrimSpace(hexString(data))
	}
	if acl, _, err := conn.GetACL(ctx, p); err != nil {
		d.ACLErr = err.Error()
	} else {
		d.ACL = maskDigests(acl)
	}
	var names []string
	if who == "" {
		names, err = c.kids.list(ctx, conn, p, st)
	} else if st.NumChildren > 0 {
		// The cache is the anonymous session's: a list another identity
		// may read must not be served to the others.
		names, err = c.kids.read(ctx, conn, p)
	}
	if err != nil {
		d.ListErr = err.Error()
	}
	d.Page = pageOf(names, q.Get("after"), q.Get("from"), c.cfg.PageSize, pageBytes)
	d.Rows = childRows(ctx, conn, p, d.Page.Names)
	c.render(w, r, http.StatusOK, "tree", page{Title: p, Nav: "tree", Events: c.eventsURL("tree", p), Data: d})
}

// identityName names the identity a page reads with, for messages.
func identityName(who string) string {
	if who == "" {
		return "the console's anonymous session"
	}
	return who
}

// childRows reads the Stat of each child on the page, 32 at a time.
func childRows(ctx context.Context, conn *zk.Conn, parent string, names []string) []childRow {
	rows := make([]childRow, len(names))
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i, n := range names {
		rows[i] = childRow{Name: n, Shown: shortName(n), Path: joinPath(parent, n)}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if st, err := conn.Exists(ctx, rows[i].Path); err == nil && st != nil {
				rows[i].Stat, rows[i].Ephemeral = st, st.EphemeralOwner != 0
			}
		}()
	}
	wg.Wait()
	return rows
}

// hexString is data as space-separated hex bytes (the edit form's hex).
func hexString(b []byte) string {
	const hexdig = "0123456789abcdef"
	var s strings.Builder
	for i, c := range b {
		if i > 0 {
			s.WriteByte(' ')
		}
		s.WriteByte(hexdig[c>>4])
		s.WriteByte(hexdig[c&15])
	}
	return s.String()
}

// Bounds of a tree page's child list.
const (
	pageBytes = 256 << 10 // names on one page, in bytes
	shownName = 200       // runes of a name shown (its link has all of it)
)

// shortName is name cut to shownName runes.
func shortName(name string) string {
	if utf8.RuneCountInString(name) <= shownName {
		return name
	}
	r := []rune(name)
	return string(r[:shownName]) + "…"
}

// maskDigests drops the hash of digest ACL entries ("digest:alice", not
// "digest:alice:<hash>"): the console shows no digest hash to anyone (a
// weak password is found from its hash offline).
func maskDigests(acl []zk.ACL) []zk.ACL {
	out := slices.Clone(acl)
	for i, a := range out {
		if a.ID.Scheme == "digest" {
			out[i].ID.ID, _, _ = strings.Cut(a.ID.ID, ":")
		}
	}
	return out
}
