package check

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SeqCreate is a create of a sequential node (persistent or ephemeral)
// under Parent.
type SeqCreate struct {
	Client string // the workload's name for the client, for the evidence
	Parent string // the parent's path
	// Prefix is the child's name as asked, before the sequence number (the
	// last element of the path passed to create). Give every create a
	// prefix of its own (the client's name and a counter): a listing that
	// shows a node then names the create that made it, even one whose
	// outcome was unknown. "" or a prefix shared by several creates
	// attributes nothing.
	Prefix       string
	Call, Return int64
	Outcome      Outcome
	Name         string // OK: the name or path the create returned
}

// String formats c on one line.
func (c SeqCreate) String() string {
	s := fmt.Sprintf("%s create-sequential %s/%s %s -> ", c.Client, c.Parent, c.Prefix, span(c.Call, c.Return))
	switch c.Outcome {
	case OK:
		return s + baseName(c.Name)
	case Failed:
		return s + "failed"
	}
	return s + "unknown"
}

// SeqListing is a getChildren of Parent that succeeded.
type SeqListing struct {
	Client       string
	Parent       string
	Call, Return int64
	Names        []string // the children's names, as returned
}

// mention formats l on one line, saying whether it lists name.
func (l SeqListing) mention(name string, listed bool) string {
	verb := "lists"
	if !listed {
		verb = "does not list"
	}
	return fmt.Sprintf("%s getChildren %s %s %s %s (of %d children)", l.Client, l.Parent, span(l.Call, l.Return), verb, name, len(l.Names))
}

// SequentialHistory is the sequential workload's history.
type SequentialHistory struct {
	Creates  []SeqCreate
	Listings []SeqListing
}

// SequentialOptions configure Sequential.
type SequentialOptions struct {
	// Durable says no child of the checked parents is deleted during the
	// run (no deletes, no ephemeral sequential nodes): then a create
	// acknowledged before a listing was called, and a node listed before
	// it was called, must be in that listing.
	Durable bool
}

// seqNode is a node known to have existed under one parent.
type seqNode struct {
	name   string
	suffix int64
	lower  int64  // its create was called at or after lower (MinInt64: unknown)
	upper  int64  // it existed by upper: its create returned, or a listing showed it
	src    string // the record that shows it, for the evidence
}

// Sequential checks sequential-suffix names under each parent: unique
// (no two nodes ever get one suffix, including a suffix reused after a
// failover by a node whose create's outcome was unknown and that a listing
// showed), and increasing in real time (a create called after another
// node existed — its create returned, or a listing showed it — gets a
// larger suffix). It also catches forged answers: a name that is not the
// prefix asked for with a sequence number, a node listed before its create
// was called, a node made by a create that failed, one create with two
// names. With o.Durable it also checks that acknowledged and listed nodes
// stay listed.
//
// A create of unknown outcome counts only once a listing shows its node
// (attributed by its unique Prefix); it then existed from the earliest
// listing that showed it.
//
// It assumes each parent exists for the whole run (deleting and
// re-creating a parent restarts its sequence numbers).
func Sequential(h SequentialHistory, o SequentialOptions) Result {
	res := Result{Name: "sequential", OK: true, Checked: len(h.Creates) + len(h.Listings)}
	var parents []string
	creates := make(map[string][]SeqCreate)
	listings := make(map[string][]SeqListing)
	for _, c := range h.Creates {
		if _, ok := creates[c.Parent]; !ok {
			parents = append(parents, c.Parent)
		}
		creates[c.Parent] = append(creates[c.Parent], c)
	}
	for _, l := range h.Listings {
		if _, ok := creates[l.Parent]; !ok {
			if _, ok := listings[l.Parent]; !ok {
				parents = append(parents, l.Parent)
			}
		}
		listings[l.Parent] = append(listings[l.Parent], l)
	}
	slices.Sort(parents)
	st := seqStats{}
	for _, p := range parents {
		if !checkParent(&res, &st, creates[p], listings[p], o) {
			return res
		}
	}
	res.note("%d creates (%d of unknown outcome, %d of them shown by a listing), %d listings, %d parents",
		len(h.Creates), st.unknown, st.attributed, len(h.Listings), len(parents))
	if st.unattributable > 0 {
		res.note("%d creates share their prefix with another or have none: a listing cannot name them", st.unattributable)
	}
	return res
}

type seqStats struct{ unknown, attributed, unattributable int }

