package statemachine

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
// reach DecodeEntry. All integers are big-endian.
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
// ErrEntryFormat, naming the format this build reads.
type Entry struct {
	Kind EntryKind
	// ID is the proposal id (transactions and sync barriers); 0 for
	// touch batches.
	ID uint64
	// Txn is the transaction (EntryTxn).
	Txn *tree.Txn
	// Sessions are the touched sessions (EntryTouches), or the moved
	// session alone (EntryMove).
	Sessions []int64
	// Owner and Claim (EntryMove): the member the session moved to and
	// its claim number (see session.Tracker.Claim). A move of format 4
	// has a proposal id (its resumed connection waits for it).
	Owner int64
	Claim uint64
	// Control (EntryMove): a move of formats 2 and 3, a control entry
	// without a proposal id (read from an older log).
	Control bool
	// Formation (EntryFormation): the ensemble's formation.
	Formation uint64
	// SizeHint, if set, is about the encoded size (not encoded itself).
	SizeHint int
}

type EntryKind uint8

const (
	EntryTxn       EntryKind = iota + 1 // a transaction to apply
	EntrySync                           // a sync barrier
	EntryTouches                        // sessions another member kept alive
	EntryMove                           // a session resumed on a member
	EntryFormation                      // the ensemble's formation, chosen
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

// EntryFormat is the version of the layout above that this build writes
// and reads.
const EntryFormat = 4

// MaxTouchBatch bounds the sessions of one touch batch (proposer and
// decoder alike).
const MaxTouchBatch = 1 << 20

var (
	errShortEntry = errors.New("raft entry shorter than its 8-byte proposal id")
	// ErrEntryFormat: the entry was written in a format this build does
	// not read (by a newer zkgo).
	ErrEntryFormat = fmt.Errorf("raft entry written by a newer zkgo (this build reads entry format %d)", EntryFormat)
)

// AppendEntry appends e's encoding to enc. For transactions and sync
// barriers the proposer may patch the id in place afterwards (the first 8
// bytes of what was appended; see proposer.enqueue).
func AppendEntry(enc *jute.Encoder, e *Entry) {
	switch e.Kind {
	case EntryTxn:
		enc.WriteLong(int64(e.ID))
		if e.Txn.Claim != 0 {
			enc.WriteInt(markClaimedTxn)
			enc.WriteLong(e.Txn.Claim)
		}
		e.Txn.Encode(enc)
	case EntrySync:
		enc.WriteLong(int64(e.ID))
	case EntryTouches:
		enc.WriteLong(0)
		enc.WriteInt(int32(len(e.Sessions)))
		for _, id := range e.Sessions {
			enc.WriteLong(id)
		}
	case EntryMove:
		if e.Control {
			enc.WriteLong(0)
			enc.WriteInt(kindMove)
		} else {
			enc.WriteLong(int64(e.ID))
			enc.WriteInt(markMove)
		}
		enc.WriteLong(e.Sessions[0])
		enc.WriteLong(e.Owner)
		enc.WriteLong(int64(e.Claim))
	case EntryFormation:
		enc.WriteLong(0)
		enc.WriteInt(kindFormation)
		enc.WriteLong(int64(e.Formation))
	default:
		panic(fmt.Sprintf("statemachine: AppendEntry of kind %d", e.Kind))
	}
}

// EntrySession returns the session of a transaction entry written by
// AppendEntry, read at its fixed offset without decoding the rest, and
// false for any other entry or data too short to hold one. Group commit
// calls it for every proposal (raftnode.Config.ProposalSource).
func EntrySession(b []byte) (int64, bool) {
	if len(b) < 12 || binary.BigEndian.Uint64(b) == 0 {
		return 0, false // a sync barrier, or a control entry
	}
	off := 8 // the transaction: op (int), then the session (long)
	if mark := int32(binary.BigEndian.Uint32(b[8:])); mark < markBase {
		if mark != markClaimedTxn {
			return 0, false // a session move
		}
		off = 20 // after the mark and the claim
	}
	if len(b) < off+12 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b[off+4:])), true
}

// DecodeEntry decodes entry data written by AppendEntry. It never panics:
// any malformed input is an error. A transaction's byte buffers (node
// data) alias b (tree.DecodeTxnSharing): raft's entries are never
// modified, and the tree copies data into its nodes.
// ValidateEntry is raftnode's Config.ValidateEntry: an entry a peer
// sends must decode, as Machine.Apply stops at one that does not.
func ValidateEntry(b []byte) error {
	_, err := DecodeEntry(b)
	return err
}

