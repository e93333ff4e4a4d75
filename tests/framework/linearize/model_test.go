package linearize

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// An event of a scripted history: a call (in set) or the return of the
// client's pending operation (out set).
type event struct {
	client int
	in     *Input
	out    *Output
}

func call(client int, in Input) event  { return event{client: client, in: &in} }
func ret(client int, out Output) event { return event{client: client, out: &out} }
func lost(client int) event            { return ret(client, Output{Status: Unknown}) }
func get(key string) Input             { return Input{Kind: Get, Key: key} }
func set(key, data string) Input       { return Input{Kind: Set, Key: key, Data: data, Version: -1} }
func create(key, data string) Input    { return Input{Kind: Create, Key: key, Data: data} }
func read(data string, v int32) Output { return Output{Status: OK, Data: data, Version: v} }
func setTo(v int32) Output             { return Output{Status: OK, Version: v} }
func status(s Status) Output           { return Output{Status: s} }
func setIf(key, data string, v int32) Input {
	return Input{Kind: Set, Key: key, Data: data, Version: v}
}

// record plays a script through a Recorder whose clock advances by one
// at each event, so the script's order is the history's real-time order.
func record(t *testing.T, script []event) []porcupine.Operation {
	t.Helper()
	r := NewRecorder()
	var clock int64
	r.clock = func() int64 { clock++; return clock }
	pending := make(map[int]*Op)
	for i, e := range script {
		switch {
		case e.in != nil:
			if pending[e.client] != nil {
				t.Fatalf("event %d: client %d calls with an operation pending", i, e.client)
			}
			pending[e.client] = r.Begin(e.client, *e.in)
		default:
			op := pending[e.client]
			if op == nil {
				t.Fatalf("event %d: client %d returns with nothing pending", i, e.client)
			}
			op.End(*e.out, "")
			delete(pending, e.client)
		}
	}
	return r.History()
}

func TestModel(t *testing.T) {
	const a, b = "/a", "/b"
	tests := []struct {
		name   string
		script []event
		want   bool // linearizable
	}{
		// Linearizable histories.
		{"sequential", []event{
			call(0, get(a)), ret(0, status(NoNode)),
			call(0, set(a, "x")), ret(0, status(NoNode)),
			call(0, create(a, "x")), ret(0, status(OK)),
			call(1, create(a, "y")), ret(1, status(NodeExists)),
			call(1, get(a)), ret(1, read("x", 0)),
			call(1, set(a, "y")), ret(1, setTo(1)),
			call(0, setIf(a, "z", 0)), ret(0, status(BadVersion)),
			call(0, setIf(a, "z", 1)), ret(0, setTo(2)),
			call(0, get(a)), ret(0, read("z", 2)),
		}, true},
		{"concurrent read sees the old value", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")),
			call(1, get(a)), ret(1, read("x", 0)),
			ret(0, setTo(1)),
		}, true},
		{"concurrent read sees the new value", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")),
			call(1, get(a)), ret(1, read("y", 1)),
			ret(0, setTo(1)),
		}, true},
		{"concurrent writes in either order", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")), call(1, set(a, "z")),
			ret(0, setTo(2)), ret(1, setTo(1)),
			call(2, get(a)), ret(2, read("y", 2)),
		}, true},
		{"unknown write never seen", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")), lost(0),
			call(1, get(a)), ret(1, read("x", 0)),
			call(0, set(a, "z")), ret(0, setTo(1)),
			call(1, get(a)), ret(1, read("z", 1)),
		}, true},
		{"unknown write seen later", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")), lost(0),
			call(1, get(a)), ret(1, read("x", 0)),
			call(1, get(a)), ret(1, read("y", 1)),
		}, true},
		// The lost write commits after a later acknowledged write: only a
		// return time at the end of the history allows that (see
		// TestUnknownReturnsAtEnd).
		{"unknown write takes effect after a later write", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")), lost(0),
			call(1, set(a, "z")), ret(1, setTo(1)),
			call(1, get(a)), ret(1, read("y", 2)),
		}, true},
		{"unknown create seen", []event{
			call(0, create(a, "x")), lost(0),
			call(1, create(a, "y")), ret(1, status(NodeExists)),
			call(1, get(a)), ret(1, read("x", 0)),
		}, true},
		{"unknown read says nothing", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(1, get(a)), lost(1),
			call(1, get(a)), ret(1, read("x", 0)),
		}, true},
		{"paths are independent", []event{
			call(0, create(a, "x")), call(1, create(b, "y")),
			ret(0, status(OK)), ret(1, status(OK)),
			call(0, get(b)), ret(0, read("y", 0)),
			call(1, get(a)), ret(1, read("x", 0)),
		}, true},

		// Histories that are not linearizable.
		{"stale read after an acknowledged write", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")), ret(0, setTo(1)),
			call(1, get(a)), ret(1, read("x", 0)),
		}, false},
		{"stale read, the write acknowledged while the read ran", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")), ret(0, setTo(1)),
			call(1, get(a)), ret(1, read("y", 1)),
			call(2, get(a)), ret(2, read("x", 0)),
		}, false},
		{"acknowledged create lost", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(1, get(a)), ret(1, status(NoNode)),
		}, false},
		{"acknowledged write lost", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")), ret(0, setTo(1)),
			call(1, set(a, "z")), ret(1, setTo(2)),
			call(1, get(a)), ret(1, read("z", 1)),
		}, false},
		{"read of a value never written", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(1, get(a)), ret(1, read("w", 0)),
		}, false},
		{"read of a write not yet called", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(1, get(a)), ret(1, read("y", 1)),
			call(0, set(a, "y")), lost(0),
		}, false},
		{"unknown write seen, then unseen", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")), lost(0),
			call(1, get(a)), ret(1, read("y", 1)),
			call(1, get(a)), ret(1, read("x", 0)),
		}, false},
		{"wrong version read", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(1, get(a)), ret(1, read("x", 1)),
		}, false},
		{"wrong version written", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")), ret(0, setTo(2)),
		}, false},
		{"conditional write refused at its version", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, setIf(a, "y", 0)), ret(0, status(BadVersion)),
		}, false},
		{"conditional write done at another version", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(0, set(a, "y")), ret(0, setTo(1)),
			call(1, setIf(a, "z", 0)), ret(1, setTo(2)),
		}, false},
		{"two creates succeed", []event{
			call(0, create(a, "x")), ret(0, status(OK)),
			call(1, create(a, "y")), ret(1, status(OK)),
		}, false},
		{"set of a missing node succeeds", []event{
			call(0, set(a, "x")), ret(0, setTo(1)),
		}, false},
		{"one bad path among good ones", []event{
			call(0, create(a, "x")), call(1, create(b, "y")),
			ret(0, status(OK)), ret(1, status(OK)),
			call(0, set(b, "z")), ret(0, setTo(1)),
			call(1, get(a)), ret(1, read("x", 0)),
			call(1, get(b)), ret(1, read("y", 0)),
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := record(t, tt.script)
			got := Check(h, 0)
			if want := map[bool]porcupine.CheckResult{true: porcupine.Ok, false: porcupine.Illegal}[tt.want]; got != want {
				t.Fatalf("Check = %v, want %v", got, want)
			}
		})
	}
}

