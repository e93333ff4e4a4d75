package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// OpKind is what a session workload's request does.
type OpKind uint8

const (
	// OpRead is getData or exists: it answers whether the node exists and
	// its Stat.
	OpRead OpKind = iota
	// OpCreate is create (Create2, for the Stat).
	OpCreate
	// OpSetData is setData.
	OpSetData
	// OpDelete is delete.
	OpDelete
	// OpOther is any other request (sync, getChildren, ...): only its
	// reply's zxid and its place in the session's order count.
	OpOther
)

// SessionOp is one request of a session, with what the session saw of
// zxids.
type SessionOp struct {
	Client       string
	Session      int64
	Kind         OpKind
	Path         string
	Call, Return int64
	// Outcome: for OpRead, OK when the read was answered, found or not
	// (Exists says which); for writes, OK, Failed or Unknown.
	Outcome Outcome
	Exists  bool // OpRead: the node was found
	// Mzxid: OpRead that found the node: its Stat.Mzxid. OpCreate,
	// OpSetData that succeeded: the write's zxid (the returned
	// Stat.Mzxid). OpDelete that succeeded: its zxid if known (see
	// Write.Zxid). 0: unknown.
	Mzxid int64
	// Seen is the session's last seen zxid just before the call
	// (zk.Conn.LastZxid), 0 when not recorded.
	Seen int64
	// Zxid is the reply header's zxid, when the client exposes it (with
	// tests/framework/rawzk, Recv returns the header); 0 when unknown.
	Zxid int64
	// Xid is the request's place in the session's send order, increasing
	// over all its connections (rawzk.SendXid lets the workload choose
	// it); 0 when unknown.
	Xid int32
	// Done is the reply's place in the order the session's replies
	// arrived (1, 2, ...), 0 when unknown. Neither zk.Conn nor
	// go-zookeeper tells the send or reply order of concurrent requests:
	// FIFO is checked only for requests with both Xid and Done.
	Done int64
}

// String formats op on one line.
func (op SessionOp) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (session %s) %s", op.Client, hex(op.Session), opVerb(op.Kind))
	if op.Path != "" {
		b.WriteString(" " + op.Path)
	}
	b.WriteString(" " + span(op.Call, op.Return) + " -> ")
	switch {
	case op.Kind == OpRead && op.Outcome == OK && op.Exists:
		b.WriteString("found, mzxid " + hex(op.Mzxid))
	case op.Kind == OpRead && op.Outcome == OK:
		b.WriteString("no node")
	default:
		b.WriteString(op.Outcome.String())
		if op.Mzxid != 0 {
			b.WriteString(", zxid " + hex(op.Mzxid))
		}
	}
	var extra []string
	if op.Xid != 0 {
		extra = append(extra, fmt.Sprintf("xid %d", op.Xid))
	}
	if op.Done != 0 {
		extra = append(extra, fmt.Sprintf("reply #%d", op.Done))
	}
	if op.Zxid != 0 {
		extra = append(extra, "reply zxid "+hex(op.Zxid))
	}
	if op.Seen != 0 {
		extra = append(extra, "seen "+hex(op.Seen)+" before the call")
	}
	if len(extra) > 0 {
		b.WriteString(" (" + strings.Join(extra, ", ") + ")")
	}
	return b.String()
}

func opVerb(k OpKind) string {
	switch k {
	case OpRead:
		return "read"
	case OpCreate:
		return "create"
	case OpSetData:
		return "setData"
	case OpDelete:
		return "delete"
	}
	return "request"
}

// SessionHistory is the session workload's history.
type SessionHistory struct {
	Ops []SessionOp
}

// change is a zxid at which a path is known to have changed.
type change struct {
	zxid    int64
	deleted bool // a delete; else a create or setData (or a read saw that mzxid)
	op      *SessionOp
}