func DecodeEntry(b []byte) (Entry, error) {
	if len(b) < 8 {
		return Entry{}, errShortEntry
	}
	id := binary.BigEndian.Uint64(b)
	switch {
	case id == 0:
		d := jute.NewDecoder(b[8:])
		n := d.ReadInt()
		if d.Err() != nil {
			return Entry{}, fmt.Errorf("control entry: %w", d.Err())
		}
		if n == kindMove {
			id, owner, claim := d.ReadLong(), d.ReadLong(), d.ReadLong()
			if err := d.Finish(); err != nil {
				return Entry{}, fmt.Errorf("session move: %w", err)
			}
			return Entry{Kind: EntryMove, Sessions: []int64{id}, Owner: owner, Claim: uint64(claim), Control: true}, nil
		}
		if n == kindFormation {
			f := uint64(d.ReadLong())
			if err := d.Finish(); err != nil {
				return Entry{}, fmt.Errorf("Formation: %w", err)
			}
			if f < 2 {
				return Entry{}, fmt.Errorf("formation %d: not a chosen formation", f)
			}
			return Entry{Kind: EntryFormation, Formation: f}, nil
		}
		if n < 0 {
			return Entry{}, fmt.Errorf("%w: control kind %d", ErrEntryFormat, n)
		}
		if n > MaxTouchBatch || int(n) != (len(b)-12)/8 || (len(b)-12)%8 != 0 {
			return Entry{}, fmt.Errorf("touch batch of %d sessions in %d bytes", n, len(b))
		}
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = d.ReadLong()
		}
		return Entry{Kind: EntryTouches, Sessions: ids}, nil
	case len(b) == 8:
		return Entry{Kind: EntrySync, ID: id}, nil
	case len(b) >= 12 && int32(binary.BigEndian.Uint32(b[8:])) < markBase:
		return decodeMarked(id, b)
	}
	txn, err := tree.DecodeTxnSharing(b[8:])
	if err != nil {
		return Entry{}, err
	}
	return Entry{Kind: EntryTxn, ID: id, Txn: txn}, nil
}

// decodeMarked decodes a marked entry (format 4) of proposal id.
func decodeMarked(id uint64, b []byte) (Entry, error) {
	d := jute.NewDecoder(b[12:])
	switch mark := int32(binary.BigEndian.Uint32(b[8:])); mark {
	case markClaimedTxn:
		claim := d.ReadLong()
		if d.Err() != nil || claim <= 0 {
			return Entry{}, fmt.Errorf("claimed transaction: claim %d: %v", claim, d.Err())
		}
		txn, err := tree.DecodeTxnSharing(b[20:])
		if err != nil {
			return Entry{}, err
		}
		txn.Claim = claim
		return Entry{Kind: EntryTxn, ID: id, Txn: txn}, nil
	case markMove:
		sess, owner, claim := d.ReadLong(), d.ReadLong(), d.ReadLong()
		if err := d.Finish(); err != nil {
			return Entry{}, fmt.Errorf("session move: %w", err)
		}
		return Entry{Kind: EntryMove, ID: id, Sessions: []int64{sess}, Owner: owner, Claim: uint64(claim)}, nil
	default:
		return Entry{}, fmt.Errorf("%w: mark %d", ErrEntryFormat, mark)
	}
}

// SyncEntry, TxnEntry and TouchEntry build the entries a member hands to
// raft.
func SyncEntry() *Entry              { return &Entry{Kind: EntrySync} }
func TxnEntry(txn *tree.Txn) *Entry  { return &Entry{Kind: EntryTxn, Txn: txn} }
func TouchEntry(ids []int64) *Entry  { return &Entry{Kind: EntryTouches, Sessions: ids} }
func FormationEntry(f uint64) *Entry { return &Entry{Kind: EntryFormation, Formation: f} }
func MoveEntry(id, owner int64, claim uint64) *Entry {
	return &Entry{Kind: EntryMove, Sessions: []int64{id}, Owner: owner, Claim: claim}
}

// EntrySizeHint is the size of a claimed transaction's entry made from a
// request frame of frameLen bytes by a connection with identities auth:
// the request (the frame less its 8-byte header) and the entry's header —
// id 8, mark and claim 12, op, session and time 20, the identities (a
// vector of two strings each). Sized exactly, the entry is one allocation,
// not a doubling buffer's several, and no slack stays in raft's in-memory
// log (TestEntrySizeHint).
func EntrySizeHint(frameLen int, auth []proto.Id) int {
	n := frameLen + 36
	for _, id := range auth {
		n += 8 + len(id.Scheme) + len(id.ID)
	}
	return n
}
