package check

import (
	"testing"
	"time"
)

const (
	owner    = int64(0x100)
	observer = int64(0x200)
	rival    = int64(0x300)
)

func ephC(session int64, call, ret int64, out Outcome) EphemeralCreate {
	return EphemeralCreate{Client: "owner", Session: session, Path: "/e", Call: ms(call), Return: ms(ret), Outcome: out}
}

func ephD(session int64, call, ret int64, out Outcome) EphemeralDelete {
	return EphemeralDelete{Client: "deleter", Session: session, Path: "/e", Call: ms(call), Return: ms(ret), Outcome: out}
}

func ephEnd(kind EndKind, at, lastOK int64) SessionEnd {
	return SessionEnd{Client: "owner", Session: owner, Kind: kind, At: ms(at), LastOK: ms(lastOK)}
}

// ephObs is an observation of /e; owner 0 means not known.
func ephObs(call, ret int64, exists bool, own int64) Observation {
	return Observation{Client: "observer", Session: observer, Path: "/e", Call: ms(call), Return: ms(ret), Exists: exists, Owner: own}
}

func TestEphemerals(t *testing.T) {
	opts := EphemeralOptions{SessionTimeout: 50 * time.Millisecond, Bound: 10 * time.Millisecond}
	tests := []struct {
		name string
		h    EphemeralHistory
		want verdict
	}{
		{"good", EphemeralHistory{
			Creates: []EphemeralCreate{ephC(owner, 0, 10, OK)},
			Ends:    []SessionEnd{ephEnd(SessionClosed, 100, 90)},
			Observations: []Observation{
				ephObs(5, 8, false, 0), // before the create returned
				ephObs(20, 30, true, owner),
				ephObs(85, 95, true, 0),
				ephObs(95, 105, true, 0),   // concurrent with the close
				ephObs(120, 130, false, 0), // after the close
			},
		}, verdict{ok: true}},
		{"missing while the owner lives", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 0, 10, OK)},
			Ends:         []SessionEnd{ephEnd(SessionClosed, 100, 90)},
			Observations: []Observation{ephObs(20, 30, false, 0)},
		}, verdict{
			problem:  []string{"/e", "0x100", "missing"},
			evidence: []string{"owner (session 0x100) create-ephemeral /e", "observer (session 0x200) sync+exists /e [0.020000s, 0.030000s] -> missing", "session 0x100 was closed at 0.100000s"}}},
		{"missing while the owner lives, shown by its own later request", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 0, 10, OK), {Client: "owner", Session: owner, Path: "/f", Call: ms(60), Return: ms(70), Outcome: OK}},
			Observations: []Observation{ephObs(20, 30, false, 0)},
		}, verdict{problem: []string{"missing"}, evidence: []string{"answered a request called at 0.060000s"}}},
		{"missing fine only if an unknown delete happened", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 0, 10, OK)},
			Deletes:      []EphemeralDelete{ephD(owner, 12, 14, Unknown)},
			Ends:         []SessionEnd{ephEnd(SessionClosed, 100, 90)},
			Observations: []Observation{ephObs(20, 30, false, 0)},
		}, verdict{ok: true}},
		{"a failed delete excuses nothing", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 0, 10, OK)},
			Deletes:      []EphemeralDelete{ephD(rival, 12, 14, Failed)},
			Ends:         []SessionEnd{ephEnd(SessionClosed, 100, 90)},
			Observations: []Observation{ephObs(20, 30, false, 0)},
		}, verdict{problem: []string{"missing"}}},
		{"a delete done before the create excuses nothing", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 10, 20, OK)},
			Deletes:      []EphemeralDelete{ephD(rival, 0, 5, OK)},
			Ends:         []SessionEnd{ephEnd(SessionClosed, 100, 90)},
			Observations: []Observation{ephObs(30, 40, false, 0)},
		}, verdict{problem: []string{"missing"}}},
		{"a create of unknown outcome promises nothing", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 0, 10, Unknown)},
			Ends:         []SessionEnd{ephEnd(SessionClosed, 100, 90)},
			Observations: []Observation{ephObs(20, 30, false, 0)},
		}, verdict{ok: true}},
		{"still there after the close, owner named", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 0, 10, OK)},
			Ends:         []SessionEnd{ephEnd(SessionClosed, 100, 90)},
			Observations: []Observation{ephObs(111, 120, true, owner)},
		}, verdict{
			problem:  []string{"/e", "0x100", "still existed", "was closed at 0.100000s"},
			evidence: []string{"create-ephemeral /e", "-> exists, owner 0x100", "was closed at 0.100000s"}}},
		{"still there after the close, owner not named", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 0, 10, OK)},
			Ends:         []SessionEnd{ephEnd(SessionClosed, 100, 90)},
			Observations: []Observation{ephObs(111, 120, true, 0)},
		}, verdict{problem: []string{"still existed"}}},
		{"a node of the same path made by another session", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 0, 10, OK), ephC(rival, 105, 108, Unknown)},
			Ends:         []SessionEnd{ephEnd(SessionClosed, 100, 90)},
			Observations: []Observation{ephObs(111, 120, true, 0), ephObs(121, 130, true, rival)},
		}, verdict{ok: true}},
		{"expiry: gone within the session timeout", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 0, 10, OK)},
			Ends:         []SessionEnd{ephEnd(SessionExpired, 100, 40)},
			Observations: []Observation{ephObs(150, 155, true, owner), ephObs(170, 175, false, 0)},
		}, verdict{ok: true}},
		{"expiry: still there after the session timeout", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 0, 10, OK)},
			Ends:         []SessionEnd{ephEnd(SessionExpired, 100, 40)},
			Observations: []Observation{ephObs(161, 165, true, owner)},
		}, verdict{problem: []string{"expired at 0.100000s", "deadline 0.160000s"}}},
		{"an unknown create of the dead session must be gone too", EphemeralHistory{
			Creates:      []EphemeralCreate{ephC(owner, 0, 10, Unknown)},
			Ends:         []SessionEnd{ephEnd(SessionClosed, 100, 90)},
			Observations: []Observation{ephObs(111, 120, true, 0)},
		}, verdict{problem: []string{"still existed"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectResult(t, Ephemerals(tt.h, opts), tt.want)
		})
	}
}
