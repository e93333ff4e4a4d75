// Package replica is a zkgo member's replication: its member of the raft
// group (go.etcd.io/raft through raftnode) over its storage, the proposer
// that hands entries to raft, the ensemble's membership and its changes
// (reconfig), how a member starts (form, rejoin, convert a standalone's
// data), the formation, leadership (who leads, whether the configured
// quorum holds, handing leadership over), and the data directory offline
// (seed, load, recover).
//
// It owns: raft's node and the storage (Replica), the proposals in flight
// (Proposer), the membership (Membership, published atomically), the
// member's identity files. It does not own the tree: the state machine
// (package statemachine) applies what raft commits and is the only code
// that locks the tree; the replica reads it inside Machine.View.
//
// It imports neither the client front end nor observability (package
// server and its report, metrics and adminhttp packages): the server
// makes a Replica with New and hears from it through Hooks; it asks it
// through the exported methods (Reconfig, TransferLeadership, Status,
// Members, …).
//
// # Files
//
//	replica.go     Replica, New, Start/Stop: the raft node over the WAL (or
//	               memory), following raft's leader, touch batches
//	proposer.go    Proposer: combined batches of proposals, their waiters
//	config.go      Config (what the replica takes of server.Options), Peer
//	members.go     raft ids, deciding how to start, admitting joiners,
//	               promoting learners, applying conf changes
//	probe.go       the peer port's probes (status, join) and answers
//	formation.go   the ensemble's formation: chosen, learned, refused
//	ensemble.go    the identity file, members of another ensemble
//	quorum.go      the configured quorum, waiting and saying for what
//	quorumauth.go  quorum SASL (DIGEST-MD5, Kerberos) on the peer port
//	reconfig.go    Membership, Reconfig, SetupTree
//	leadership.go  TransferLeadership, RequestLeadership, the handover
//	               before a leader stops
//	convert.go     a standalone's data directory becoming a member's
//	seed.go, loaddir.go, recover.go   the data directory offline
//	listeners.go   the peer listeners (multiAddress, all interfaces)
//
// # Lock order
//
//	Replica.reconfigMu → Replica.memberMu | memberView.mu | Proposer.mu | statemachine.Machine.mu (R)
//	Replica.reconfigMu → raftnode.Node's locks
//	Replica.formationMu → memberView.mu
//
// Proposer.mu, memberMu, mismatchMu, pendingMu and memberView.mu are
// leaves. docs/LOCKS.md has the whole repository's order.
package replica
