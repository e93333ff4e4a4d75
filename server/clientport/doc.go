// Package clientport is a zkgo server's client port: its listeners and
// every client connection, and what a connection does — the connect
// handshake (new, resumed and local sessions), the request pipeline, the
// read handlers, authentication (digest, SASL DIGEST-MD5 and GSSAPI,
// x509), TLS and port unification, parking idle connections, linearizable
// reads, the reconfig request, and the audit log of clients' changes.
//
// It owns the connections (Port: conns, the per-address count, the
// global in-flight bound, read-only mode, closing and draining) and each
// connection's state (Conn). It does not own the tree: reads run inside
// statemachine.Machine.View, writes go to the replica's Proposer and come
// back as waiters (a request is the statemachine.Waiter of its proposal).
// It imports the replica, the state machine, the session tracker and the
// counters; package server (lifecycle and observability) makes a Port
// with New and reads it through the exported methods (Conns, Gauges,
// Conn.Info, …).
//
// # Files
//
//	port.go        Port, Config, Parts, New
//	serve.go       listening, accepting, closing, draining
//	conn.go        Conn: socket I/O, framing, the outgoing queue, the
//	               reader and writer goroutines
//	handshake.go   the ConnectRequest: new, resumed and local sessions
//	leaderwait.go  handshakes held through an election
//	pipeline.go    dispatch by proto's opcode table, FIFO order per
//	               connection (reads wait behind the connection's
//	               writes), held proposals, write replies
//	reads.go       the read handlers
//	linread.go     linearizable reads (zkgo.reads=linearizable)
//	sasl.go, tls.go   authentication, TLS, the console's in-process
//	               connections
//	connpark.go, idlepoll_*.go   parking idle connections (Linux)
//	reconfig.go    the reconfig request: authorization, the reply
//	audit.go       the audit log
//	conninfo.go, gauges.go   what cons, stat, mntr and the console read
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
// The apply goroutine holds the Machine's lock (write) while it completes
// writes (writeApplied takes pipeMu, then queues replies under outMu) and
// fires watches (outMu); reads run inside Machine.View (read). Conn.pipeMu
// is never held while entering View. Conn.close may run with the
// Machine's lock and pipeMu held (a reply over the queue limit): it takes
// outMu, slotMu, Port.connsMu, the idle poller's lock, watch.Manager's
// lock and session.Tracker.mu each on its own, holding none of them while
// taking another. Port.spawnMu (read) may be taken under the Machine's
// lock, pipeMu or wmu (waking a parked connection's writer); BeginClose
// takes it with nothing else held. docs/LOCKS.md has the whole
// repository's order.
package clientport
