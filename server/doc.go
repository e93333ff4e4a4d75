// Package server is zkgo's ZooKeeper-compatible server: the client port
// (connections, the connect handshake, the request pipeline, four-letter
// words), the session tracker, and the single write path that turns every
// change into a transaction applied to the tree in log order.
//
// # Roles
//
// Each role has a file and a type; they meet through narrow interfaces.
//
//	conn.go          Conn: socket I/O, framing, the outgoing queue, the
//	                 reader and writer goroutines
//	handshake.go     the ConnectRequest: new, resumed and local sessions
//	pipeline.go      the request pipeline: dispatch by proto's opcode table,
//	                 FIFO order per connection (reads wait behind the
//	                 connection's writes), held proposals, write replies;
//	                 a request is the waiter of its proposal
//	reads.go         the read handlers
//	sasl.go          auth packets and SASL
//	statemachine/    package statemachine: the raft entry format and the
//	                 Machine, sole owner of the tree and its lock; applies
//	                 committed entries, fires watches, tells waiters
//	                 (statemachine.Waiter) and the session tracker
//	                 (statemachine.SessionObserver); the rest of the server
//	                 reads the tree inside Machine.View
//	session/         package session: the Tracker, liveness and expiry of
//	                 sessions (their state is the tree's)
//	replica/         package replica: the raft node over the WAL (or
//	                 memory), the proposer, membership and reconfig,
//	                 formation, leadership; the server makes it (New) and
//	                 hears from it through replica.Hooks
//	reconfig.go      the reconfig request: authorization, the reply
//	operator.go      leadership transfer and lgif for operators
//	datadir.go       the data directory offline (replica's, for cmd/zkgo)
//	options.go       Options: the configuration New takes, and its defaults
//	fourlw.go        four-letter words on the client port (whitelist,
//	                 stmk's mask, the heavy-output cache)
//	stats/           package stats: the counters (stats.Counters, the
//	                 latencies, reply sizes and request stages)
//	report.go        reads the views four-letter words and AdminServer
//	                 commands print (one source for text and JSON)
//	reports.go       the server as package report sees it (report.Source)
//	report/          package report: the words' text and the commands'
//	                 JSON, ZooKeeper's names and shapes
//	admin.go         hands the AdminServer (adminhttp/: HTTP, HTTPS, the
//	                 host guard, bounds) its commands, snapshot, /metrics
//	                 and console
//	gauges.go        reads the gauges (metrics.Gauges) mntr and /metrics
//	                 both print
//	metrics_hooks.go hands package metrics its counters and gauges
//	metrics/         package metrics: the table of ZooKeeper's metric
//	                 names and zkgo's, the collectors, the /metrics
//	                 endpoint; it reads nothing of the server itself
//
// # The write path
//
// Every change (create, delete, setData, setACL, check, multi, session
// create/close, container and TTL reaping) is encoded as a tree.Txn
// carrying the request itself and handed to the proposer, which proposes
// it to raft (go.etcd.io/raft through raftnode). Committed entries reach
// the state machine in log order after they are persisted (fsynced, with
// a data directory); it applies each one to the tree at its zxid (the raft
// index), fires watches and completes the waiting request. Validation
// happens in tree.Apply, never before proposing. Without a data directory
// the same raft group runs on in-memory storage: there is no second path.
// sync is a barrier entry through the log.
//
// # Ordering
//
// Replies on a connection leave in request order. A read is answered only
// after every earlier write of the same connection has been applied (FIFO
// client order): reads that arrive while the connection has writes in
// flight are queued behind them and run by the apply goroutine right
// after the write they follow. Watch notifications caused by a
// transaction are queued on their connections before the tree lock is
// released, so a client sees the notification before any reply that
// could observe the change.
//
// # Lock order
//
//	statemachine.Machine.mu → Conn.pipeMu → Conn.outMu
//	Conn.wmu → Conn.outMu
//
// (docs/LOCKS.md has the whole repository's.) The apply goroutine holds
// the Machine's lock (write) while it completes writes (writeApplied
// takes pipeMu, then queues replies under outMu) and fires watches
// (outMu); reads run inside Machine.View (read). Conn.pipeMu is never
// held while entering View. Conn.close may run with the Machine's lock
// and pipeMu held (a reply over the queue limit): it takes outMu,
// slotMu, Server.connsMu, the idle poller's lock, watch.Manager's lock
// and session.Tracker.mu each on its own, holding none of them while
// taking another. Server.spawnMu (read) may be taken under the Machine's
// lock, pipeMu or wmu (waking a parked connection's writer); Close takes
// it with nothing else held. replica.Proposer.mu is a leaf: waiters are told
// after it is released.
package server
