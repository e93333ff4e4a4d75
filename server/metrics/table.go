package metrics

// The metrics table: every metric Apache ZooKeeper 3.8 registers with its
// metrics provider (ServerMetrics, ZooKeeperServer.registerMetrics, the
// quorum, leader and follower servers), each either exported by zkgo under
// the same name and type or marked not exported with the reason, followed
// by zkgo's own metrics (prefix zkgo_). metrics.go builds every collector
// from this table, the tests check a scrape against it, and
// docs/DESIGN.md ("Metrics") summarises it.
//
// As ZooKeeper's Prometheus provider exposes them: its gauges are gauges,
// its counters are counters named as registered (no _total suffix), its
// summaries are Prometheus summaries in the unit ZooKeeper records
// (milliseconds for times) with the median only (DetailLevel.BASIC) or the
// 0.5, 0.9 and 0.99 quantiles (ADVANCED), over a ten-minute window.

// metricKind is a metric's Prometheus type.
type metricKind uint8

const (
	kindGauge metricKind = iota + 1
	kindCounter
	kindSummary
	kindHistogram
)

// metricScope says when an exported metric appears in a scrape.
type metricScope uint8

const (
	notExported metricScope = iota // zkgo does not export it (metricDef.source says why)
	always                         // on every server
	ensemble                       // on members of an ensemble, not standalone
	leading                        // on the leader of an ensemble only
)

// metricDef is one row of the table.
type metricDef struct {
	name     string
	kind     metricKind
	labels   []string
	advanced bool        // a summary with the 0.9 and 0.99 quantiles too
	scope    metricScope // notExported: source says why
	help     string
	// source says how zkgo computes the metric, or why it does not.
	source string
	// read, for gauges read at scrape time, gets the value from the
	// snapshot that mntr prints too (gauges.go). Metrics updated where
	// their events happen have none: metrics.go creates them by name.
	read func(g *Gauges) float64
}

// Reasons shared by many of the metrics zkgo does not export.
const (
	whyPipeline = "measures a queue or stage of the Java server's request processor chain (Prep, Commit, Sync, Final request processors and their worker pools); zkgo's pipeline (server/pipeline.go) has no such stage"
	whyZab      = "measures Zab's leader–learner protocol (proposals, acks, COMMIT packets, DIFF/SNAP learner sync, learner handler queues); zkgo replicates with raft: see the zkgo_raft_* metrics"
	whyNoCache  = "zkgo has no response cache"
	whyAuth     = "SASL between ensemble members is not implemented"
	whyJVM      = "there is no JVM"
	whyQuota    = "per-namespace quota metrics need a walk of the quota subtree per scrape; not implemented"
	whyThrottle = "ZooKeeper's request throttler, stale-request dropping and large-request limit do not exist in zkgo (it bounds requests per connection and in all, and frames by jute.maxbuffer)"
)

func num[T int | int64](v T) float64 { return float64(v) }

