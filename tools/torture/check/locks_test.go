package check

import "testing"

func hold(client string, token, acquired, released int64) LockHold {
	return LockHold{Client: client, Token: token, Acquired: ms(acquired), Released: ms(released)}
}

func fenced(client string, token int64, version int32, call, ret int64, out Outcome) FencedWrite {
	return FencedWrite{Client: client, Token: token, Version: version, Call: ms(call), Return: ms(ret), Outcome: out}
}

func TestLocks(t *testing.T) {
	tests := []struct {
		name   string
		holds  []LockHold
		writes []FencedWrite
		want   verdict
	}{
		{"good", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 110, 200), hold("c", 30, 210, 0)}, []FencedWrite{
			fenced("a", 10, 0, 10, 20, OK),
			fenced("b", 20, 1, 120, 130, OK),
			fenced("c", 30, 1, 220, 230, Failed), // a stale read of the version
			fenced("c", 30, 2, 240, 250, OK),
		}, verdict{ok: true}},
		{"two overlapping fenced writes", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 50, 200)}, []FencedWrite{
			fenced("a", 10, 0, 60, 70, OK),
			fenced("b", 20, 1, 80, 90, OK),
		}, verdict{
			problem:  []string{"a's write with token 0xa succeeded after b had acquired the lock with token 0x14"},
			evidence: []string{"a holds the lock with token 0xa", "b holds the lock with token 0x14 [0.050000s", "a fenced write of token 0xa if version 0", "b fenced write of token 0x14 if version 1"}}},
		{"an earlier holder's write before the later acquired", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 50, 200)}, []FencedWrite{
			fenced("a", 10, 0, 30, 40, OK),
			fenced("b", 20, 1, 80, 90, OK),
		}, verdict{ok: true}},
		{"an overlapping write of unknown outcome does not count", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 50, 200)}, []FencedWrite{
			fenced("a", 10, 0, 60, 70, Unknown),
			fenced("b", 20, 0, 80, 90, OK),
		}, verdict{ok: true}},
		{"a lower token after a higher one", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 110, 200)}, []FencedWrite{
			fenced("b", 20, 0, 120, 125, OK),
			fenced("a", 10, 1, 130, 140, OK), // after its holding: not an exclusion case
		}, verdict{problem: []string{"accepted token 0xa from a after it had accepted the larger token 0x14 from b"}}},
		{"two writes on one version", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 110, 200)}, []FencedWrite{
			fenced("a", 10, 0, 10, 20, OK),
			fenced("b", 20, 0, 120, 130, OK),
		}, verdict{problem: []string{"two writes conditional on fence version 0 both succeeded"}}},
		{"a hole in the versions", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 110, 200)}, []FencedWrite{
			fenced("a", 10, 0, 10, 20, OK),
			fenced("b", 20, 2, 120, 130, OK),
		}, verdict{problem: []string{"fence version 1"}, evidence: []string{"if version 0", "if version 2"}}},
		{"a hole fine only if an unknown write happened", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 110, 200), hold("c", 30, 210, 300)}, []FencedWrite{
			fenced("a", 10, 0, 10, 20, OK),
			fenced("b", 20, 1, 120, 130, Unknown),
			fenced("c", 30, 2, 220, 230, OK),
		}, verdict{ok: true}},
		{"the same hole after a definite failure", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 110, 200), hold("c", 30, 210, 300)}, []FencedWrite{
			fenced("a", 10, 0, 10, 20, OK),
			fenced("b", 20, 1, 120, 130, Failed),
			fenced("c", 30, 2, 220, 230, OK),
		}, verdict{problem: []string{"fence version 1"}}},
		{"tokens going down along the versions", []LockHold{hold("a", 10, 0, 12), hold("b", 20, 13, 200)}, []FencedWrite{
			fenced("b", 20, 0, 14, 20, OK),
			fenced("a", 10, 1, 15, 25, OK), // after its holding, concurrent with b's: only the versions tell
		}, verdict{problem: []string{"accepted token 0xa at version 1 after token 0x14 at version 0"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectResult(t, Locks(LockHistory{Holds: tt.holds, Writes: tt.writes}), tt.want)
		})
	}
}

func TestLocksLiveness(t *testing.T) {
	tests := []struct {
		name  string
		holds []LockHold
		end   int64
		want  verdict
	}{
		{"handoffs within the bound", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 150, 200), hold("c", 30, 240, 0)}, 1000, verdict{ok: true}},
		{"overlapping holdings cover each other", []LockHold{hold("a", 10, 0, 500), hold("b", 20, 100, 150), hold("c", 30, 520, 900)}, 950, verdict{ok: true}},
		{"a stall between holdings", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 400, 500), hold("c", 30, 520, 600)}, 650, verdict{
			problem:  []string{"nobody held the lock from 0.100000s to 0.400000s (0.300000s)"},
			evidence: []string{"b holds the lock with token 0x14 [0.400000s"}}},
		{"a stall to the end", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 150, 200)}, 900, verdict{
			problem:  []string{"from 0.200000s to the end of the run at 0.900000s"},
			evidence: []string{"b holds the lock with token 0x14"}}},
		{"held to the end", []LockHold{hold("a", 10, 0, 100), hold("b", 20, 150, 0)}, 900, verdict{ok: true}},
		{"never held", nil, 900, verdict{problem: []string{"nobody held the lock in 0.900000s of trying"}}},
		{"never held in a short run", nil, 100, verdict{ok: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectResult(t, Locks(LockHistory{Holds: tt.holds, End: ms(tt.end), MaxGap: ms(200)}), tt.want)
		})
	}
}
