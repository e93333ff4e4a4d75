package server

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// The data of a raft log entry written by zkgo (entry format 4). raft's
// own entries (empty no-ops, configuration changes) are not ours and never
// reach decodeEntry. All integers are big-endian.
//
//	offset  size  field
//	0       8     proposal id: the proposing member's random 32-bit base
//	              (high half) and a sequence number (low half); 0 marks a
//	              control entry
//
// then, by kind:
//
//	transaction (id ≠ 0, more than 8 bytes, no mark at 8):
//	8       …     tree.Txn encoding: op int32, session int64, time int64,
//	              auth ids (vector of proto.Id), then the op's request
//	              record (none for closeSession)
//
//	marked entry (id ≠ 0, an int32 at 8 below markBase; opcodes never
//	are):
//	8       4     mark: markClaimedTxn or markMove
//	claimed transaction (a client's, with its connection's claim):
//	12      8     the claim (tree.Txn.Claim, > 0)
//	20      …     tree.Txn encoding, as above
//	session move (a client resumed a session here; the connection's
//	              handshake waits for it to be applied):
//	12      8     the session id
//	20      8     the member (server id) the client resumed it on
//	28      8     that member's claim number for the session
//
//	sync barrier (id ≠ 0, exactly 8 bytes): nothing; applying it
//	              completes a sync (every write committed before it is
//	              applied here)
//
//	control entry (id = 0):
//	8       4     kind, int32: n ≥ 0 is a touch batch of n sessions;
//	              -1 is a session move (formats 2 and 3; format 4
//	              writes marked moves, which have a proposal id); -2
//	              is the ensemble's formation (format 3); other
//	              negative kinds are reserved for later formats
//	12      8·n   touch batch: session ids, int64 each
//	12      8     session move: the session id
//	20      8     the member (server id) the client resumed it on
//	28      8     that member's claim number for the session
//	12      8     formation: the value the first leader chose (see
//	              raftnode's formation.go; never 0 or 1)
//
// Format 1 (earlier releases) is format 3 without session moves and
// formations, format 2 without formations, format 3 without marked
// entries; their logs read unchanged. A formation entry is only written by
// the leader of an ensemble that this format's zkgo formed. A member of
// format 3 stops at the first marked entry it is handed (an opcode it does
// not know): the members of an ensemble move to format 4 together.
//
// A log position is the claim of a connection on its session: the
// createSession's zxid for the connection that created it, the move's
// index for one that resumed it. The tree records the newest claim of
// each session and refuses a transaction carrying an older one
// (tree.Txn.Claim): a proposal held up in a paused member is not applied
// after its client has resumed the session elsewhere.
//
// The layout is fixed by golden bytes (entry_test.go): a change that
// alters it must be a new format, readable beside this one. An entry a
// newer zkgo wrote (a reserved control kind) is refused with
// errEntryFormat, naming the format this build reads.
type entry struct {
	kind entryKind
	// id is the proposal id (transactions and sync barriers); 0 for
	// touch batches.
	id uint64
	// txn is the transaction (entryTxn).
	txn *tree.Txn
	// sessions are the touched sessions (entryTouches), or the moved
	// session alone (entryMove).
	sessions []int64
	// owner and claim (entryMove): the member the session moved to and
	// its claim number (see sessionTracker.claim). A move of format 4
	// has a proposal id (its resumed connection waits for it).
	owner int64
	claim uint64
	// control (entryMove): a move of formats 2 and 3, a control entry
	// without a proposal id (read from an older log).
	control bool
	// formation (entryFormation): the ensemble's formation.
	formation uint64
	// sizeHint, if set, is about the encoded size (not encoded itself).
	sizeHint int
}

type entryKind uint8

const (
	entryTxn       entryKind = iota + 1 // a transaction to apply
	entrySync                           // a sync barrier
	entryTouches                        // sessions another member kept alive
	entryMove                           // a session resumed on a member
	entryFormation                      // the ensemble's formation, chosen
)

// Control kinds of session moves and formations.
const (
	kindMove      = -1
	kindFormation = -2
)

// Marks of format 4's marked entries. Every int32 below markBase is
// reserved for marks (opcodes are small numbers).
const (
	markBase       int32 = -1_000_000
	markClaimedTxn int32 = -1_000_001
	markMove       int32 = -1_000_002
)

// entryFormat is the version of the layout above that this build writes
// and reads.
const entryFormat = 4

// maxTouchBatch bounds the sessions of one touch batch (proposer and
// decoder alike).
const maxTouchBatch = 1 << 20

var (
	errShortEntry = errors.New("raft entry shorter than its 8-byte proposal id")
	// errEntryFormat: the entry was written in a format this build does
	// not read (by a newer zkgo).
	errEntryFormat = fmt.Errorf("raft entry written by a newer zkgo (this build reads entry format %d)", entryFormat)
)

// appendEntry appends e's encoding to enc. For transactions and sync
// barriers the proposer may patch the id in place afterwards (the first 8
// bytes of what was appended; see proposer.enqueue).
func appendEntry(enc *jute.Encoder, e *entry) {
	switch e.kind {
	case entryTxn:
		enc.WriteLong(int64(e.id))
		if e.txn.Claim != 0 {
			enc.WriteInt(markClaimedTxn)
			enc.WriteLong(e.txn.Claim)
		}
		e.txn.Encode(enc)
	case entrySync:
		enc.WriteLong(int64(e.id))
	case entryTouches:
		enc.WriteLong(0)
		enc.WriteInt(int32(len(e.sessions)))
		for _, id := range e.sessions {
			enc.WriteLong(id)
		}
	case entryMove:
		if e.control {
			enc.WriteLong(0)
			enc.WriteInt(kindMove)
		} else {
			enc.WriteLong(int64(e.id))
			enc.WriteInt(markMove)
		}
		enc.WriteLong(e.sessions[0])
		enc.WriteLong(e.owner)
		enc.WriteLong(int64(e.claim))
	case entryFormation:
		enc.WriteLong(0)
		enc.WriteInt(kindFormation)
		enc.WriteLong(int64(e.formation))
	default:
		panic(fmt.Sprintf("server: appendEntry of kind %d", e.kind))
	}
}

