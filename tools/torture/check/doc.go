// Package check holds the torture harness's checkers: one per guarantee a
// ZooKeeper ensemble gives its clients, each reading a history recorded by
// real clients (this repository's zk, go-zookeeper,
// tests/framework/rawzk) while members were partitioned, paused, killed
// and had their disks fail, and returning a Result.
//
// # The model
//
// A workload appends records to a Recorder as its requests end. A record
// is a request with its call and return times — nanoseconds since the
// run's start on the process's monotonic clock (Recorder.Now), the call
// read just before the request is sent, the return just after its answer
// or error — and its Outcome: OK, Failed (a definite refusal: NoNode,
// NodeExists, BadVersion, NotEmpty, NoChildrenForEphemerals) or Unknown.
// OutcomeOf maps either client's error to an Outcome. Other records are
// observations: a watch event, a connection state change, a session's
// end, an interval in which a holder believed it held a lock or led.
//
// All records are on one process's clock, so real-time order between
// them is known up to the cost of reading the clock and waking a
// goroutine: "A returned before B was called" means A.Return < B.Call.
//
// # Unknown outcomes
//
// A request that ended without an answer — connection loss, a timeout, a
// closed client, a cancelled context, an expired session — may or may not
// have taken effect, and may take effect after its client gave up (a
// proposal already in the leader's log commits later). Every checker
// treats it soundly: it never reports a violation that the unknown
// request, taking effect at any point after its call or never, could
// explain. An unknown write never counts as done and never as not done:
//
//   - registers: it may take effect at any point after its call, or never
//     (tests/framework/linearize gives it a return after every other
//     operation).
//   - sequential: it counts once a listing shows its node (attributed by
//     the create's unique name prefix); it then existed by that listing.
//   - ephemerals: an unknown delete excuses a missing node; an unknown
//     create promises nothing, but its node must still go with its
//     session.
//   - watches: a write of unknown outcome (or acknowledged without a
//     zxid) may explain one event anywhere after its call, or none; one
//     that the final state shows happened may be given its zxid, and is
//     then required like an acknowledged one.
//   - sessions: it adds no zxid the session saw; an unknown delete
//     excuses a read that finds no node.
//   - locks: an unknown fenced write never counts as successful, and may
//     fill a hole in the fence's chain of versions.
//
// # Zxids
//
// Neither client returns a reply header's zxid, and ZooKeeper (and zkgo)
// send notifications with zxid -1, so:
//
//   - a write's zxid is its Stat's: Create2 → Czxid, setData → Mzxid; a
//     delete has no Stat, and its zxid is zk.Conn.LastZxid read right
//     after Delete returns on a Conn that one goroutine uses for nothing
//     else (the delete's reply is then the last reply the Conn got);
//   - a session's last seen zxid before a request is zk.Conn.LastZxid
//     read just before the call (SessionOp.Seen);
//   - watch events are matched to writes by type and path, not by zxid;
//   - reply zxids, send order (xids) and reply order are known only from
//     tests/framework/rawzk (Send/SendXid, Recv's reply header), which the
//     session workload may use to check FIFO and reply zxids.
//
// # What each checker sees, and what it cannot
//
// Registers (tests/framework/linearize, porcupine): linearizability of znodes
// used as registers (sync+getData, setData, create). It sees everything
// about those paths; it cannot say anything about reads without sync
// (ZooKeeper promises them sequential consistency only), and a search that
// runs out of time is inconclusive.
//
// Sequential: uniqueness of sequence numbers under a parent, and their
// growth in real time, from creates' answers and listings. It cannot see a
// suffix given to a node that no answer and no listing showed, nor order
// two creates that overlapped in time.
//
// Ephemerals: a node present while its owner lives, gone within a bound
// after the owner's session ended. It sees the node only when an observer
// looked; how long the owner lived it knows only from the owner's last
// answered request and its end.
//
// Watches: a persistent (recursive) watch reports every change of its
// subtree exactly once, in zxid order, within one connection's span. It
// cannot check across reconnections (missed events are not replayed, and
// a new server may repeat what the old one sent), nor place the boundary
// between spans more precisely than WatchOptions.Slop.
//
// Sessions: FIFO of a session's requests, reply zxids that never go back,
// and reads never older than what the session had seen. FIFO needs the
// send and reply order, which only a raw client knows; staleness is judged
// only against changes whose zxid some answer showed.
//
// Locks: no two holders whose fenced writes both succeed, fenced tokens
// accepted in increasing order, and an unbroken chain of fence versions.
// It sees a broken lock only through successful fenced writes.
//
// Leaders: no two participants believing they lead at once, beyond a
// slop. It sees beliefs (the latch's events and the connection's states),
// not the ensemble's view.
//
// # Use
//
// A run makes one Recorder, gives it to every workload, waits until every
// workload has stopped (abandoned requests recorded as Unknown), and
// passes Recorder.History to All (or each part to its checker). Summary
// prints the verdicts one line per checker; Results are plain data, for
// the harness's JSON and HTML report.
package check
