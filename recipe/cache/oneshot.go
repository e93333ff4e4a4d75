package cache

import (
	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/zk"
)

// One-shot mode: every cached node carries a data watch (getData) and a
// child watch (getChildren), and a missing root an exist watch, as in
// Curator's TreeCache. A watch fires once; the read it causes sets it
// again. The zk client hands each watch its own channel, so a goroutine
// per set watch forwards its event to one inbox.

// shotKind is the kind of a one-shot watch.
type shotKind uint8

const (
	shotData  shotKind = iota + 1 // getData, or exists on an existing node
	shotChild                     // getChildren
	shotExist                     // exists on a missing node
)

// shot is a fired one-shot watch.
type shot struct {
	path string
	kind shotKind
	id   uint64 // which setting of the watch fired
	gen  uint64 // the session generation it was set in
	ev   zk.Event
}

// armed holds the ids of the watches set on a node (0: none).
type armed struct{ data, child, exist uint64 }

// shots is the book of one-shot watches. The engine's goroutine owns it;
// only inbox is shared with the forwarding goroutines.
type shots struct {
	armed  map[string]*armed
	inbox  *recipeutil.Stream[shot]
	nextID uint64
	gen    uint64 // incremented when the session is replaced
}

func newShots() *shots {
	return &shots{armed: make(map[string]*armed), inbox: recipeutil.NewStream[shot]()}
}

// reset forgets every watch (a new session has none); events of the old
// ones still on their way are ignored.
func (s *shots) reset() {
	s.gen++
	s.armed = make(map[string]*armed)
}

// plan decides which watches a read of j.path sets: those not set now.
// The root is read with exists, whose watch waits for a missing node too.
func (s *shots) plan(e *engine, j *job) {
	var a armed
	if p := s.armed[j.path]; p != nil {
		a = *p
	}
	if j.path == e.root {
		j.watchExist = a.data == 0 && a.exist == 0
	} else {
		j.watchData = a.data == 0
	}
	j.watchChild = a.child == 0
}

// arm records the watches a read set and starts their forwarders.
func (s *shots) arm(e *engine, r result) {
	add := func(ch <-chan zk.Event, k shotKind) {
		if ch == nil {
			return
		}
		s.nextID++
		id, gen, inbox, path := s.nextID, s.gen, s.inbox, r.job.path
		a := s.armed[path]
		if a == nil {
			a = &armed{}
			s.armed[path] = a
		}
		switch k {
		case shotData:
			a.data = id
		case shotChild:
			a.child = id
		case shotExist:
			a.exist = id
		}
		go func() {
			select {
			case ev, ok := <-ch:
				if ok {
					inbox.Send(shot{path: path, kind: k, id: id, gen: gen, ev: ev})
				}
			case <-e.ctx.Done():
			}
		}()
	}
	add(r.data, shotData)
	add(r.chld, shotChild)
	if r.exstFound {
		add(r.exst, shotData)
	} else {
		add(r.exst, shotExist)
	}
}

// note clears the watch that fired and adds the reads its event calls
// for to w.
func (s *shots) note(e *engine, sh shot, w *work) {
	if tracing {
		trace(e, "shot %s kind=%d id=%d gen=%d/%d %v armed=%v", sh.path, sh.kind, sh.id, sh.gen, s.gen, sh.ev.Type, s.armed[sh.path] != nil)
	}
	if sh.gen != s.gen {
		return
	}
	if a := s.armed[sh.path]; a != nil {
		switch {
		case sh.kind == shotData && a.data == sh.id:
			a.data = 0
		case sh.kind == shotChild && a.child == sh.id:
			a.child = 0
		case sh.kind == shotExist && a.exist == sh.id:
			a.exist = 0
		}
		if *a == (armed{}) {
			delete(s.armed, sh.path)
		}
	}
	switch sh.ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged, zk.EventNodeDeleted:
	default:
		return // EventNotWatching: the states say why
	}
	d := depthBelow(e.root, sh.path)
	if d < 0 || d > e.maxDepth {
		return
	}
	w.add(sh.path, d)
	if sh.ev.Type == zk.EventNodeDeleted && d >= 1 {
		w.add(parentOf(sh.path), d-1)
	}
}

// drain takes the events that have reached the inbox and returns how many.
func (s *shots) drain(e *engine, w *work) int {
	n := 0
	for {
		select {
		case sh := <-s.inbox.C():
			s.note(e, sh, w)
			n++
		default:
			return n
		}
	}
}
