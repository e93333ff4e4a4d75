// Package server is zkgo's ZooKeeper-compatible server: Server, its
// Options and its lifecycle (New, Start, Shutdown, Close), and what
// operators read of it — four-letter words, the AdminServer's commands,
// metrics, the web console's view. The work is done by its sub-packages,
// one role each:
//
//	clientport/    the client port: connections, the handshake, the
//	               request pipeline, reads, authentication, TLS
//	replica/       replication: the raft node over the WAL (or memory),
//	               the proposer, membership and reconfig, formation,
//	               leadership, the data directory offline
//	statemachine/  the raft entry format and the Machine, sole owner of
//	               the tree and its lock; applies committed entries,
//	               fires watches, tells waiters and the session tracker
//	session/       the session tracker: liveness and expiry of sessions
//	               (their state is the tree's)
//	stats/         the counters (requests, latencies, reply sizes,
//	               request stages)
//	report/        the words' text and the commands' JSON, ZooKeeper's
//	               names and shapes, read through report.Source
//	metrics/       the metric table, the collectors, /metrics
//	adminhttp/     the AdminServer's HTTP(S) server
//	audit/         the audit log's writer
//
// Dependencies go one way: server imports every one of them; clientport
// imports replica, statemachine, session and stats; replica imports
// statemachine and session, never the client port or observability.
//
// # Files
//
//	server.go        Server, New (wiring the parts), Start, Close,
//	                 following the leader (leaderChanged)
//	shutdown.go      Shutdown: hand leadership over, drain, close
//	options.go       Options, their defaults, and the parts' configs
//	datadir.go       the data directory offline (cmd/zkgo)
//	operator.go      leadership transfer and lgif for operators
//	fourlw.go        four-letter words (whitelist, stmk's mask, the heavy-
//	                 output cache)
//	report.go        the views words and commands print; reports.go the
//	                 server as report.Source
//	admin*.go        the AdminServer's commands, snapshot and identity
//	gauges.go        the gauges mntr and /metrics both print;
//	                 metrics_hooks.go hands package metrics its sources
//	console.go       the web console's view of the member
//	memrelease.go    giving memory back after a compacted log
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
// # Lock order
//
// Server's own locks (adminMu, noLeaderMu, errMu) are leaves; the heavy
// words' cache and the snapshot command hold theirs while they read the
// parts. The client port's and the replica's package comments give
// theirs; docs/LOCKS.md has the whole repository's.
package server