// decodeEntry decodes entry data written by appendEntry. It never panics:
// any malformed input is an error. A transaction's byte buffers (node
// data) alias b (tree.DecodeTxnSharing): raft's entries are never
// modified, and the tree copies data into its nodes.
// validateEntry is raftnode's Config.ValidateEntry: an entry a peer
// sends must decode, as stateMachine.Apply stops at one that does not.
func validateEntry(b []byte) error {
	_, err := decodeEntry(b)
	return err
}

func decodeEntry(b []byte) (entry, error) {
	if len(b) < 8 {
		return entry{}, errShortEntry
	}
	id := binary.BigEndian.Uint64(b)
	switch {
	case id == 0:
		d := jute.NewDecoder(b[8:])
		n := d.ReadInt()
		if d.Err() != nil {
			return entry{}, fmt.Errorf("control entry: %w", d.Err())
		}
		if n == kindMove {
			id, owner, claim := d.ReadLong(), d.ReadLong(), d.ReadLong()
			if err := d.Finish(); err != nil {
				return entry{}, fmt.Errorf("session move: %w", err)
			}
			return entry{kind: entryMove, sessions: []int64{id}, owner: owner, claim: uint64(claim), control: true}, nil
		}
		if n == kindFormation {
			f := uint64(d.ReadLong())
			if err := d.Finish(); err != nil {
				return entry{}, fmt.Errorf("formation: %w", err)
			}
			if f < 2 {
				return entry{}, fmt.Errorf("formation %d: not a chosen formation", f)
			}
			return entry{kind: entryFormation, formation: f}, nil
		}
		if n < 0 {
			return entry{}, fmt.Errorf("%w: control kind %d", errEntryFormat, n)
		}
		if n > maxTouchBatch || int(n) != (len(b)-12)/8 || (len(b)-12)%8 != 0 {
			return entry{}, fmt.Errorf("touch batch of %d sessions in %d bytes", n, len(b))
		}
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = d.ReadLong()
		}
		return entry{kind: entryTouches, sessions: ids}, nil
	case len(b) == 8:
		return entry{kind: entrySync, id: id}, nil
	case len(b) >= 12 && int32(binary.BigEndian.Uint32(b[8:])) < markBase:
		return decodeMarked(id, b)
	}
	txn, err := tree.DecodeTxnSharing(b[8:])
	if err != nil {
		return entry{}, err
	}
	return entry{kind: entryTxn, id: id, txn: txn}, nil
}

// decodeMarked decodes a marked entry (format 4) of proposal id.
func decodeMarked(id uint64, b []byte) (entry, error) {
	d := jute.NewDecoder(b[12:])
	switch mark := int32(binary.BigEndian.Uint32(b[8:])); mark {
	case markClaimedTxn:
		claim := d.ReadLong()
		if d.Err() != nil || claim <= 0 {
			return entry{}, fmt.Errorf("claimed transaction: claim %d: %v", claim, d.Err())
		}
		txn, err := tree.DecodeTxnSharing(b[20:])
		if err != nil {
			return entry{}, err
		}
		txn.Claim = claim
		return entry{kind: entryTxn, id: id, txn: txn}, nil
	case markMove:
		sess, owner, claim := d.ReadLong(), d.ReadLong(), d.ReadLong()
		if err := d.Finish(); err != nil {
			return entry{}, fmt.Errorf("session move: %w", err)
		}
		return entry{kind: entryMove, id: id, sessions: []int64{sess}, owner: owner, claim: uint64(claim)}, nil
	default:
		return entry{}, fmt.Errorf("%w: mark %d", errEntryFormat, mark)
	}
}

// syncEntry, txnEntry and touchEntry build the entries a member hands to
// raft.
func syncEntry() *entry              { return &entry{kind: entrySync} }
func txnEntry(txn *tree.Txn) *entry  { return &entry{kind: entryTxn, txn: txn} }
func touchEntry(ids []int64) *entry  { return &entry{kind: entryTouches, sessions: ids} }
func formationEntry(f uint64) *entry { return &entry{kind: entryFormation, formation: f} }
func moveEntry(id, owner int64, claim uint64) *entry {
	return &entry{kind: entryMove, sessions: []int64{id}, owner: owner, claim: claim}
}

// entrySizeHint is the size of a claimed transaction's entry made from a
// request frame of frameLen bytes by a connection with identities auth:
// the request (the frame less its 8-byte header) and the entry's header —
// id 8, mark and claim 12, op, session and time 20, the identities (a
// vector of two strings each). Sized exactly, the entry is one allocation,
// not a doubling buffer's several, and no slack stays in raft's in-memory
// log (TestEntrySizeHint).
func entrySizeHint(frameLen int, auth []proto.Id) int {
	n := frameLen + 36
	for _, id := range auth {
		n += 8 + len(id.Scheme) + len(id.ID)
	}
	return n
}
