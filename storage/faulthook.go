package storage

import (
	"sync/atomic"
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.30.0 -type=FaultOp -trimprefix=Fault -output=faultop_string.go

// FaultOp names a step of making data durable as a FaultHook sees it:
// the moment right before the step. Where a SyncPoint says what a step
// left on disk, a FaultOp lets a test refuse the step, so that it fails
// the way a full or failing disk makes it fail, or delay it, the way a
// slow disk does.
type FaultOp uint8

// The steps, in the order a snapshot's life takes them. Each is asked
// only when the step would really happen: nothing is asked for a Save
// with nothing to write, and with Options.NoSync no fsync step is asked.
// Open and the WAL's prefiller (prefill.go, which only writes zeros over
// zeros) are not asked.
const (
	// FaultWALWrite: records are about to be appended to the WAL: a
	// Save's entries and hard state, or a snapshot's WAL record.
	FaultWALWrite FaultOp = iota + 1
	// FaultWALSync: the WAL is about to be fsynced. etcd's WAL writes
	// and fsyncs in one call, so a Save that syncs asks FaultWALWrite,
	// then FaultWALSync, both before that call.
	FaultWALSync
	// FaultSnapWrite: a snapshot file is about to be written under its
	// temporary name (a local snapshot, one the leader sent in a
	// message) or into its partial file (one streamed from the leader).
	FaultSnapWrite
	// FaultSnapSync: a snapshot's temporary file, or the snapshot
	// directory after its rename, is about to be fsynced.
	FaultSnapSync
	// FaultSnapRename: a snapshot's temporary file is about to be renamed
	// to its final name.
	FaultSnapRename
	// FaultPurge: old snapshot files and WAL segments are about to be
	// deleted.
	FaultPurge
)

// Writes reports whether op writes data: what a full disk refuses.
func (op FaultOp) Writes() bool {
	return op == FaultWALWrite || op == FaultSnapWrite || op == FaultSnapRename
}

// Syncs reports whether op is an fsync: what a slow disk makes slow.
func (op FaultOp) Syncs() bool { return op == FaultWALSync || op == FaultSnapSync }

// FaultHook is asked before each durability step of every Storage of the
// process (see FaultOp); dir is the Storage's Dir. It is called on the
// goroutine about to take the step, which may hold the Storage's lock: it
// must not call the Storage. It may sleep (a slow disk). A non-nil error
// refuses the step: it is not taken — nothing of it reaches the disk, so
// nothing torn or untrue is left behind — and it fails with that error as
// if the disk had returned it (wrap syscall.ENOSPC or syscall.EIO to
// model a full or failing disk). What the failure then does depends on
// the step; see doc.go, "Disk faults". For tests: a process built for
// fault injection (cmd/zkgo with the zkgofaults build tag) sets one.
type FaultHook func(dir string, op FaultOp) error

// processFaultHook is the hook set by SetFaultHook.
var processFaultHook atomic.Pointer[FaultHook]

// SetFaultHook installs h (nil removes it) for every Storage of the
// process and returns the previous one. Without a hook, each step costs
// one atomic load.
func SetFaultHook(h FaultHook) (prev FaultHook) {
	var p *FaultHook
	if h != nil {
		p = &h
	}
	if old := processFaultHook.Swap(p); old != nil {
		return *old
	}
	return nil
}

// fault asks the hook, if any, whether the step op may be taken; an error
// means it must not be.
func (s *Storage) fault(op FaultOp) error {
	if h := processFaultHook.Load(); h != nil {
		return (*h)(s.dir, op)
	}
	return nil
}

// fileSteps is what the durability steps of a snapshot file tell and ask:
// with noSync nothing is fsynced (and nothing told); synced (nil: nobody)
// is told each step once it completed (SyncHook); fault (nil: nobody) is
// asked before each one and refuses it with an error (FaultHook).
type fileSteps struct {
	noSync bool
	synced func(SyncPoint)
	fault  func(FaultOp) error
}

// fileSteps returns the steps of s's snapshot files.
func (s *Storage) fileSteps() fileSteps {
	return fileSteps{noSync: s.opts.NoSync, synced: s.synced, fault: s.fault}
}

func (st fileSteps) ask(op FaultOp) error {
	if st.fault == nil {
		return nil
	}
	return st.fault(op)
}

func (st fileSteps) tell(p SyncPoint) {
	if st.synced != nil && !st.noSync {
		st.synced(p)
	}
}
