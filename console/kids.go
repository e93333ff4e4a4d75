package console

import (
	"context"
	"slices"
	"sync"

	"github.com/zkgo/zkgo/zk"
)

// childCache keeps sorted child lists for the tree pages, shared by every
// visitor (all read through the shared anonymous session), keyed by path
// and checked against the node's czxid and cversion (so a changed list is
// read again). Its memory is bounded in bytes, and so is the work of many
// visitors asking at once:
//
//   - one read per list: requests for a list being read wait for that read
//     (single flight) instead of each reading, decoding and sorting a copy
//     (a list can be tens of MiB: 999 names of 32 KiB);
//   - at most maxListReads lists are read at once (a read costs about three
//     times the list's bytes while the reply is decoded);
//   - the lists kept hold at most limit bytes (names plus an overhead per
//     name and per list), the oldest evicted first.
type childCache struct {
	// mu guards m, order, held and flights.
	mu      sync.Mutex
	m       map[string]*childList
	order   []string // paths, oldest first (eviction order)
	held    int64    // bytes of the lists in m (listBytes)
	limit   int64
	flights map[flightKey]*flight
	// reads holds a token per list read in flight.
	reads chan struct{}
}

type childList struct {
	czxid    int64
	cversion int32
	names    []string // sorted; never modified once cached
	bytes    int64
}

// flightKey names one version of a child list.
type flightKey struct {
	path     string
	czxid    int64
	cversion int32
}

// flight is a child list read in progress; names and err are set before
// done is closed, and never after.
type flight struct {
	done  chan struct{}
	names []string
	err   error
}

// maxListReads bounds the child list reads in flight.
const maxListReads = 2

func newChildCache(limit int64) *childCache {
	return &childCache{m: map[string]*childList{}, limit: limit, flights: map[flightKey]*flight{}, reads: make(chan struct{}, maxListReads)}
}

// listBytes is what a list is counted for: its names and an overhead per
// name (a string header) and per list.
func listBytes(p string, names []string) int64 {
	n := int64(len(p) + 128)
	for _, s := range names {
		n += int64(len(s) + 16)
	}
	return n
}

// list returns path's children sorted, st being path's current Stat.
// The slice is shared: callers must not modify it.
func (cc *childCache) list(ctx context.Context, conn *zk.Conn, p string, st *zk.Stat) ([]string, error) {
	if st.NumChildren == 0 {
		return nil, nil
	}
	key := flightKey{p, st.Czxid, st.Cversion}
	cc.mu.Lock()
	if l, ok := cc.m[p]; ok && l.czxid == st.Czxid && l.cversion == st.Cversion {
		cc.mu.Unlock()
		return l.names, nil
	}
	if f, ok := cc.flights[key]; ok {
		cc.mu.Unlock()
		select {
		case <-f.done:
			return f.names, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	cc.flights[key] = f
	cc.mu.Unlock()

	f.names, f.err = cc.read(ctx, conn, p)
	cc.mu.Lock()
	delete(cc.flights, key)
	if f.err == nil {
		cc.store(p, st, f.names)
	}
	cc.mu.Unlock()
	close(f.done)
	return f.names, f.err
}

// read reads and sorts path's children, at most maxListReads at once.
func (cc *childCache) read(ctx context.Context, conn *zk.Conn, p string) ([]string, error) {
	select {
	case cc.reads <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-cc.reads }()
	names, _, err := conn.Children(ctx, p)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// store keeps a list read for st, evicting the oldest lists to stay
// within the limit (a list larger than the limit is not kept). cc.mu is
// held.
func (cc *childCache) store(p string, st *zk.Stat, names []string) {
	if old, ok := cc.m[p]; ok {
		cc.held -= old.bytes
		delete(cc.m, p)
		cc.order = slices.DeleteFunc(cc.order, func(q string) bool { return q == p })
	}
	n := listBytes(p, names)
	if n > cc.limit {
		return
	}
	for cc.held+n > cc.limit && len(cc.order) > 0 {
		cc.held -= cc.m[cc.order[0]].bytes
		delete(cc.m, cc.order[0])
		cc.order = cc.order[1:]
	}
	cc.m[p] = &childList{czxid: st.Czxid, cversion: st.Cversion, names: names, bytes: n}
	cc.order = append(cc.order, p)
	cc.held += n
}
