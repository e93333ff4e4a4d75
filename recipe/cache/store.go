package cache

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/zkgo/zkgo/zk"
)

// store is the cached subtree. The engine's goroutine is its only writer
// and changes it a whole batch at a time (apply), under mu, so readers
// (Get, Children, Snapshot, from any goroutine) always see a state the
// server's subtree had at some zxid.
type store struct {
	// mu guards nodes, zxid and live. No other lock is taken inside it.
	mu    sync.RWMutex
	nodes map[string]*node
	zxid  int64 // the zxid of the state (Snapshot)
	live  bool  // false once the cache stopped: nothing is served
}

// node is one cached znode. Its path is its key in store.nodes.
type node struct {
	data     []byte
	stat     zk.Stat
	children map[string]struct{} // names of cached children; nil if none
}

func newStore() *store { return &store{nodes: make(map[string]*node), live: true} }

// change is one modification of a batch: set (upsert) or delete a path.
type change struct {
	path string
	del  bool
	data []byte
	stat zk.Stat
}

// apply makes the changes of one batch and records the new state's zxid.
// Deletions come before upserts in a batch built by commit, and parents
// are upserted before their children, so the children index holds.
func (s *store) apply(changes []change, zxid int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range changes {
		if c.del {
			if _, ok := s.nodes[c.path]; !ok {
				continue
			}
			delete(s.nodes, c.path)
			if p := s.nodes[parentOf(c.path)]; p != nil && p.children != nil {
				delete(p.children, baseOf(c.path))
				if len(p.children) == 0 {
					p.children = nil
				}
			}
			continue
		}
		n := s.nodes[c.path]
		if n == nil {
			n = &node{}
			s.nodes[c.path] = n
			if p := s.nodes[parentOf(c.path)]; p != nil {
				if p.children == nil {
					p.children = make(map[string]struct{})
				}
				p.children[baseOf(c.path)] = struct{}{}
			}
		}
		n.data, n.stat = c.data, c.stat
	}
	if zxid > s.zxid {
		s.zxid = zxid
	}
}

// clear empties the store for good (the cache stopped).
func (s *store) clear() {
	s.mu.Lock()
	s.nodes = make(map[string]*node)
	s.live = false
	s.mu.Unlock()
}

func (s *store) get(path string) (Entry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nodes[path]
	if n == nil {
		return Entry{}, false
	}
	return Entry{Path: path, Data: n.data, Stat: n.stat}, true
}

// peek returns the cached node for the engine's goroutine (the only
// writer, so no lock is needed to read).
func (s *store) peek(path string) *node { return s.nodes[path] }

func (s *store) children(path string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nodes[path]
	if n == nil {
		return nil
	}
	out := make([]string, 0, len(n.children))
	for c := range n.children {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func (s *store) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.nodes)
}

// snapshot copies the whole state, sorted by path, with its zxid.
func (s *store) snapshot() ([]Entry, int64) {
	s.mu.RLock()
	out := make([]Entry, 0, len(s.nodes))
	for p, n := range s.nodes {
		out = append(out, Entry{Path: p, Data: n.data, Stat: n.stat})
	}
	zxid := s.zxid
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return out, zxid
}

// descendants returns the cached paths strictly below path (engine
// goroutine only).
func (s *store) descendants(path string) []string {
	n := s.nodes[path]
	if n == nil || n.children == nil {
		return nil
	}
	var out []string
	var walk func(p string, n *node)
	walk = func(p string, n *node) {
		for c := range n.children {
			cp := joinPath(p, c)
			out = append(out, cp)
			if cn := s.nodes[cp]; cn != nil && cn.children != nil {
				walk(cp, cn)
			}
		}
	}
	walk(path, n)
	return out
}

func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func baseOf(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

func joinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// depthBelow returns how many levels p is below root (0 for root itself),
// or -1 if p is not in root's subtree.
func depthBelow(root, p string) int {
	if p == root {
		return 0
	}
	rest := p
	if root != "/" {
		if !strings.HasPrefix(p, root) || len(p) <= len(root) || p[len(root)] != '/' {
			return -1
		}
		rest = p[len(root):]
	} else if !strings.HasPrefix(p, "/") {
		return -1
	}
	return strings.Count(rest, "/")
}
