package console

import (
	"cmp"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/zkgo/zkgo/recipe/recipeutil"
)

// Recognition of coordination recipes from node names alone, following
// Apache Curator's layouts (and ZooKeeper's LeaderElectionSupport):
//
//	InterProcessMutex, LeaderSelector   <base>/[_c_<uuid>-]lock-<seq>
//	InterProcessReadWriteLock           <base>/[_c_<uuid>-]__READ__<seq>, ..__WRIT__<seq>
//	InterProcessSemaphoreV2 (and        <base>/leases/[_c_<uuid>-]lease-<seq> (the leases)
//	  InterProcessSemaphoreMutex)       <base>/locks/[_c_<uuid>-]lock-<seq> (a mutex: the queue)
//	LeaderLatch                         <base>/[_c_<uuid>-]latch-<seq>
//	LeaderElectionSupport               <base>/n_<seq>
//
// <seq> is ZooKeeper's ten-digit sequence suffix. Participants are ordered
// as Curator orders them (recipeutil.SortKey: the text after the last
// occurrence of the lock name, compared as strings, stably). A
// LeaderSelector's mutex cannot be told from an InterProcessMutex by its
// names; its node data holds the participant id, which the console shows.

// Kind names a recognised recipe.
type Kind string

// Kinds of recipe.
const (
	KindMutex     Kind = "mutex"     // InterProcessMutex, LeaderSelector's mutex, plain lock- nodes
	KindRWLock    Kind = "rwlock"    // InterProcessReadWriteLock
	KindSemaphore Kind = "semaphore" // InterProcessSemaphoreV2 / InterProcessSemaphoreMutex
	KindLatch     Kind = "latch"     // LeaderLatch
	KindElection  Kind = "election"  // ZooKeeper's LeaderElectionSupport
)

// IsElection reports whether the kind elects a leader rather than locks.
func (k Kind) IsElection() bool { return k == KindLatch || k == KindElection }

// The node-name markers (Curator's LOCK_NAME constants).
const (
	lockName   = "lock-"
	readName   = "__READ__"
	writeName  = "__WRIT__"
	latchName  = "latch-"
	leaseName  = "lease-"
	offerName  = "n_"
	leasesDir  = "leases" // InterProcessSemaphoreV2's LEASE_PARENT
	locksDir   = "locks"  // InterProcessSemaphoreV2's LOCK_PARENT
	seqDigits  = 10
	protPrefix = "_c_"
	protLen    = len("_c_") + 36 + 1 // "_c_" + UUID + "-"
)

// NodeInfo is what recognition needs of one znode.
type NodeInfo struct {
	Name           string    // the last path element
	Czxid          int64     // zxid of its create: a holder's fencing token
	Ctime          time.Time // its create time
	EphemeralOwner int64     // owning session, 0 for a persistent node
	NumChildren    int32
	// Data is the first bytes of the node's data, when fetched (Curator
	// stores the participant id or the client's address there).
	Data []byte
}

// Participant is one node of a recognised recipe.
type Participant struct {
	Path    string
	Node    NodeInfo
	Role    string // "write", "read", "lease", "lock", "latch", "offer"
	Seq     string // the sequence suffix
	Session int64  // EphemeralOwner: the participant's session
	Token   int64  // Czxid: the fencing token a grant on this node carries
	// Age is now − ctime: how long it has been queued (for a waiter, how
	// long it has waited; for a holder, how long since it queued).
	Age time.Duration
}

// Recipe is one recognised lock queue or election.
type Recipe struct {
	Kind Kind
	Path string // the recipe's base node
	// Holders hold the lock or lead: one for a mutex, latch or election;
	// the readers ahead of the first writer (or that writer) for a
	// read-write lock; every lease for a semaphore.
	Holders []Participant
	// Waiters wait, in the order they will be served. For a semaphore
	// these are the nodes of its internal "locks" mutex, the first of
	// which may be shown by the lease node it waits with (mergeQueue).
	Waiters []Participant
	Note    string
}

// participantName splits a child name into its lock name and sequence
// suffix, if it is a recipe participant's name: an optional Curator
// protection prefix, one of the lock names, ten digits. ok is false for any
// other name.
func participantName(name string) (marker, seq string, ok bool) {
	if strings.HasPrefix(name, offerName) {
		s := name[len(offerName):]
		return offerName, s, isSeq(s)
	}
	rest := name
	if strings.HasPrefix(rest, protPrefix) {
		if len(rest) < protLen || !isUUID(rest[len(protPrefix):protLen-1]) || rest[protLen-1] != '-' {
			return "", "", false
		}
		rest = rest[protLen:]
	}
	for _, m := range [...]string{lockName, readName, writeName, latchName, leaseName} {
		if strings.HasPrefix(rest, m) && isSeq(rest[len(m):]) {
			return m, rest[len(m):], true
		}
	}
	return "", "", false
}

