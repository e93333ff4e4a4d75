package console

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// TreeReader is the read access the recipe scan needs. The console's
// implementation reads through its shared zk session; tests use a map.
// Methods are called from several goroutines at once (ScanOptions.
// Concurrency of them).
type TreeReader interface {
	// Children returns the names of path's children (any order) and
	// path's own NodeInfo (Data nil). A missing node returns an error
	// wrapping zk.ErrNoNode.
	Children(ctx context.Context, path string) ([]string, NodeInfo, error)
	// Data returns at most max bytes of path's data.
	Data(ctx context.Context, path string, max int) ([]byte, error)
}

// ScanOptions bound a recipe scan.
type ScanOptions struct {
	Roots       []string // where to start; default "/"
	Budget      int      // nodes visited at most; default 100,000
	Concurrency int      // reads in flight; default 16
	// DataPerRecipe is how many participants of each recipe (holders
	// first) get their data read; default 8. DataBytes bounds each read;
	// default 256.
	DataPerRecipe int
	DataBytes     int
}

func (o *ScanOptions) defaults() {
	if len(o.Roots) == 0 {
		o.Roots = []string{"/"}
	}
	if o.Budget <= 0 {
		o.Budget = 100_000
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.DataPerRecipe <= 0 {
		o.DataPerRecipe = 8
	}
	if o.DataBytes <= 0 {
		o.DataBytes = 256
	}
}

// ScanResult is what a scan found.
type ScanResult struct {
	Recipes   []Recipe
	Visited   int       // nodes read
	Truncated bool      // the budget ran out before the tree did
	Errors    []string  // reads that failed (at most maxScanErrors)
	At        time.Time // when the scan started
	Took      time.Duration
}

const maxScanErrors = 10

// Scan walks the trees under opt.Roots breadth first, reading each node's
// children (participant-named children first, so that a budget cut leaves
// the recipes it found whole where it can), up to opt.Budget nodes, and
// recognises the recipes among the children of every node it read.
// Recipes are sorted by path. A cancelled ctx ends the scan with what it
// has (Truncated set).
func Scan(ctx context.Context, r TreeReader, opt ScanOptions, now time.Time) (res ScanResult) {
	opt.defaults()
	res = ScanResult{At: now}
	start := time.Now()
	// res is the named result: the deferred assignment must reach the
	// caller (the feed spaces its scans by Took).
	defer func() { res.Took = time.Since(start) }()

	type visit struct {
		path  string
		names []string
		info  NodeInfo
		err   error
	}
	// pending holds, per parent, the participant-named children that
	// were read: the input of RecognizeChildren.
	pending := map[string][]NodeInfo{}
	level := disjointRoots(opt.Roots)
	for len(level) > 0 && ctx.Err() == nil {
		if room := opt.Budget - res.Visited; len(level) > room {
			level, res.Truncated = level[:max(room, 0)], true
		}
		out := make([]visit, len(level))
		var wg sync.WaitGroup
		work := make(chan int)
		for range min(opt.Concurrency, len(level)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					v := &out[i]
					v.path = level[i]
					v.names, v.info, v.err = r.Children(ctx, v.path)
				}
			}()
		}
	feed:
		for i := range level {
			select {
			case work <- i:
			case <-ctx.Done():
				break feed
			}
		}
		close(work)
		wg.Wait()
		res.Visited += len(level)
		var first, rest []string
		for _, v := range out {
			if v.path == "" {
				continue // not read: ctx ended
			}
			if v.err != nil {
				if !errors.Is(v.err, zk.ErrNoNode) && len(res.Errors) < maxScanErrors {
					res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", v.path, v.err))
				}
				continue
			}
			if v.path != "/" {
				if m := IsParticipantName(v.info.Name); m {
					pending[path.Dir(v.path)] = append(pending[path.Dir(v.path)], v.info)
				}
			}
			room := opt.Budget - res.Visited
			for _, n := range v.names {
				p := joinPath(v.path, n)
				switch {
				case IsParticipantName(n) && len(first) < room:
					first = append(first, p)
				case len(rest) < room:
					rest = append(rest, p)
				default:
					res.Truncated = true // not even listed: beyond the budget
				}
			}
		}
		slices.Sort(rest)
		level = append(first, rest...)
	}
	if len(level) > 0 {
		res.Truncated = true
	}
	var rs []Recipe
	for parent, kids := range pending {
		rs = append(rs, RecognizeChildren(parent, kids, now)...)
	}
	rs = MergeSemaphores(rs)
	readParticipantData(ctx, r, rs, opt)
	res.Recipes = rs
	return res
}

// disjointRoots returns the roots without duplicates and without those
// inside another root, sorted.
func disjointRoots(roots []string) []string {
	rs := slices.Clone(roots)
	slices.Sort(rs)
	var out []string
	for _, r := range rs {
		if !slices.ContainsFunc(out, func(o string) bool { return isUnder(r, o) }) {
			out = append(out, r)
		}
	}
	return out
}

// isUnder reports whether p is root or a descendant of it.
func isUnder(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// readParticipantData fills Node.Data for the first participants of each
// recipe, holders first.
func readParticipantData(ctx context.Context, r TreeReader, rs []Recipe, opt ScanOptions) {
	var ps []*Participant
	for i := range rs {
		n := 0
		for _, list := range [][]Participant{rs[i].Holders, rs[i].Waiters} {
			for j := range list {
				if n < opt.DataPerRecipe {
					ps = append(ps, &list[j])
					n++
				}
			}
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, opt.Concurrency)
	for _, p := range ps {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if d, err := r.Data(ctx, p.Path, opt.DataBytes); err == nil {
				p.Node.Data = d
			}
		}()
	}
	wg.Wait()
}

// zkReader is the TreeReader over a zk session.
type zkReader struct{ c *zk.Conn }

func (z zkReader) Children(ctx context.Context, p string) ([]string, NodeInfo, error) {
	names, st, err := z.c.Children(ctx, p)
	if err != nil {
		return nil, NodeInfo{}, err
	}
	return names, nodeInfo(path.Base(p), st), nil
}

func (z zkReader) Data(ctx context.Context, p string, max int) ([]byte, error) {
	d, _, err := z.c.Get(ctx, p)
	if len(d) > max {
		d = d[:max]
	}
	return d, err
}

func nodeInfo(name string, st *zk.Stat) NodeInfo {
	if st == nil {
		return NodeInfo{Name: name}
	}
	return NodeInfo{
		Name:           name,
		Czxid:          st.Czxid,
		Ctime:          time.UnixMilli(st.Ctime),
		EphemeralOwner: st.EphemeralOwner,
		NumChildren:    st.NumChildren,
	}
}