// metricTable is the table. Its order is the order of the docs.
var metricTable = []metricDef{
	// ZooKeeperServer.registerMetrics: gauges read at scrape time, from
	// the same numbers as mntr (gauges.go).
	{name: "avg_latency", kind: kindGauge, scope: always, help: "Average request latency in ms since start or srst (whole-ms samples).",
		source: "stats.Latency, updated as each reply is queued (mntr zk_avg_latency)", read: func(g *Gauges) float64 { return g.AvgLatency }},
	{name: "max_latency", kind: kindGauge, scope: always, help: "Largest request latency in ms since start or srst.",
		source: "stats.Latency (mntr zk_max_latency)", read: func(g *Gauges) float64 { return num(g.MaxLatency) }},
	{name: "min_latency", kind: kindGauge, scope: always, help: "Smallest request latency in ms since start or srst.",
		source: "stats.Latency (mntr zk_min_latency)", read: func(g *Gauges) float64 { return num(g.MinLatency) }},
	{name: "packets_received", kind: kindGauge, scope: always, help: "Request packets received from clients since start or srst.",
		source: "stats.Counters.PacketsReceived, counted by each connection's reader (mntr zk_packets_received); a gauge, as in ZooKeeper, because srst resets it",
		read:   func(g *Gauges) float64 { return num(g.PacketsReceived) }},
	{name: "packets_sent", kind: kindGauge, scope: always, help: "Packets (replies and notifications) queued to clients since start or srst.",
		source: "stats.Counters.PacketsSent (mntr zk_packets_sent)", read: func(g *Gauges) float64 { return num(g.PacketsSent) }},
	{name: "num_alive_connections", kind: kindGauge, scope: always, help: "Client connections that completed their handshake.",
		source: "one pass over Server.conns (mntr zk_num_alive_connections)", read: func(g *Gauges) float64 { return num(g.AliveConnections) }},
	{name: "outstanding_requests", kind: kindGauge, scope: always, help: "Requests received and not yet answered.",
		source: "the connections' outstanding-request slots in use (mntr zk_outstanding_requests)", read: func(g *Gauges) float64 { return num(g.Outstanding) }},
	{name: "uptime", kind: kindGauge, scope: always, help: "Time since the server started, in ms.",
		source: "time since Server.New (mntr zk_uptime)", read: func(g *Gauges) float64 { return num(g.Uptime.Milliseconds()) }},
	{name: "znode_count", kind: kindGauge, scope: always, help: "Number of znodes, the root counted twice as ZooKeeper does.",
		source: "tree.NodeCount, a counter kept by the tree (mntr zk_znode_count)", read: func(g *Gauges) float64 { return num(g.Znodes) }},
	{name: "watch_count", kind: kindGauge, scope: always, help: "Watch registrations (data and child watches).",
		source: "watch.Manager.Count (mntr zk_watch_count)", read: func(g *Gauges) float64 { return num(g.Watches) }},
	{name: "ephemerals_count", kind: kindGauge, scope: always, help: "Number of ephemeral znodes.",
		source: "tree.EphemeralCount, from the tree's per-session index (mntr zk_ephemerals_count)", read: func(g *Gauges) float64 { return num(g.Ephemerals) }},
	{name: "approximate_data_size", kind: kindGauge, scope: always, help: "Sum of the znodes' path and data lengths.",
		source: "tree.ApproximateDataSize, a running total kept by the tree (mntr zk_approximate_data_size)", read: func(g *Gauges) float64 { return float64(g.DataSize) }},
	{name: "global_sessions", kind: kindGauge, scope: always, help: "Sessions in the replicated session table.",
		source: "tree.SessionCount (mntr zk_global_sessions)", read: func(g *Gauges) float64 { return num(g.GlobalSessions) }},
	{name: "local_sessions", kind: kindGauge, scope: always, help: "Local sessions: those of clients of this member while it serves read-only.",
		source: "connections holding a local session (mntr zk_local_sessions)", read: func(g *Gauges) float64 { return num(g.LocalSessions) }},
	{name: "open_file_descriptor_count", kind: kindGauge, scope: always, help: "Open file descriptors of the process (-1 where unknown).",
		source: "entries of /proc/self/fd (mntr zk_open_file_descriptor_count)", read: func(g *Gauges) float64 { return num(g.OpenFDs) }},
	{name: "max_file_descriptor_count", kind: kindGauge, scope: always, help: "The process's file descriptor limit (-1 where unknown).",
		source: "getrlimit(RLIMIT_NOFILE) soft limit (mntr zk_max_file_descriptor_count)", read: func(g *Gauges) float64 { return num(g.MaxFDs) }},
	{name: "connection_drop_probability", kind: kindGauge, help: "ZooKeeper's probability of dropping a new connection.",
		source: "not exported: zkgo's connection throttle is a plain token bucket that refuses when empty; it never drops by probability"},
	{name: "last_client_response_size", kind: kindGauge, scope: always, help: "Size of the last reply to a client request in bytes (header and body), -1 before the first.",
		source: "stats.Counters.Response, recorded as each reply is queued (mntr zk_last_client_response_size)", read: func(g *Gauges) float64 { return num(g.Response.Last) }},
	{name: "max_client_response_size", kind: kindGauge, scope: always, help: "Largest reply to a client request in bytes since start or srst, -1 before the first.",
		source: "stats.Counters.Response (mntr zk_max_client_response_size)", read: func(g *Gauges) float64 { return num(g.Response.Max) }},
	{name: "min_client_response_size", kind: kindGauge, scope: always, help: "Smallest reply to a client request in bytes since start or srst, -1 before the first.",
		source: "stats.Counters.Response (mntr zk_min_client_response_size)", read: func(g *Gauges) float64 { return num(g.Response.Min) }},
	{name: "outstanding_tls_handshake", kind: kindGauge, scope: always, help: "Client TLS handshakes in progress.",
		source: "Conn.startTLS, around the handshake in each connection's reader", read: func(g *Gauges) float64 { return num(g.TLSHandshakes) }},
	{name: "auth_failed_count", kind: kindGauge, scope: always, help: "Failed client authentications since start: TLS handshakes (a missing or refused certificate included) and SASL exchanges.",
		source: "Conn.startTLS and Conn.saslFailed (AdminServer stats: server_stats.auth_failed_count)", read: func(g *Gauges) float64 { return num(g.AuthFailed) }},
	{name: "non_mtls_remote_conn_count", kind: kindGauge, scope: always, help: "Client connections without a verified client certificate from non-loopback addresses.",
		source: "one pass over Server.conns (AdminServer stats: server_stats.non_mtlsremote_conn_count)", read: func(g *Gauges) float64 { return num(g.NonMTLSRemote) }},
	{name: "non_mtls_local_conn_count", kind: kindGauge, scope: always, help: "Client connections without a verified client certificate from loopback addresses.",
		source: "one pass over Server.conns (AdminServer stats: server_stats.non_mtlslocal_conn_count)", read: func(g *Gauges) float64 { return num(g.NonMTLSLocal) }},
	{name: "quota_count_limit_per_namespace", kind: kindGauge, labels: []string{"key"}, source: "not exported: " + whyQuota},
	{name: "quota_bytes_limit_per_namespace", kind: kindGauge, labels: []string{"key"}, source: "not exported: " + whyQuota},
	{name: "quota_count_usage_per_namespace", kind: kindGauge, labels: []string{"key"}, source: "not exported: " + whyQuota},
	{name: "quota_bytes_usage_per_namespace", kind: kindGauge, labels: []string{"key"}, source: "not exported: " + whyQuota},

	// QuorumZooKeeperServer, LeaderZooKeeperServer, FollowerZooKeeperServer.
	{name: "quorum_size", kind: kindGauge, scope: ensemble, help: "Voting members of the ensemble.",
		source: "raft's voters (raftnode.Status)", read: func(g *Gauges) float64 { return num(g.QuorumSize) }},
	{name: "learners", kind: kindGauge, scope: leading, help: "Members following this leader (voters, observers and members not voting yet).",
		source: "raft progress entries other than the leader's (mntr zk_learners)", read: func(g *Gauges) float64 { return num(g.Leader.Learners) }},
	{name: "synced_followers", kind: kindGauge, scope: leading, help: "Voting followers whose log is caught up with the leader's.",
		source: "voters whose match index is within promoteLag of the commit index (mntr zk_synced_followers)", read: func(g *Gauges) float64 { return num(g.Leader.SyncedFollowers) }},
	{name: "synced_non_voting_followers", kind: kindGauge, scope: leading, help: "Participants not voting yet (rejoining under a new raft id) whose log is caught up.",
		source: "raft learners that are not observers, caught up likewise (mntr zk_synced_non_voting_followers)", read: func(g *Gauges) float64 { return num(g.Leader.SyncedNonVotingFollowers) }},
	{name: "synced_observers", kind: kindGauge, scope: leading, help: "Observers whose log is caught up with the leader's.",
		source: "observers caught up likewise (mntr zk_synced_observers); on followers ZooKeeper counts observers synced through observer masters, which zkgo has not, so followers do not export it",
		read:   func(g *Gauges) float64 { return num(g.Leader.SyncedObservers) }},
	{name: "leader_uptime", kind: kindGauge, scope: leading, help: "Time since this member became leader, in ms.",
		source: "time since the leader change that made this member leader", read: func(g *Gauges) float64 { return num(g.Leader.Uptime.Milliseconds()) }},
	{name: "pending_syncs", kind: kindGauge, help: "Learner sync requests the leader has pending.",
		source: "not exported: a zkgo sync is a barrier entry through the raft log; the leader keeps no queue of pending syncs (mntr prints zk_pending_syncs 0 for tools that expect the key)"},
	{name: "last_proposal_size", kind: kindGauge, source: "not exported: " + whyZab},
	{name: "max_proposal_size", kind: kindGauge, source: "not exported: " + whyZab},
	{name: "min_proposal_size", kind: kindGauge, source: "not exported: " + whyZab},

	// ServerMetrics: summaries and counters, updated where the events
	// happen (metrics.go).
	{name: "fsynctime", kind: kindSummary, scope: always, help: "WAL write-and-fsync time in ms.",
		source: "storage.Options.OnWALSync: each WAL Save that fsyncs, timed around etcd's wal.Save (which writes and fsyncs in one call); nothing with forceSync=no or without a data directory"},
	{name: "snapshottime", kind: kindSummary, scope: always, help: "Time to write and install a snapshot of the tree, in ms.",
		source: "raftnode.Config.OnSnapshot: from the start of writing the snapshot file to its installation in the WAL"},
	{name: "dbinittime", kind: kindSummary, scope: always, help: "Time to load the state at start, in ms: reading the WAL, restoring the snapshot, replaying the committed log after it.",
		source: "replica.startNode (raftnode.StartupLoad and the storage's open): once per start of raft"},
	{name: "readlatency", kind: kindSummary, advanced: true, scope: always, help: "Read request latency in ms, from reading the request to queueing the reply.",
		source: "each reply to a request that is not a write (Conn.noteReply)"},
	{name: "updatelatency", kind: kindSummary, advanced: true, scope: always, help: "Write request latency in ms, from reading the request to queueing the reply once applied.",
		source: "each reply to a write: a transaction through the log (Conn.noteReply)"},
	{name: "propagation_latency", kind: kindSummary, advanced: true, scope: always, help: "Time from a transaction's creation to its application on this server, in ms (wall clocks of two members: skew shows).",
		source: "statemachine.Machine.applyItems: now minus the transaction's time, set by the member that proposed it; negative values are dropped, as ZooKeeper does"},
	{name: "follower_sync_time", kind: kindSummary, source: "not exported: " + whyZab},
	{name: "observer_sync_time", kind: kindSummary, source: "not exported: " + whyZab},
	{name: "election_time", kind: kindSummary, scope: always, help: "Time this member spent without a leader, from losing one (or starting) until it learnt the next, in ms.",
		source: "Server.leaderChanged: raft's leader changes; standalone servers lead at once and record nothing"},
	{name: "looking_count", kind: kindCounter, scope: always, help: "Times this member found itself without a leader (ZooKeeper: entered LOOKING).",
		source: "Server.leaderChanged: changes to no leader (raft's leader 0)"},
	{name: "diff_count", kind: kindCounter, source: "not exported: " + whyZab},
	{name: "snap_count", kind: kindCounter, source: "not exported: " + whyZab},
	{name: "commit_count", kind: kindCounter, source: "not exported: " + whyZab},
	{name: "connection_request_count", kind: kindCounter, scope: always, help: "Connect requests received from clients.",
		source: "each ConnectRequest read (Conn.handshake)"},
	{name: "connection_token_deficit", kind: kindSummary, source: "not exported: ZooKeeper's blue throttle token deficit; zkgo's connection throttle is a plain token bucket"},
	{name: "connection_rejected", kind: kindCounter, scope: always, help: "Client connections refused: maxCnxns, maxClientCnxns or the connection throttle.",
		source: "the sum of zkgo_connections_rejected_total's reasons, counted where each refusal happens"},
	{name: "inflight_snap_count", kind: kindSummary, source: "not exported: " + whyZab},
	{name: "inflight_diff_count", kind: kindSummary, source: "not exported: " + whyZab},
	{name: "write_per_namespace", kind: kindSummary, labels: []string{"key"}, source: "not exported: zkgo does not break writes down by top-level namespace"},
	{name: "read_per_namespace", kind: kindSummary, labels: []string{"key"}, source: "not exported: zkgo does not break reads down by top-level namespace"},
	{name: "bytes_received_count", kind: kindCounter, scope: always, help: "Bytes of request packets received from clients (the connect request included, length prefixes not).",
		source: "each frame's length, counted by the connection's reader"},
	{name: "unrecoverable_error_count", kind: kindCounter, source: "not exported: on an unrecoverable error zkgo stops, and its metrics endpoint with it: the counter would always read 0"},
	{name: "node_created_watch_count", kind: kindSummary, scope: always, help: "Watchers one NodeCreated event fired (events that fired none are not counted).",
		source: "watch.Manager.Trigger (SetFanOutHook): the data and child watchers a NodeCreated event fires together, persistent and recursive ones included"},
	{name: "node_deleted_watch_count", kind: kindSummary, scope: always, help: "Watchers one NodeDeleted event fired (events that fired none are not counted).",
		source: "watch.Manager.Trigger (SetFanOutHook): the data and child watchers a NodeDeleted event fires together, persistent and recursive ones included"},
	{name: "node_changed_watch_count", kind: kindSummary, scope: always, help: "Watchers one NodeDataChanged event fired (events that fired none are not counted).",
		source: "watch.Manager.Trigger (SetFanOutHook): the data and child watchers a NodeDataChanged event fires together, persistent and recursive ones included"},
	{name: "node_children_watch_count", kind: kindSummary, scope: always, help: "Watchers one NodeChildrenChanged event fired (events that fired none are not counted).",
		source: "watch.Manager.Trigger (SetFanOutHook): the data and child watchers a NodeChildrenChanged event fires together, persistent and recursive ones included"},
	{name: "add_dead_watcher_stall_time", kind: kindCounter, source: "not exported: zkgo removes a closed connection's watches at once; it has no dead-watcher cleaner"},
	{name: "dead_watchers_queued", kind: kindCounter, source: "not exported: zkgo has no dead-watcher cleaner"},
	{name: "dead_watchers_cleared", kind: kindCounter, source: "not exported: zkgo has no dead-watcher cleaner"},
	{name: "dead_watchers_cleaner_latency", kind: kindSummary, source: "not exported: zkgo has no dead-watcher cleaner"},
	{name: "response_packet_cache_hits", kind: kindCounter, source: "not exported: " + whyNoCache},
	{name: "response_packet_cache_misses", kind: kindCounter, source: "not exported: " + whyNoCache},
	{name: "response_packet_get_children_cache_hits", kind: kindCounter, source: "not exported: " + whyNoCache},
	{name: "response_packet_get_children_cache_misses", kind: kindCounter, source: "not exported: " + whyNoCache},
	{name: "ensemble_auth_success", kind: kindCounter, source: "not exported: " + whyAuth},
	{name: "ensemble_auth_fail", kind: kindCounter, source: "not exported: " + whyAuth},
	{name: "ensemble_auth_skip", kind: kindCounter, source: "not exported: " + whyAuth},
	{name: "prep_processor_queue_time_ms", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "prep_processor_queue_size", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "prep_processor_request_queued", kind: kindCounter, source: "not exported: " + whyPipeline},
	{name: "outstanding_changes_queued", kind: kindCounter, source: "not exported: " + whyPipeline},
	{name: "outstanding_changes_removed", kind: kindCounter, source: "not exported: " + whyPipeline},
	{name: "prep_process_time", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "proposal_process_time", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "close_session_prep_time", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "revalidate_count", kind: kindCounter, scope: always, help: "Resumed sessions this member revalidated (took over) through the log.",
		source: "the handshake of a resumed session on an ensemble member: the session move it proposes, which the connect reply waits for (ZooKeeper's follower asks its leader instead)"},
	{name: "connection_drop_count", kind: kindCounter, source: "not exported: zkgo never drops connections by probability"},
	{name: "connection_revalidate_count", kind: kindCounter, source: "not exported: see revalidate_count"},
	{name: "sessionless_connections_expired", kind: kindCounter, scope: always, help: "Connections closed for not completing their handshake in time.",
		source: "the reader's handshake deadline (zookeeper.nio.sessionlessCnxnTimeout) expiring"},
	{name: "stale_sessions_expired", kind: kindCounter, source: "not exported: zkgo does not tell stale sessions apart when it expires them; see zkgo_session_expirations_total"},
	{name: "unavailable_time", kind: kindSummary, source: "not exported: without Zab's separate sync phase a zkgo member is unavailable exactly while it has no leader: that is election_time"},
	{name: "leader_unavailable_time", kind: kindSummary, source: "not exported: see unavailable_time"},
	{name: "requests_in_session_queue", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "pending_session_queue_size", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "reads_after_write_in_session_queue", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "reads_issued_from_session_queue", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "session_queues_drained", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "time_waiting_empty_pool_in_commit_processor_read_ms", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "write_batch_time_in_commit_processor", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "concurrent_request_processing_in_commit_processor", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "read_commit_proc_req_queued", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "write_commit_proc_req_queued", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "commit_commit_proc_req_queued", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "request_commit_queued", kind: kindCounter, source: "not exported: " + whyPipeline},
	{name: "read_commit_proc_issued", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "write_commit_proc_issued", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "throttled_ops", kind: kindCounter, scope: always, help: "Requests answered with the Throttled error.",
		source: "requests refused for the per-connection watch bound (mntr zkgo_watch_limit_refusals)"},
	{name: "read_commitproc_time_ms", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "write_commitproc_time_ms", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "local_write_committed_time_ms", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "server_write_committed_time_ms", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "commit_process_time", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "om_proposal_process_time_ms", kind: kindSummary, source: "not exported: " + whyZab},
	{name: "om_commit_process_time_ms", kind: kindSummary, source: "not exported: " + whyZab},
	{name: "read_final_proc_time_ms", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "write_final_proc_time_ms", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "proposal_latency", kind: kindSummary, source: "not exported: " + whyZab},
	{name: "proposal_ack_creation_latency", kind: kindSummary, source: "not exported: " + whyZab},
	{name: "commit_propagation_latency", kind: kindSummary, source: "not exported: " + whyZab},
	{name: "learner_proposal_received_count", kind: kindCounter, source: "not exported: " + whyZab},
	{name: "learner_commit_received_count", kind: kindCounter, source: "not exported: " + whyZab},
	{name: "learner_handler_qp_size", kind: kindSummary, labels: []string{"key"}, source: "not exported: " + whyZab},
	{name: "learner_handler_qp_time_ms", kind: kindSummary, labels: []string{"key"}, source: "not exported: " + whyZab},
	{name: "startup_txns_loaded", kind: kindSummary, scope: always, help: "Committed log entries replayed at start after the snapshot.",
		source: "raftnode.StartupLoad.Entries: the commit index minus the snapshot's (raft's own entries included)"},
	{name: "startup_txns_load_time", kind: kindSummary, scope: always, help: "Time to read the WAL and replay the committed entries after the snapshot at start, in ms.",
		source: "the storage's open plus raftnode.StartupLoad.Replay"},
	{name: "startup_snap_load_time", kind: kindSummary, scope: always, help: "Time to restore the snapshot at start, in ms (0 without one).",
		source: "raftnode.StartupLoad.Snapshot: the state machine's Restore from the snapshot file"},
	{name: "sync_processor_queue_and_flush_time_ms", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "sync_processor_queue_size", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "sync_processor_request_queued", kind: kindCounter, source: "not exported: " + whyPipeline},
	{name: "sync_processor_queue_time_ms", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "sync_processor_queue_flush_time_ms", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "sync_process_time", kind: kindSummary, source: "not exported: " + whyPipeline},
	{name: "sync_processor_batch_size", kind: kindSummary, scope: always, help: "Log entries made durable by one WAL fsync (group commit).",
		source: "storage.Options.OnWALSync: entries of each Save that fsyncs (0 for a hard state alone)"},
	{name: "quorum_ack_latency", kind: kindSummary, source: "not exported: " + whyZab},
	{name: "ack_latency", kind: kindSummary, labels: []string{"key"}, source: "not exported: " + whyZab},
	{name: "proposal_count", kind: kindCounter, source: "not exported: " + whyZab},
	{name: "quit_leading_due_to_disloyal_voter", kind: kindCounter, source: "not exported: " + whyZab},
	{name: "stale_requests", kind: kindCounter, source: "not exported: " + whyThrottle},
	{name: "stale_requests_dropped", kind: kindCounter, source: "not exported: " + whyThrottle},
	{name: "stale_replies", kind: kindCounter, source: "not exported: " + whyThrottle},
	{name: "request_throttle_queue_time_ms", kind: kindSummary, source: "not exported: " + whyThrottle},
	{name: "request_throttle_wait_count", kind: kindCounter, source: "not exported: " + whyThrottle},
	{name: "large_requests_rejected", kind: kindCounter, source: "not exported: " + whyThrottle},
	{name: "netty_queued_buffer_capacity", kind: kindSummary, source: "not exported: zkgo does not use Netty"},
	{name: "digest_mismatches_count", kind: kindCounter, source: "not exported: zkgo keeps no tree digest (hash prints none)"},
	{name: "learner_request_processor_queue_size", kind: kindSummary, source: "not exported: " + whyZab},
	{name: "unsuccessful_handshake", kind: kindCounter, source: "not exported: zkgo does not count failed TLS handshakes yet"},
	{name: "insecure_admin_count", kind: kindCounter, source: "not exported: zkgo has no AdminServer"},
	{name: "tls_handshake_exceeded", kind: kindCounter, source: "not exported: zkgo does not limit concurrent TLS handshakes"},
	{name: "cnxn_closed_without_zk_server_running", kind: kindCounter, source: "not exported: zkgo does not count connections refused while it has no quorum yet"},
	{name: "skip_learner_request_to_next_processor_count", kind: kindCounter, source: "not exported: " + whyPipeline},
	{name: "socket_closing_time", kind: kindSummary, source: "not exported: zkgo closes sockets without timing them"},
	{name: "requests_not_forwarded_to_commit_processor", kind: kindCounter, source: "not exported: " + whyPipeline},
	{name: "response_bytes", kind: kindCounter, scope: always, help: "Bytes of replies queued to clients (headers, bodies and length prefixes).",
		source: "each reply appended to a connection's output (Conn.appendFrame)"},
	{name: "watch_bytes", kind: kindCounter, scope: always, help: "Bytes of watch notifications queued to clients (with length prefixes).",
		source: "each notification appended to a connection's output (Conn.appendFrame)"},
	{name: "jvm_pause_time_ms", kind: kindSummary, source: "not exported: " + whyJVM},
	{name: "quota_exceeded_error_per_namespace", kind: kindCounter, labels: []string{"key"}, source: "not exported: " + whyQuota},

	// zkgo's own metrics.
	{name: "zkgo_request_duration_seconds", kind: kindHistogram, labels: []string{"op"}, scope: always, help: "Client request latency by operation (ZooKeeper's name of the opcode), from reading the request to queueing its reply.",
		source: "each reply (Conn.noteReply)"},
	{name: "zkgo_wal_fsync_duration_seconds", kind: kindHistogram, scope: always, help: "WAL write-and-fsync latency.",
		source: "storage.Options.OnWALSync, as fsynctime"},
	{name: "zkgo_wal_fsync_entries", kind: kindHistogram, scope: always, help: "Log entries made durable per WAL fsync.",
		source: "storage.Options.OnWALSync, as sync_processor_batch_size"},
	{name: "zkgo_raft_term", kind: kindGauge, scope: always, help: "Current raft term.",
		source: "raftnode.Status (mntr zkgo_raft_term)", read: func(g *Gauges) float64 { return float64(g.Raft.Term) }},
	{name: "zkgo_raft_commit_index", kind: kindGauge, scope: always, help: "Highest raft log index known committed.",
		source: "raftnode.Status (mntr zkgo_raft_commit)", read: func(g *Gauges) float64 { return float64(g.Raft.Commit) }},
	{name: "zkgo_raft_applied_index", kind: kindGauge, scope: always, help: "Highest raft log index applied to the tree.",
		source: "raftnode.Status (mntr zkgo_raft_applied)", read: func(g *Gauges) float64 { return float64(g.Raft.Applied) }},
	{name: "zkgo_raft_snapshot_index", kind: kindGauge, scope: always, help: "Raft log index of the newest snapshot.",
		source: "raftnode.Status (mntr zkgo_raft_snapshot_index)", read: func(g *Gauges) float64 { return float64(g.Raft.Snapshot) }},
	{name: "zkgo_raft_leader", kind: kindGauge, scope: always, help: "Raft id of the leader this member knows, 0 for none.",
		source: "raftnode.Status (mntr zkgo_raft_leader)", read: func(g *Gauges) float64 { return float64(g.Raft.Leader) }},
	{name: "zkgo_raft_leader_changes_total", kind: kindCounter, scope: always, help: "Changes of the raft leader this member saw (to none included).",
		source: "Server.leaderChanged"},
	{name: "zkgo_raft_proposals_dropped_total", kind: kindCounter, scope: always, help: "Proposals of this member that raft refused or that never reached the log (outcome unknown to their client).",
		source: "the proposer: ProposeBatch errors, and proposals found lost when a later one of this member applied first"},
	{name: "zkgo_snapshot_duration_seconds", kind: kindHistogram, scope: always, help: "Time to write and install a snapshot taken by this member.",
		source: "raftnode.Config.OnSnapshot, as snapshottime"},
	{name: "zkgo_snapshot_size_bytes", kind: kindGauge, scope: always, help: "Size of the last snapshot file this member wrote (0 before the first).",
		source: "raftnode.Config.OnSnapshot"},
	{name: "zkgo_session_expirations_total", kind: kindCounter, scope: always, help: "Sessions this member expired (only the leader expires sessions).",
		source: "session.Tracker.Expire proposing the close"},
	{name: "zkgo_watch_notifications_total", kind: kindCounter, scope: always, help: "Watch notifications queued to clients.",
		source: "Conn.Deliver, after the READ check"},
	{name: "zkgo_connect_requests_abandoned_total", kind: kindCounter, scope: always, help: "Session resumes not served because the client had already closed the connection (it waited in the accept queue of a paused member).",
		source: "the handshake of a resumed session on an ensemble member (peerGone)"},
	{name: "zkgo_request_stage_seconds", kind: kindHistogram, labels: []string{"stage"}, scope: always, help: "Where requests spend their time: propose (a write, read to handed to raft), log (a write, handed to raft to reply queued: WAL fsync, replication, commit, apply), apply (a write, the end of log: the state machine got its batch to reply queued), read (a read, read to reply queued), reply (queued to written to the socket, per write call).",
		source: "stages.go: Conn.noteReply, the proposer, the writers (mntr zkgo_stage_<stage>_ns and _count)"},
	{name: "zkgo_connections_parked", kind: kindGauge, scope: always, help: "Client connections parked while idle: no goroutine and no input buffer until their next request.",
		source: "the idle poller (connpark.go; mntr zkgo_parked_connections)", read: func(g *Gauges) float64 { return float64(g.ParkedConnections) }},
	{name: "zkgo_connection_parks_total", kind: kindCounter, scope: always, help: "Times an idle client connection parked (a connection whose requests other than pings come less than 4 park intervals apart waits 4 of them first).",
		source: "Conn.park (connpark.go; mntr zkgo_connection_parks)"},
	{name: "zkgo_connections_rejected_total", kind: kindCounter, labels: []string{"reason"}, scope: always, help: "Client connections refused, by reason: max_cnxns, max_client_cnxns or throttle.",
		source: "where each refusal happens (Server.newConn, acceptLoop)"},
	{name: "zkgo_audit_events_dropped_total", kind: kindCounter, scope: always, help: "Audit events dropped because the audit log's queue was full (0 while the audit log is off).",
		source: "server/audit Writer.Dropped (mntr zkgo_audit_dropped)"},
}

