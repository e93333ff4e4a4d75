package check

import "testing"

const s1, s2 = int64(0x11), int64(0x22)

// sop builds a request of session s on /s.
func sop(s int64, kind OpKind, call, ret int64, out Outcome, mzxid int64) SessionOp {
	return SessionOp{Client: hex(s), Session: s, Kind: kind, Path: "/s", Call: ms(call), Return: ms(ret), Outcome: out, Mzxid: mzxid}
}

// found is a read of /s that found it with mzxid.
func found(s int64, call, ret, mzxid int64) SessionOp {
	op := sop(s, OpRead, call, ret, OK, mzxid)
	op.Exists = true
	return op
}

// gone is a read of /s that found no node.
func gone(s int64, call, ret int64) SessionOp { return sop(s, OpRead, call, ret, OK, 0) }

func with(op SessionOp, f func(*SessionOp)) SessionOp { f(&op); return op }

func seen(z int64) func(*SessionOp) { return func(op *SessionOp) { op.Seen = z } }

func reply(xid int32, done, zxid int64) func(*SessionOp) {
	return func(op *SessionOp) { op.Xid, op.Done, op.Zxid = xid, done, zxid }
}

func TestSessions(t *testing.T) {
	tests := []struct {
		name string
		ops  []SessionOp
		want verdict
	}{
		{"good", []SessionOp{
			sop(s1, OpCreate, 0, 10, OK, 5),
			found(s1, 20, 30, 5),
			sop(s2, OpSetData, 40, 50, OK, 7),
			with(found(s1, 60, 70, 5), seen(6)), // s1 had not seen 7: a stale read is allowed
			with(found(s1, 80, 90, 7), seen(7)),
			with(sop(s2, OpOther, 95, 96, OK, 0), reply(1, 1, 7)),
			with(sop(s2, OpOther, 95, 97, OK, 0), reply(2, 2, 8)),
			with(sop(s2, OpOther, 95, 98, Unknown, 0), reply(3, 0, 0)),
		}, verdict{ok: true}},
		{"a decreasing zxid in reply order", []SessionOp{
			with(sop(s1, OpOther, 0, 10, OK, 0), reply(1, 1, 9)),
			with(sop(s1, OpOther, 0, 11, OK, 0), reply(2, 2, 7)),
		}, verdict{
			problem:  []string{"session 0x11", "reply #2 carries zxid 0x7", "0x9"},
			evidence: []string{"reply #1, reply zxid 0x9", "reply #2, reply zxid 0x7"}}},
		{"a decreasing zxid in real time", []SessionOp{
			with(sop(s1, OpOther, 0, 10, OK, 0), reply(0, 0, 9)),
			with(sop(s1, OpOther, 20, 30, OK, 0), reply(0, 0, 7)),
		}, verdict{problem: []string{"carries zxid 0x7", "older than zxid 0x9"}, evidence: []string{"reply zxid 0x9", "reply zxid 0x7"}}},
		{"a reply older than the zxid seen before the call", []SessionOp{
			with(sop(s1, OpOther, 20, 30, OK, 0), func(op *SessionOp) { op.Seen, op.Zxid = 9, 7 }),
		}, verdict{problem: []string{"0x7", "0x9"}}},
		{"FIFO", []SessionOp{
			with(sop(s1, OpOther, 0, 10, OK, 0), reply(1, 2, 0)),
			with(sop(s1, OpOther, 0, 10, OK, 0), reply(2, 1, 0)),
		}, verdict{problem: []string{"xid 2 was answered (reply #1) before xid 1"}, evidence: []string{"xid 1, reply #2", "xid 2, reply #1"}}},
		{"a read older than the session's own write", []SessionOp{
			sop(s1, OpCreate, 0, 10, OK, 5),
			sop(s1, OpSetData, 20, 30, OK, 8),
			found(s1, 40, 50, 5),
		}, verdict{
			problem:  []string{"read /s with mzxid 0x5, older than its change at zxid 0x8"},
			evidence: []string{"setData /s [0.020000s, 0.030000s] -> OK, zxid 0x8", "read /s [0.040000s, 0.050000s] -> found, mzxid 0x5"}}},
		{"a read older than another session's write the session had passed", []SessionOp{
			sop(s2, OpSetData, 0, 10, OK, 8),
			with(found(s1, 40, 50, 5), seen(9)),
		}, verdict{problem: []string{"older than its change at zxid 0x8", "zxid 0x9 before the call"}}},
		{"reads go back", []SessionOp{
			found(s1, 0, 10, 8),
			found(s1, 20, 30, 6),
		}, verdict{problem: []string{"mzxid 0x6, older than its change at zxid 0x8"}}},
		{"a node gone with no delete", []SessionOp{
			sop(s1, OpCreate, 0, 10, OK, 5),
			gone(s1, 20, 30),
		}, verdict{problem: []string{"found no /s", "0x5"}, evidence: []string{"create /s", "-> no node"}}},
		{"a node gone, fine only if an unknown delete happened", []SessionOp{
			sop(s1, OpCreate, 0, 10, OK, 5),
			sop(s2, OpDelete, 12, 1000, Unknown, 0),
			gone(s1, 20, 30),
		}, verdict{ok: true}},
		{"a delete before the create excuses nothing", []SessionOp{
			sop(s2, OpDelete, 0, 3, OK, 3),
			sop(s1, OpCreate, 5, 10, OK, 5),
			gone(s1, 20, 30),
		}, verdict{problem: []string{"found no /s"}}},
		{"a node gone after a delete", []SessionOp{
			sop(s1, OpCreate, 0, 10, OK, 5),
			sop(s2, OpDelete, 12, 14, OK, 6),
			gone(s1, 20, 30),
			with(gone(s1, 40, 50), seen(6)),
		}, verdict{ok: true}},
		{"a node seen after its delete was passed", []SessionOp{
			sop(s1, OpCreate, 0, 10, OK, 5),
			sop(s2, OpDelete, 12, 14, OK, 6),
			with(found(s1, 40, 50, 5), seen(6)),
		}, verdict{problem: []string{"older than its change at zxid 0x6"}}},
		{"a write's zxid not newer than seen", []SessionOp{
			found(s1, 0, 10, 9),
			sop(s1, OpSetData, 20, 30, OK, 8),
		}, verdict{problem: []string{"setData of /s was given zxid 0x8", "0x9"}}},
		{"unknown outcomes show nothing", []SessionOp{
			with(sop(s1, OpSetData, 0, 10, Unknown, 0), reply(1, 0, 0)),
			with(found(s1, 20, 30, 5), reply(2, 1, 5)),
		}, verdict{ok: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectResult(t, Sessions(SessionHistory{Ops: tt.ops}), tt.want)
		})
	}
}
