// Package zk is a ZooKeeper client: one Conn per session, requests
// pipelined from any number of goroutines over one TCP connection, watches
// delivered without loss, and Curator's connection-state vocabulary.
//
//	c, err := zk.Connect(ctx, "zk1:2181,zk2:2181/app", zk.WithSessionTimeout(10*time.Second))
//	if err != nil { ... }
//	defer c.Close()
//	p, err := c.Create(ctx, "/jobs/job-", data, zk.OpenACLUnsafe, zk.ModePersistentSequential)
//	data, stat, ev, err := c.GetW(ctx, "/config")
//	... <-ev ...
//
// The basics of ZooKeeper's data model are reachable from this package
// alone: the types ACL, Id, Stat, Perm and CreateMode (aliases of package
// proto's), the create modes (ModePersistent, ModeEphemeralSequential, ...),
// the permissions (PermRead, ..., PermAll) and, as in ZooKeeper's
// ZooDefs.Ids, the lists OpenACLUnsafe, CreatorAllACL and ReadACLUnsafe and
// the ids AnyoneIDUnsafe and AuthIDs; WorldACL, AuthACL and DigestACL build
// other lists.
//
// # Errors
//
// Failed operations return an *Error holding the ZooKeeper error code, the
// operation and the path; it wraps a sentinel, so errors.Is(err, ErrNoNode)
// works. Operations interrupted by a broken connection fail with
// ErrConnectionLoss (they may or may not have been applied; see Retry and
// IsRetryable). Context cancellation returns ctx.Err().
//
// # Connection and session
//
// A Conn keeps its session across connections: when a connection breaks
// (the read deadline is two thirds of the session timeout; pings go out
// after a third of it without traffic) the Conn reports StateSuspended,
// fails the requests in flight with ErrConnectionLoss, and reconnects to the
// next server of the list (see Servers below) presenting the session id and
// password. Requests issued while disconnected wait for the
// reconnection or their context. After the handshake it authenticates
// again with SASL (WithSASL, DIGEST-MD5), re-sends the
// credentials (WithAuth, AddAuth), re-registers every watch with
// setWatches2 and the last zxid it saw, so that the server fires at once the
// events missed while disconnected, and reports StateReconnected.
//
// # Servers
//
// The Conn takes the server to try from a HostProvider, asked again at
// every connection attempt. The default, HostList, hands out the connect
// string's servers in turn, shuffled (WithHostShuffle). Names are not
// resolved at Connect: each attempt gives "host:port" to the dialer
// (WithDialer; net.Dialer looks the name up every time), so a member whose
// name moves to another address is reached at the new one.
//
// The Conn follows the ensemble, as Curator's EnsembleTracker does: once
// connected it reads the dynamic configuration (/zookeeper/config, outside
// any chroot; ZooKeeper 3.5+ and zkgo) with a watch, and each time a
// reconfig changes it replaces the list with the members' client addresses
// (ConfigClientAddrs: a member whose client address is a wildcard, or a
// port alone, is reached at its server.N host). The watch is re-registered
// on reconnection like any other. A client given one member thus learns
// the others, and members added later, and keeps its session when the
// ones it knew leave. If the session may not read the configuration (an
// ACL on /zookeeper/config, or an older server without it), the Conn keeps
// its list and logs it once. WithEnsembleTracking(false) pins the list
// (members whose configured addresses the client cannot reach, through
// NAT or a proxy); Conn.Servers shows it. WithHostProvider plugs in other
// discovery (DNS SRV records, a registry): its Update is given the
// members when tracking is on.
//
// # States
//
// Conn.NotifyState delivers every transition, in order, never dropped
// (WithStateListener and Conn.StateChanges, its older forms, are
// deprecated):
//
//	Connected      the first session is established
//	Suspended      the connection is lost; the session may still be alive
//	Reconnected    reconnected with the same session
//	ReadOnly       connected to a read-only server (WithReadOnly)
//	Lost           the session is gone
//	Closed         Close was called (always the last state)
//
// Lost is reported when a server says the session expired, and also, as
// Curator does, when the negotiated session timeout elapses while the Conn
// is disconnected: by then the ensemble has expired the session or is about
// to, and its ephemeral nodes and watches are gone.
//
// A Conn whose session is lost does NOT start a new session on its own:
// every operation fails with ErrSessionExpired, watches end with
// EventNotWatching. Close it and Connect again, then rebuild what depended
// on the session (ephemeral nodes, locks, leader latches, watches), as
// Curator recipes do on LOST.
//
// # Watches
//
// GetW, ExistsW and ChildrenW return a channel that receives exactly one
// event and is then closed; it is buffered, so the connection never waits
// for the receiver. If the session ends first, the one event is
// EventNotWatching (Err: ErrSessionExpired or ErrClosing). AddWatch returns a
// Watcher for a persistent or persistent recursive watch: an unbounded
// stream of events until Watcher.Close or the end of the session.
//
// ZooKeeper 3.8 servers (and zkgo's) keep one registration per session and
// path, whose mode is that of the last watch set: a one-shot watch set on a
// path that has a persistent watch of the same session downgrades it, and a
// persistent and a persistent recursive watch on one path do not coexist.
// Use separate Conns (or paths) to combine them. Watchers of one Conn that
// share a path and mode share the server-side registration; closing the last
// one removes it.
//
// ReadOnly: with WithReadOnly the Conn accepts a read-only server (a member
// cut off from its quorum, with readonlymode.enabled). The state is then
// StateReadOnly: reads work, writes and sync fail with ErrNotReadOnly. As
// ZooKeeper's client does, the Conn meanwhile asks the other servers "isro"
// (pausing 100 ms, doubling up to a minute between passes) and moves to the
// first read-write one (StateSuspended, then StateReconnected). Until a
// read-write server has accepted the Conn, its session is local to the
// read-only server and is replaced by a new one on the move; afterwards the
// session is always resumed.
//
// Reconfiguration: GetConfig and GetConfigW read (and watch) the dynamic
// configuration in /zookeeper/config; Reconfig and IncrementalReconfig
// change the membership where the server allows it.
//
// # Chroot
//
// A chroot ("host:port/app" or WithChroot) is prepended to every path sent
// and stripped from every path received, including watch events.
// GetConfig and GetConfigW read /zookeeper/config outside the chroot.
package zk
