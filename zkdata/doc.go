// Package zkdata reads and writes Apache ZooKeeper's on-disk formats: the
// snapshots and transaction logs a ZooKeeper 3.4 to 3.9 server keeps in
// dataDir/version-2 and dataLogDir/version-2. ReadDir recovers the state a
// ZooKeeper server would recover from them (an Image); Image.Tree turns it
// into zkgo's tree; WriteSnapshot writes a zkgo tree (or an Image) as a
// snapshot ZooKeeper 3.8 starts from.
//
// # Encoding
//
// Everything is jute's binary encoding, big-endian: int is 4 bytes, long 8,
// a buffer or string is an int length then the bytes (-1: null), a vector
// an int count then the elements, a boolean one byte.
//
// # Snapshots
//
// A snapshot is named snapshot.<zxid in hex>; the zxid in the name (not in
// the file) is the last transaction it is known to hold. With
// zookeeper.snapshot.compression.method the whole stream is compressed and
// the name carries a suffix: ".gz" (gzip) or ".snappy" (snappy-java's
// SnappyOutputStream format: an 8-byte magic 0x82 "SNAPPY" 0x00, two ints
// 1 and 1, then chunks of an int length and a raw Snappy block of at most
// 32 KiB of input; see snappy.go). The uncompressed stream is:
//
//	header     magic int "ZKSN", version int 2, dbid long (-1)
//	sessions   count int, then per session: id long, timeout int
//	ACL cache  count int, then per list: id long, vector of ACL
//	           (perms int, scheme string, id string); nodes refer to a
//	           list by id, -1 being the open ACL (world:anyone, all)
//	nodes      per node: path string, data buffer, ACL id long, and the
//	           persisted stat: czxid, mzxid, ctime, mtime long; version,
//	           cversion, aversion int; ephemeralOwner, pzxid long.
//	           The root comes first with path "", every parent before
//	           its children; the string "/" ends the list.
//	seal       the Adler-32 of every byte so far, as a long, then "/"
//	digest     (3.6+) zxid long, digest version int, tree digest (long
//	           for version 2, a hex string before), then a second seal
//	           whose Adler-32 covers everything before it.
//
// The stat holds ZooKeeper's counters, not what clients see: cversion
// counts child creates (it names sequential children; clients see
// 2*creates - children), ephemeralOwner is the session of an ephemeral,
// 0x8000000000000000 for a container, 0xff in the high byte and the TTL in
// ms in the low 40 bits for a TTL node (clients see 0 for both).
//
// ZooKeeper picks the newest snapshot whose end looks right (a plain one
// ends in the bytes 00 00 00 01 '/', a gzip one starts 1f 8b, a snappy one
// with its magic), reads it to the seal, and falls back to older ones if it
// does not read (at most 100). The digest is the tree digest at the zxid it
// names (see digest.go); a snapshot without it (before 3.6) ends at the
// seal. A snapshot is fuzzy: it is written while transactions go on, so it
// may already hold changes after the zxid in its name.
//
// # Transaction logs
//
// A log is named log.<zxid of its first transaction in hex>:
//
//	header   magic int "ZKLG", version int 2, dbid long (0)
//	record   checksum long (the Adler-32 of the entry), length int,
//	         entry (length bytes), the byte 'B'
//	entry    TxnHeader (clientId long, cxid int, zxid long, time long,
//	         type int), the body the type calls for (CreateTxn,
//	         CreateTTLTxn, CreateContainerTxn, DeleteTxn, SetDataTxn,
//	         SetACLTxn, ErrorTxn, CreateSessionTxn, CloseSessionTxn,
//	         MultiTxn of (type int, body buffer) pairs; see txn.go), then
//	         (3.6+) the tree digest after it: version int, digest long
//
// Logs are preallocated with zeros, so a zero length ends the log. So does
// input that ends inside a record, or a record whose last byte is not 'B':
// the record was being written when the server stopped, and it is dropped
// (the next log, if any, is read on). A complete record whose checksum does
// not match is corruption: ZooKeeper refuses to start, and ReadDir fails
// with the file and offset.
//
// # Recovery
//
// ReadDir loads the snapshot, recomputes quota usage as ZooKeeper does,
// then replays every transaction after the snapshot's zxid from the newest
// log named at or before it onward, tolerating what a fuzzy snapshot
// already holds as ZooKeeper does (replay.go). It compares the tree digest
// with every digest ZooKeeper recorded (Summary.DigestMismatches; zero is
// expected). Last, the ephemerals of sessions that are not in the session
// table are removed, as ZooKeeper does before serving. Sessions get the
// password ZooKeeper would give them (SessionPassword): ZooKeeper derives
// it from the session id and never stores it.
//
// # Untrusted input
//
// Every length and count is checked against ReadOptions before it is used
// (jute.maxbuffer for buffers and log entries, counts for nodes, sessions
// and ACLs), buffers grow only as input arrives, and no input panics (see
// the fuzz tests). Bad input gives a *FormatError naming the file and
// offset.
package zkdata