// TestUnknownReturnsAtEnd: the Recorder gives a lost write a return time
// after every event. Had it recorded the loss as the write's return, a
// write that commits after a later acknowledged write (a proposal still in
// the log when its client gave up) would make a correct system look
// wrong; had it left the write out, reading its data would.
func TestUnknownReturnsAtEnd(t *testing.T) {
	script := []event{
		call(0, create("/a", "x")), ret(0, status(OK)),
		call(0, set("/a", "y")), lost(0),
		call(1, set("/a", "z")), ret(1, setTo(1)),
		call(1, get("/a")), ret(1, read("y", 2)),
	}
	h := record(t, script)
	var end int64
	for _, op := range h {
		end = max(end, op.Call)
	}
	for _, op := range h {
		if op.Output.(Output).Status == Unknown && op.Return <= end {
			t.Fatalf("unknown %v returns at %d, not after the last call (%d)", op.Input, op.Return, end)
		}
	}
	if got := Check(h, 0); got != porcupine.Ok {
		t.Fatalf("Check = %v, want Ok", got)
	}
	// The mistakes, made by hand, are caught.
	atLoss := append([]porcupine.Operation(nil), h...)
	for i, op := range atLoss {
		if op.Output.(Output).Status == Unknown {
			atLoss[i].Return = op.Call + 1
		}
	}
	if got := Check(atLoss, 0); got != porcupine.Illegal {
		t.Errorf("with the loss as the return: Check = %v, want Illegal", got)
	}
	var dropped []porcupine.Operation
	for _, op := range h {
		if op.Output.(Output).Status != Unknown {
			dropped = append(dropped, op)
		}
	}
	if got := Check(dropped, 0); got != porcupine.Illegal {
		t.Errorf("with the lost write left out: Check = %v, want Illegal", got)
	}
}

// A read that answers an older version than a write acknowledged before
// it was called is counted stale, and only it: without the reads the
// history is linearizable.
func TestStaleReads(t *testing.T) {
	const a = "/a"
	h := record(t, []event{
		call(0, create(a, "x")), ret(0, setTo(0)),
		call(1, get(a)), ret(1, read("x", 0)), // fresh
		call(0, set(a, "y")), ret(0, setTo(1)),
		call(1, get(a)), ret(1, read("x", 0)), // stale: v1 was acknowledged
		call(2, get("/b")), ret(2, status(NoNode)),
		call(2, get(a)), call(0, set(a, "z")), ret(2, read("x", 0)), ret(0, setTo(2)), // stale too
	})
	if got := StaleReads(h); got != 2 {
		t.Errorf("StaleReads = %d, want 2", got)
	}
	if res := Check(h, 0); res != porcupine.Illegal {
		t.Errorf("Check(history) = %v, want Illegal", res)
	}
	if res := Check(Writes(h), 0); res != porcupine.Ok {
		t.Errorf("Check(Writes(history)) = %v, want Ok", res)
	}
	fresh := record(t, []event{
		call(0, create(a, "x")), ret(0, setTo(0)),
		call(1, get(a)), call(0, set(a, "y")), ret(1, read("x", 0)), ret(0, setTo(1)),
		call(1, get(a)), ret(1, read("y", 1)),
	})
	if got := StaleReads(fresh); got != 0 {
		t.Errorf("StaleReads(fresh) = %d, want 0", got)
	}
}
