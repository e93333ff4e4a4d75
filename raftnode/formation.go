package raftnode

import (
	"encoding/binary"
	"fmt"
)

// Formations. The cluster id in the hello names the ensemble (a hash of
// its initial member list), but an ensemble formed anew on the same
// member list — every data directory emptied and the members started
// again — has the same one, and a member left over from the earlier
// formation (a machine that was down while the others were wiped) must
// not mix its log into the new one. The formation tells them apart:
//
//   - 0: none. A member of an ensemble formed before formations existed;
//     its hello is version 1, which has no formation field.
//   - FormationPending: a member of an ensemble that is forming; its first
//     leader has not chosen the formation yet.
//   - any other value: the formation the ensemble's first leader chose at
//     random and every member recorded.
//
// What an acceptor lets in depends on its own formation: with none, only
// dialers with none; pending, only pending ones; formation F, F and
// pending ones (members of this formation that have not applied the
// choice yet). So a leftover member of an earlier formation is refused by
// the new one at every stage, with a reason both sides log, and an
// acceptor that refuses a chosen formation while its own is pending tells
// TCPConfig.FormationRefused, which may find out (by probes) whether the
// ensemble chose it.
const FormationPending = 1

// Hello versions: 1 without a formation (36 bytes), 2 with it (44 bytes),
// 3 with a pending formation and the dialer's instance token (52 bytes).
//
// A pending member has no formation yet to tell it apart from a pending
// member of another ensemble with the same server ids (the identity does
// not hash addresses: members may know each other by different ones).
// So its hello carries its transport's instance token, a random value of
// the running process, and the acceptor checks it (TCPConfig.VerifyPending)
// by asking the member it knows under the dialer's id, at the address its
// own configuration gives, for its token: a stranger that claims a
// member's id does not have that member's token.
const (
	helloV1    = 1
	helloV2    = 2
	helloV3    = 3
	helloLenV2 = helloLen + 8
	helloLenV3 = helloLenV2 + 8
)

// Instance returns the transport's instance token (see helloV3).
func (t *TCPTransport) Instance() uint64 { return t.cfg.Instance }

// SetFormation sets the formation this member's hellos carry and its
// acceptor checks.
func (t *TCPTransport) SetFormation(f uint64) { t.formation.Store(f) }

// formationAccepts reports whether a member of formation own accepts a
// dialer of formation peer.
func formationAccepts(own, peer uint64) bool {
	switch own {
	case 0:
		return peer == 0
	case FormationPending:
		return peer == FormationPending
	default:
		return peer == own || peer == FormationPending
	}
}

// FormationString describes a formation for log lines.
func FormationString(f uint64) string {
	switch f {
	case 0:
		return "none"
	case FormationPending:
		return "pending"
	}
	return fmt.Sprintf("%016x", f)
}

// hello builds this member's hello to member to, with the given magic:
// version 1 without a formation, version 2 with one.
func (t *TCPTransport) hello(magic string, to uint64) []byte {
	f := t.formation.Load()
	n, v := helloLen, uint32(helloV1)
	switch {
	case f == FormationPending && t.cfg.Instance != 0:
		n, v = helloLenV3, helloV3
	case f != 0:
		n, v = helloLenV2, helloV2
	}
	b := make([]byte, n)
	copy(b, magic)
	binary.BigEndian.PutUint32(b[8:], v)
	binary.BigEndian.PutUint64(b[12:], t.cluster.Load())
	binary.BigEndian.PutUint64(b[20:], t.id.Load())
	binary.BigEndian.PutUint64(b[28:], to)
	if f != 0 {
		binary.BigEndian.PutUint64(b[36:], f)
	}
	if v == helloV3 {
		binary.BigEndian.PutUint64(b[44:], t.cfg.Instance)
	}
	return b
}

// parsedHello is a hello's fields.
type parsedHello struct {
	magic                  string
	cluster, from, to, frm uint64
	instance               uint64 // version 3: the dialer's instance token
}

// parseHello checks a hello's length, magic and version and returns its
// fields.
func parseHello(b []byte) (parsedHello, bool) {
	if len(b) < helloLen {
		return parsedHello{}, false
	}
	h := parsedHello{magic: string(b[:8]), cluster: binary.BigEndian.Uint64(b[12:]),
		from: binary.BigEndian.Uint64(b[20:]), to: binary.BigEndian.Uint64(b[28:])}
	if h.magic != helloMagic && h.magic != snapMagic && h.magic != snapMagic2 {
		return parsedHello{}, false
	}
	switch v := binary.BigEndian.Uint32(b[8:]); {
	case v == helloV1 && len(b) == helloLen:
	case v == helloV2 && len(b) == helloLenV2:
		h.frm = binary.BigEndian.Uint64(b[36:])
		if h.frm == 0 {
			return parsedHello{}, false
		}
	case v == helloV3 && len(b) == helloLenV3:
		h.frm, h.instance = binary.BigEndian.Uint64(b[36:]), binary.BigEndian.Uint64(b[44:])
		if h.frm != FormationPending || h.instance == 0 {
			return parsedHello{}, false
		}
	default:
		return parsedHello{}, false
	}
	return h, true
}