// Sessions checks what ZooKeeper promises a session:
//
//   - FIFO: requests are answered in the order they were sent (for
//     requests whose Xid and Done are known).
//   - Replies never go back: a reply's zxid is not older than one the
//     session saw before (in reply order when Done is known; else for a
//     request called after the other returned), and a write's zxid is
//     newer than every zxid the session had seen when it was called.
//   - No stale reads: a read called after the session had seen zxid Z
//     (Seen, or any zxid of its earlier answered requests) reflects every
//     change of the path up to Z known from any session's answers — its
//     Mzxid is not older than the last such change, and it finds no node
//     gone only if a delete could have removed it.
//
// Unknown outcomes add no zxid and no change; a delete of unknown outcome
// or zxid excuses a read that finds no node.
//
// It assumes every write to the paths read is recorded.
func Sessions(h SessionHistory) Result {
	res := Result{Name: "sessions", OK: true, Checked: len(h.Ops)}
	ops := make([]*SessionOp, len(h.Ops))
	for i := range h.Ops {
		ops[i] = &h.Ops[i]
	}
	bySession := make(map[int64][]*SessionOp)
	var sessions []int64
	changes := make(map[string][]change)
	deletes := make(map[string][]*SessionOp)
	unknown, ordered := 0, 0
	for _, op := range ops {
		if _, ok := bySession[op.Session]; !ok {
			sessions = append(sessions, op.Session)
		}
		bySession[op.Session] = append(bySession[op.Session], op)
		if op.Outcome == Unknown {
			unknown++
		}
		if op.Xid != 0 && op.Done != 0 {
			ordered++
		}
		switch {
		case op.Kind == OpDelete && op.Outcome != Failed:
			deletes[op.Path] = append(deletes[op.Path], op)
			if op.Outcome == OK && op.Mzxid != 0 {
				changes[op.Path] = append(changes[op.Path], change{op.Mzxid, true, op})
			}
		case (op.Kind == OpCreate || op.Kind == OpSetData) && op.Outcome == OK && op.Mzxid != 0,
			op.Kind == OpRead && op.Outcome == OK && op.Exists && op.Mzxid != 0:
			changes[op.Path] = append(changes[op.Path], change{op.Mzxid, false, op})
		}
	}
	for p := range changes {
		slices.SortStableFunc(changes[p], func(a, b change) int { return cmp.Compare(a.zxid, b.zxid) })
	}
	slices.Sort(sessions)
	reads := 0
	for _, s := range sessions {
		sops := bySession[s]
		if !fifo(&res, sops) || !repliesInOrder(&res, sops) {
			return res
		}
		n, ok := seenZxids(&res, sops, changes, deletes)
		if !ok {
			return res
		}
		reads += n
	}
	res.note("%d requests of %d sessions (%d of unknown outcome), %d reads checked against the zxids their session had seen", len(ops), len(sessions), unknown, reads)
	if ordered == 0 {
		res.note("no request has both its send order (Xid) and reply order (Done): FIFO not checked")
	} else {
		res.note("%d requests with send and reply order checked for FIFO", ordered)
	}
	return res
}

// fifo checks that a session's requests with a known send and reply order
// were answered in the order they were sent.
func fifo(res *Result, ops []*SessionOp) bool {
	var known []*SessionOp
	for _, op := range ops {
		if op.Xid != 0 && op.Done != 0 {
			known = append(known, op)
		}
	}
	slices.SortStableFunc(known, func(a, b *SessionOp) int { return cmp.Compare(a.Xid, b.Xid) })
	var last *SessionOp // the latest answered of the requests sent so far
	for _, op := range known {
		if last != nil && op.Done < last.Done {
			res.fail(fmt.Sprintf("session %s: request xid %d was answered (reply #%d) before xid %d, sent earlier (reply #%d)",
				hex(op.Session), op.Xid, op.Done, last.Xid, last.Done), last.String(), op.String())
			return false
		}
		if last == nil || op.Done > last.Done {
			last = op
		}
	}
	return true
}

// repliesInOrder checks that reply zxids never decrease in reply order.
func repliesInOrder(res *Result, ops []*SessionOp) bool {
	var known []*SessionOp
	for _, op := range ops {
		if op.Done != 0 && op.Zxid != 0 {
			known = append(known, op)
		}
	}
	slices.SortStableFunc(known, func(a, b *SessionOp) int { return cmp.Compare(a.Done, b.Done) })
	var top *SessionOp
	for _, op := range known {
		if top != nil && op.Zxid < top.Zxid {
			res.fail(fmt.Sprintf("session %s: reply #%d carries zxid %s, older than zxid %s of the earlier reply #%d",
				hex(op.Session), op.Done, hex(op.Zxid), hex(top.Zxid), top.Done), top.String(), op.String())
			return false
		}
		if top == nil || op.Zxid > top.Zxid {
			top = op
		}
	}
	return true
}

