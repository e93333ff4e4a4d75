// Package storage is raft's durable storage: hard state, log entries and
// state-machine snapshots in one data directory, recovered on restart and
// mirrored in a raft.MemoryStorage that raft reads.
//
// The log is etcd's write-ahead log (go.etcd.io/etcd/server/v3/storage/wal),
// the one etcd itself runs on; snapshots are files in a small format of our
// own, described below. The consensus code is go.etcd.io/raft; this package
// only makes its state durable in the order raft requires.
//
// # Contract
//
// Open recovers the directory and returns a Storage; Recovered tells what
// it found (fresh directory, snapshot, hard state). The raft loop (package
// raftnode) then calls, for every raft.Ready and from one goroutine:
//
//	SaveSnapshot(rd.Snapshot)          // if any: file, WAL record, MemoryStorage
//	Save(rd.HardState, rd.Entries)     // WAL append + fsync, then MemoryStorage
//	... send messages, apply committed entries ...
//	p := BeginSnapshot(applied, &cs, sm) // now and then: the state machine writes the file
//	go p.Commit()                        // fsync, WAL record, compaction + purge
//
// When Save returns nil, the records are on stable storage (unless
// Options.NoSync): only then may raft's messages be sent and writes be
// acknowledged. An I/O error makes the Storage unusable (ErrFailed): the
// caller must stop raft, Close, and Open again, which recovers the durable
// prefix.
//
// # On-disk layout
//
//	<dir>/LOCK                       exclusive lock (OFD/flock) while open
//	<dir>/wal/<seq>-<index>.wal      etcd WAL segments, 16 hex digits each
//	<dir>/wal/0.tmp, 1.tmp           next segment, preallocated by etcd
//	<dir>/snap/<index>-<term>.snap   snapshot files, 16 hex digits each
//	<dir>/snap/*.snap.tmp            a snapshot write cut short (deleted by Open)
//	<dir>/snap/*.snap.broken         a snapshot that failed verification (kept for inspection)
//
// WAL segments (see etcd's wal/doc.go): each segment starts with a CRC
// record chaining it to the previous segment, the metadata record
// (Options.Metadata) and the current hard state. Records are an 8-byte
// little-endian length (low 56 bits; padding in the top byte), a protobuf
// walpb.Record {type, crc, data}, padded to 8 bytes. The CRC is CRC-32C
// chained over all preceding records. Record types: entry, hard state,
// snapshot (index, term, conf state), metadata, crc. A segment is cut at
// 64 MB (SetWALSegmentSize) and the next one is preallocated. Every length
// read is bounded by the bytes left in the file.
//
// Snapshot files, all integers big-endian. Format version 2, written now
// (the data length is in the trailer so that the data can be streamed
// into the file while the state machine produces it):
//
//	offset      size  field
//	0           8     magic "zkgosnap"
//	8           4     format version (2)
//	12          4     M = length of the metadata (≤ 1 MiB)
//	16          M     raftpb.SnapshotMetadata (protobuf): index, term, conf state
//	16+M        D     state-machine data, opaque to this package (≤ Options.MaxSnapshotBytes)
//	16+M+D      8     D
//	24+M+D      4     CRC-32C (Castagnoli) of bytes [0, 24+M+D)
//
// D follows from the file size (28+M+D bytes) and must equal the trailer's.
// Version 1, written by earlier releases and still read, has D at offset
// 16 (8 bytes) before the metadata and only the CRC as trailer (also
// 28+M+D bytes). The name must match the index and term inside; lengths
// are checked against the size and the bounds before allocating. A file is
// written atomically: <name>.tmp is written and fsynced, renamed to
// <name>, and the directory is fsynced.
//
// # Recovery
//
// Open scans the WAL for snapshot records whose index is covered by the
// last durable hard state's commit (wal.ValidSnapshotEntries), then tries
// the snapshot files newest first: a file without such a record is an
// orphan of a crash between writing the file and its WAL record and is
// deleted; a file that fails verification is renamed *.broken and the next
// older one is tried, which works because WAL segments are kept back to the
// oldest retained snapshot. WAL segments before a gap in the segment
// sequence numbers are deleted first: they are left over from a purge
// interrupted by a crash (see below) and etcd cannot read across the gap.
// The WAL is then opened at the chosen snapshot
// and read to the end. If the last segment ends in a torn record
// (io.ErrUnexpectedEOF: a crash during a write), etcd's wal.Repair copies
// the segment to <name>.broken and truncates it after the last whole
// record; every record that was fsynced lies before the tear and is kept.
// A CRC mismatch anywhere else is reported as ErrCorrupt, never repaired
// silently. (etcd tells a torn write from corruption by an all-zero
// 512-byte sector inside the record, i.e. it assumes tears at sector
// granularity, which is what disks and a killed process's page-cache
// writes produce.)
//
// # Snapshots and compaction
//
// A locally taken snapshot (BeginSnapshot, then Commit; CreateSnapshot does
// both) is streamed into its temporary file by the state machine without
// the storage lock, so Save goes on meanwhile; Commit fsyncs it (still
// without the lock), then under the lock renames it, fsyncs the directory
// and writes the WAL snapshot record (fsynced); a snapshot overtaken by a
// newer one (from the leader) is deleted instead. The MemoryStorage keeps CatchUpEntries
// entries before it. Snapshot files beyond SnapRetain (default 3, like
// ZooKeeper's autopurge.snapRetainCount) are deleted, and WAL segments
// holding only entries older than the oldest kept snapshot are released
// and deleted, oldest first; then both directories are fsynced. A crash
// before that fsync may bring back any subset of the deleted files, so
// recovery tolerates old snapshot files and old segments, and deletes
// segments stranded before a gap.
//
// # How durability is tested
//
// A kill -9 (crash_test.go, and cmd/zkgo's process test) leaves the page
// cache intact, so it shows that the order of writes is right but not
// that anything was fsynced. For that, every durability step reports a
// SyncPoint to Options.SyncHook (or the process-wide SetSyncHook) right
// after it completed: a WAL fsync, a snapshot's temporary file fsynced,
// renamed, its directory fsynced, the WAL snapshot record, a purge and its
// directory fsync. Package storagetest's Recorder turns these into the
// directory's durable image — each file as of the last point that made it
// durable, never a temporary or preallocated file — and materializes it
// as a machine crash at that moment leaves the disk: unsynced bytes
// dropped, optionally some unsynced WAL sectors written anyway (a torn
// tail) and unsynced deletions undone. failpoint_test.go crashes at each
// point (and between a step's write and its fsync) and checks that
// recovery starts from the newest snapshot with a durable WAL record and
// keeps every acknowledged entry; server/fault_test.go does the same under
// a running server with concurrent clients, checking every acknowledged
// write, zxid and tree invariant, with a NoSync run as negative control.
// The hook is trusted: it reports an fsync that the code did not issue
// only if a call site is misplaced, which is why each call sits next to
// the step it reports.
//
// A disk that fails rather than loses power is modelled by the FaultHook
// (SetFaultHook), asked before every durability step (FaultOp): it may
// refuse the step with an error (ENOSPC, EIO), which is then not taken,
// or sleep first (a slow fsync). faulthook_test.go refuses each step in
// turn and checks that nothing was written and that Open recovers.
//
// # Disk faults
//
// A failed WAL write or fsync, or a failure once a snapshot is being
// installed (its rename, its directory's fsync, its WAL record), makes
// the Storage unusable (ErrFailed), and is never retried: after a failed
// fsync the kernel may have dropped the pages it could not write, so a
// later fsync that succeeds proves nothing. The caller stops, and a new
// Open, once the disk is fixed, recovers the durable prefix. A local
// snapshot whose file could not be written or fsynced changed nothing
// that recovery reads: it is abandoned (ErrSnapshotNotTaken) and the
// Storage goes on on its WAL. A failed purge leaves files for the next.
package storage