// checkParent checks the creates and listings of one parent; it returns
// false after recording a violation in res.
func checkParent(res *Result, st *seqStats, creates []SeqCreate, listings []SeqListing, o SequentialOptions) bool {
	byPrefix := make(map[string][]int)
	for i, c := range creates {
		if c.Outcome == Unknown {
			st.unknown++
		}
		if c.Prefix != "" {
			byPrefix[c.Prefix] = append(byPrefix[c.Prefix], i)
		}
	}
	for _, c := range creates {
		if c.Prefix == "" || len(byPrefix[c.Prefix]) > 1 {
			st.unattributable++
		}
	}
	byName := make(map[string]*seqNode)
	bySuffix := make(map[int64]*seqNode)
	var nodes []*seqNode
	// addNode registers a node, or returns the one of that name; it
	// reports a suffix given to two names.
	addNode := func(name string, suffix int64, src string) (*seqNode, bool) {
		if n, ok := byName[name]; ok {
			return n, true
		}
		n := &seqNode{name: name, suffix: suffix, lower: math.MinInt64, upper: math.MaxInt64, src: src}
		if m, ok := bySuffix[suffix]; ok {
			res.fail(fmt.Sprintf("sequence number %d was given to two nodes, %s and %s", suffix, m.name, name), m.src, src)
			return nil, false
		}
		byName[name], bySuffix[suffix] = n, n
		nodes = append(nodes, n)
		return n, true
	}

	// What the creates answered.
	for _, c := range creates {
		if c.Outcome != OK {
			continue
		}
		name := baseName(c.Name)
		suffix, ok := seqSuffix(name)
		if !ok || (c.Prefix != "" && name[:len(name)-seqDigits] != c.Prefix) {
			res.fail(fmt.Sprintf("a create was answered %q, which is not its prefix %q followed by a sequence number", name, c.Prefix), c.String())
			return false
		}
		if n, ok := byName[name]; ok {
			res.fail(fmt.Sprintf("two creates were answered the same name %s", name), n.src, c.String())
			return false
		}
		n, ok := addNode(name, suffix, c.String())
		if !ok {
			return false
		}
		n.lower, n.upper = c.Call, c.Return
	}

	// What the listings showed, earliest first.
	slices.SortStableFunc(listings, func(a, b SeqListing) int { return cmp.Compare(a.Return, b.Return) })
	for _, l := range listings {
		seen := make(map[string]bool, len(l.Names))
		for _, name := range l.Names {
			if seen[name] {
				res.fail(fmt.Sprintf("a listing of %s names %s twice", l.Parent, name), l.mention(name, true))
				return false
			}
			seen[name] = true
			suffix, ok := seqSuffix(name)
			if !ok {
				continue // not a sequential node
			}
			src := l.mention(name, true)
			var c *SeqCreate // the create that made the node, if its prefix tells
			if ids := byPrefix[name[:len(name)-seqDigits]]; len(ids) == 1 {
				c = &creates[ids[0]]
				if c.Outcome == Unknown {
					src = c.String() + ", listed at " + ts(l.Return)
				}
			}
			n, ok := addNode(name, suffix, src)
			if !ok {
				return false
			}
			n.upper = min(n.upper, l.Return)
			if c == nil {
				continue
			}
			switch {
			case l.Return < c.Call:
				res.fail(fmt.Sprintf("a listing shows %s before its create was called", name), l.mention(name, true), c.String())
				return false
			case c.Outcome == Failed:
				res.fail(fmt.Sprintf("a listing shows %s, made by a create that failed", name), c.String(), l.mention(name, true))
				return false
			case c.Outcome == OK && baseName(c.Name) != name:
				res.fail(fmt.Sprintf("a create answered %s but a listing shows %s, with its prefix", baseName(c.Name), name), c.String(), l.mention(name, true))
				return false
			case c.Outcome == Unknown && n.lower == math.MinInt64:
				st.attributed++
				n.lower = c.Call
			}
		}
	}

	// Increasing in real time: a node whose create was called after
	// another node existed has the larger suffix.
	byUpper := slices.Clone(nodes)
	slices.SortStableFunc(byUpper, func(a, b *seqNode) int { return cmp.Compare(a.upper, b.upper) })
	var called []*seqNode
	for _, n := range nodes {
		if n.lower != math.MinInt64 {
			called = append(called, n)
		}
	}
	slices.SortStableFunc(called, func(a, b *seqNode) int { return cmp.Compare(a.lower, b.lower) })
	var top *seqNode // the largest suffix among nodes that existed so far
	j := 0
	for _, b := range called {
		for ; j < len(byUpper) && byUpper[j].upper < b.lower; j++ {
			if top == nil || byUpper[j].suffix > top.suffix {
				top = byUpper[j]
			}
		}
		if top == b {
			res.fail(fmt.Sprintf("a listing shows %s before its create was called", b.name), b.src)
			return false
		}
		if top != nil && top.suffix >= b.suffix {
			res.fail(fmt.Sprintf("%s was created after %s existed but has a smaller sequence number", b.name, top.name), top.src, b.src)
			return false
		}
	}

	if !o.Durable {
		return true
	}
	slices.SortStableFunc(listings, func(a, b SeqListing) int { return cmp.Compare(a.Call, b.Call) })
	j = 0
	for _, l := range listings {
		for ; j < len(byUpper) && byUpper[j].upper < l.Call; j++ {
		}
		listed := make(map[string]bool, len(l.Names))
		for _, name := range l.Names {
			listed[name] = true
		}
		for _, n := range byUpper[:j] {
			if !listed[n.name] {
				res.fail(fmt.Sprintf("%s existed at %s but a later listing does not show it", n.name, ts(n.upper)), n.src, l.mention(n.name, false))
				return false
			}
		}
	}
	return true
}

// seqDigits is the length of a sequence number: ZooKeeper formats the
// parent's cversion with %010d.
const seqDigits = 10

// seqSuffix returns the sequence number at the end of a child's name.
func seqSuffix(name string) (int64, bool) {
	if len(name) < seqDigits {
		return 0, false
	}
	n, err := strconv.ParseInt(name[len(name)-seqDigits:], 10, 64)
	return n, err == nil
}

// baseName returns the last element of a path (or name).
func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }
