package tree

import (
	"testing"

	"github.com/zkgo/zkgo/proto"
)

// TestClaimRefusesOlderClaims: a transaction proposed for a claim older
// than the session's newest (the client resumed its session elsewhere
// since) is refused with SessionMoved and changes nothing but lastZxid;
// one for the newest claim, or without a claim, applies.
func TestClaimRefusesOlderClaims(t *testing.T) {
	const sess = 0x55
	tr := New()
	tr.Apply(3, &Txn{Op: proto.OpCreateSession, Session: sess, Req: &CreateSessionReq{Timeout: 5000, Passwd: []byte("pw")}})
	if c := tr.Session(sess).Claim; c != 3 {
		t.Fatalf("claim after createSession = %d, want its zxid 3", c)
	}
	create := func(zxid, claim int64, path string) Result {
		return tr.Apply(zxid, &Txn{Op: proto.OpCreate, Session: sess, Claim: claim,
			Req: &proto.CreateRequest{Path: path, ACL: openACL, Flags: proto.ModeEphemeral}})
	}
	if r := create(4, 3, "/a"); r.Err != proto.ErrOk {
		t.Fatalf("create for the creating claim: %v", r.Err)
	}
	tr.ClaimSession(sess, 6) // the client resumed the session; the move is at log index 6
	tr.ClaimSession(sess, 5) // claims never go back
	tr.ClaimSession(0x99, 7) // an unknown session: nothing
	if c := tr.Session(sess).Claim; c != 6 {
		t.Fatalf("claim after moves = %d, want 6", c)
	}
	before := dumpState(tr, false)
	if r := create(8, 3, "/late"); r.Err != proto.ErrSessionMoved || len(r.Events) != 0 {
		t.Fatalf("create for an older claim: %v, %d events; want SessionMoved and none", r.Err, len(r.Events))
	}
	multi := &proto.MultiRequest{Ops: []proto.MultiOp{{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/a", Version: -1}}}}
	if r := tr.Apply(9, &Txn{Op: proto.OpMulti, Session: sess, Claim: 4, Req: multi}); r.Err != proto.ErrSessionMoved {
		t.Fatalf("multi for an older claim: %v", r.Err)
	}
	if r := tr.Apply(10, &Txn{Op: proto.OpCloseSession, Session: sess, Claim: 3}); r.Err != proto.ErrSessionMoved {
		t.Fatalf("closeSession for an older claim: %v", r.Err)
	}
	if after := dumpState(tr, false); after != before || tr.Session(sess) == nil {
		t.Fatalf("refused transactions changed the tree:\n%s\nvs\n%s", before, after)
	}
	if tr.LastZxid() != 10 {
		t.Fatalf("lastZxid %d, want 10 (refused transactions take their zxid)", tr.LastZxid())
	}
	if r := create(11, 6, "/b"); r.Err != proto.ErrOk {
		t.Fatalf("create for the newest claim: %v", r.Err)
	}
	if r := create(12, 0, "/c"); r.Err != proto.ErrOk {
		t.Fatalf("create without a claim: %v", r.Err)
	}
	// The server's own transactions carry no claim.
	if r := tr.Apply(13, &Txn{Op: proto.OpCloseSession, Session: sess}); r.Err != proto.ErrOk || tr.Session(sess) != nil {
		t.Fatalf("expiry closeSession: %v", r.Err)
	}
}