// metricByName returns the table row of name; it panics for a name not in
// the table or not exported, a bug that the tests find at once.
func metricByName(name string) *metricDef {
	for i := range metricTable {
		if d := &metricTable[i]; d.name == name {
			if d.scope == notExported {
				panic("metrics: metric " + name + " is marked not exported")
			}
			return d
		}
	}
	panic("metrics: metric " + name + " is not in the table")
}

// Spec is a row of the table as tools and tests see it.
type Spec struct {
	Name string
	// Type is the Prometheus type: "gauge", "counter", "summary" or
	// "histogram".
	Type     string
	Labels   []string
	Exported bool
	// EnsembleOnly and LeaderOnly: where an exported metric appears.
	EnsembleOnly, LeaderOnly bool
	Help                     string
	// Source says how zkgo computes the metric, or why it does not.
	Source string
}

// Table returns the table, in its order.
func Table() []Spec {
	out := make([]Spec, 0, len(metricTable))
	for _, d := range metricTable {
		out = append(out, Spec{Name: d.name, Type: d.kind.String(), Labels: d.labels,
			Exported: d.scope != notExported, EnsembleOnly: d.scope == ensemble, LeaderOnly: d.scope == leading,
			Help: d.help, Source: d.source})
	}
	return out
}

// String is the kind's Prometheus type name.
func (k metricKind) String() string {
	switch k {
	case kindGauge:
		return "gauge"
	case kindCounter:
		return "counter"
	case kindSummary:
		return "summary"
	case kindHistogram:
		return "histogram"
	}
	return "untyped"
}