// seenZxids walks a session's requests in call order, with the largest
// zxid the session had seen when each was called, and checks each reply
// zxid, write zxid and read against it. It returns the number of reads
// checked, and false after recording a violation.
func seenZxids(res *Result, ops []*SessionOp, changes map[string][]change, deletes map[string][]*SessionOp) (int, bool) {
	byCall := slices.Clone(ops)
	slices.SortStableFunc(byCall, func(a, b *SessionOp) int { return cmp.Compare(a.Call, b.Call) })
	byReturn := slices.Clone(ops)
	slices.SortStableFunc(byReturn, func(a, b *SessionOp) int { return cmp.Compare(a.Return, b.Return) })
	var seen int64
	var from *SessionOp // the request whose answer showed seen
	j, reads := 0, 0
	for _, op := range byCall {
		for ; j < len(byReturn) && byReturn[j].Return < op.Call; j++ {
			a := byReturn[j]
			if a.Outcome == Unknown {
				continue
			}
			z := a.Zxid
			if a.Outcome == OK && (a.Kind != OpRead || a.Exists) {
				z = max(z, a.Mzxid)
			}
			if z > seen {
				seen, from = z, a
			}
		}
		z := max(seen, op.Seen)
		if z == 0 || op.Outcome == Unknown {
			continue
		}
		src := "zxid " + hex(op.Seen) + " before the call"
		if z == seen {
			src = fmt.Sprintf("zxid %s in an answer returned at %s", hex(seen), ts(from.Return))
		}
		evidence := func(extra ...string) []string {
			ev := []string{}
			if from != nil && z == seen {
				ev = append(ev, from.String())
			}
			return append(append(ev, extra...), op.String())
		}
		if op.Zxid != 0 && op.Zxid < z {
			res.fail(fmt.Sprintf("session %s: the reply to a request called at %s carries zxid %s, older than zxid %s the session had already seen",
				hex(op.Session), ts(op.Call), hex(op.Zxid), hex(z)), evidence()...)
			return reads, false
		}
		if op.Kind != OpRead && op.Kind != OpOther && op.Outcome == OK && op.Mzxid != 0 && op.Mzxid <= z {
			res.fail(fmt.Sprintf("session %s: a %s of %s was given zxid %s, not newer than zxid %s the session had already seen",
				hex(op.Session), opVerb(op.Kind), op.Path, hex(op.Mzxid), hex(z)), evidence()...)
			return reads, false
		}
		if op.Kind != OpRead || op.Outcome != OK {
			continue
		}
		reads++
		cs := changes[op.Path]
		i, _ := slices.BinarySearchFunc(cs, z+1, func(c change, t int64) int { return cmp.Compare(c.zxid, t) })
		if i == 0 {
			continue // no change of the path known up to z
		}
		last := cs[i-1]
		switch {
		case op.Exists && op.Mzxid < last.zxid:
			res.fail(fmt.Sprintf("session %s read %s with mzxid %s, older than its change at zxid %s, the session having seen %s",
				hex(op.Session), op.Path, hex(op.Mzxid), hex(last.zxid), src), evidence(last.op.String())...)
			return reads, false
		case !op.Exists && !last.deleted && !mayDelete(deletes[op.Path], last.zxid):
			res.fail(fmt.Sprintf("session %s found no %s, though it existed at zxid %s, the session having seen %s, and no delete could have removed it",
				hex(op.Session), op.Path, hex(last.zxid), src), evidence(last.op.String())...)
			return reads, false
		}
	}
	return reads, true
}

// mayDelete reports whether one of deletes could have removed the node
// after zxid: of unknown outcome, or done at an unknown or later zxid.
func mayDelete(deletes []*SessionOp, zxid int64) bool {
	for _, d := range deletes {
		if d.Outcome == Unknown || d.Mzxid == 0 || d.Mzxid > zxid {
			return true
		}
	}
	return false
}