// isSeq reports whether s is a ZooKeeper sequence suffix (%010d).
func isSeq(s string) bool {
	if len(s) != seqDigits {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isUUID reports whether s looks like a textual UUID (36 characters of hex
// digits and dashes at the usual places).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// IsParticipantName reports whether a node name is one a recognised recipe
// uses for its participants (the scan visits such nodes first).
func IsParticipantName(name string) bool {
	_, _, ok := participantName(name)
	return ok
}

// RecognizeChildren finds the recipes whose participants are among the
// children of parent. children need not be sorted; other children are
// ignored. now is used for ages. It is a pure function.
//
// Semaphores come out in two parts: the leases (a KindSemaphore at the
// grandparent, from parent ".../leases") and the queue (a KindMutex at
// ".../locks"); MergeSemaphores joins them.
func RecognizeChildren(parent string, children []NodeInfo, now time.Time) []Recipe {
	groups := map[string][]NodeInfo{} // by marker; READ and WRIT together
	for _, c := range children {
		m, _, ok := participantName(c.Name)
		if !ok {
			continue
		}
		if m == writeName {
			m = readName
		}
		groups[m] = append(groups[m], c)
	}
	var out []Recipe
	for _, m := range [...]string{lockName, readName, latchName, leaseName, offerName} {
		g := groups[m]
		if len(g) == 0 {
			continue
		}
		switch m {
		case lockName:
			out = append(out, firstHolds(KindMutex, parent, g, now, lockName))
		case readName:
			out = append(out, rwLock(parent, g, now))
		case latchName:
			out = append(out, firstHolds(KindLatch, parent, g, now, latchName))
		case offerName:
			out = append(out, firstHolds(KindElection, parent, g, now, offerName))
		case leaseName:
			if path.Base(parent) != leasesDir || parent == "/" {
				continue // lease- nodes outside a semaphore's leases/: not Curator's
			}
			sortParticipants(g, leaseName)
			r := Recipe{Kind: KindSemaphore, Path: path.Dir(parent)}
			for _, n := range g {
				r.Holders = append(r.Holders, participant(parent, n, now))
			}
			r.Note = "every lease is shown as held: the limit is not stored in ZooKeeper"
			out = append(out, r)
		}
	}
	return out
}

// firstHolds builds a recipe whose first participant (in Curator's order)
// holds it and the others wait: a mutex, a latch, an election.
func firstHolds(k Kind, parent string, g []NodeInfo, now time.Time, marker string) Recipe {
	sortParticipants(g, marker)
	r := Recipe{Kind: k, Path: parent}
	for i, n := range g {
		p := participant(parent, n, now)
		if i == 0 {
			r.Holders = append(r.Holders, p)
		} else {
			r.Waiters = append(r.Waiters, p)
		}
	}
	return r
}

// rwLock applies InterProcessReadWriteLock's rules: a writer holds the lock
// when it is first; a reader holds it when no writer is ahead of it.
// (A writer that also took the read lock, a downgrade, holds that read
// lock too: its read node is shown waiting, as the names cannot say so.)
func rwLock(parent string, g []NodeInfo, now time.Time) Recipe {
	sortParticipants(g, readName, writeName)
	r := Recipe{Kind: KindRWLock, Path: parent}
	firstWrite := len(g)
	for i, n := range g {
		if m, _, _ := participantName(n.Name); m == writeName {
			firstWrite = i
			break
		}
	}
	for i, n := range g {
		p := participant(parent, n, now)
		if i < firstWrite || (firstWrite == 0 && i == 0) {
			r.Holders = append(r.Holders, p)
		} else {
			r.Waiters = append(r.Waiters, p)
		}
	}
	return r
}

func participant(parent string, n NodeInfo, now time.Time) Participant {
	m, seq, _ := participantName(n.Name)
	role := map[string]string{lockName: "lock", readName: "read", writeName: "write", latchName: "latch", leaseName: "lease", offerName: "offer"}[m]
	return Participant{
		Path:    joinPath(parent, n.Name),
		Node:    n,
		Role:    role,
		Seq:     seq,
		Session: n.EphemeralOwner,
		Token:   n.Czxid,
		Age:     max(0, now.Sub(n.Ctime)),
	}
}

// sortParticipants orders nodes as Curator does (recipeutil.SortNodes).
func sortParticipants(g []NodeInfo, markers ...string) {
	key := func(n string) string {
		for _, m := range markers {
			n = recipeutil.SortKey(n, m)
		}
		return n
	}
	slices.SortStableFunc(g, func(a, b NodeInfo) int { return strings.Compare(key(a.Name), key(b.Name)) })
}

// MergeSemaphores joins each semaphore's leases with its "locks" queue (a
// mutex recognised at <base>/locks) and sorts the recipes by path, then
// kind. A "locks" mutex with no leases in sight stays a mutex.
func MergeSemaphores(rs []Recipe) []Recipe {
	sem := map[string]int{}
	for i, r := range rs {
		if r.Kind == KindSemaphore {
			sem[r.Path] = i
		}
	}
	out := rs[:0:0]
	var queues []Recipe
	for _, r := range rs {
		if r.Kind == KindMutex && path.Base(r.Path) == locksDir {
			if _, ok := sem[path.Dir(r.Path)]; ok {
				queues = append(queues, r)
				continue
			}
		}
		out = append(out, r)
	}
	for _, q := range queues {
		for i := range out {
			if out[i].Kind == KindSemaphore && out[i].Path == path.Dir(q.Path) {
				out[i] = mergeQueue(out[i], q)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Recipe) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
	return out
}

// mergeQueue adds a semaphore's "locks" queue to its leases. The head of
// that queue holds the internal lock while it creates its lease node and,
// if there are more leases than the limit, while it waits with that node:
// so when the newest lease belongs to the head's session, that lease is
// shown as the first waiter instead of a holder (it is acquiring).
func mergeQueue(sem, q Recipe) Recipe {
	queue := append(slices.Clone(q.Holders), q.Waiters...)
	if len(queue) > 0 && len(sem.Holders) > 0 {
		head, newest := queue[0], sem.Holders[len(sem.Holders)-1]
		if head.Session != 0 && head.Session == newest.Session {
			sem.Holders = sem.Holders[:len(sem.Holders)-1]
			sem.Waiters = append(sem.Waiters, newest)
			queue = queue[1:]
			sem.Note = "the first waiter holds the semaphore's internal lock and has a lease node: it waits for a lease; the limit is not stored in ZooKeeper"
		}
	}
	sem.Waiters = append(sem.Waiters, queue...)
	return sem
}

// joinPath joins a parent path and a child name.
func joinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
