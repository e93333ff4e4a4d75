package check

import (
	"os"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/zkgo/zkgo/tests/framework/linearize"
)

// regOp builds a register operation; an unknown outcome returns at end,
// as linearize.Recorder.History gives it.
func regOp(client int, in linearize.Input, out linearize.Output, call, ret int64) porcupine.Operation {
	if out.Status == linearize.Unknown {
		ret = ms(1000)
	}
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: ms(call), Return: ms(ret)}
}

func create(key, data string) linearize.Input {
	return linearize.Input{Kind: linearize.Create, Key: key, Data: data}
}
func set(key, data string) linearize.Input {
	return linearize.Input{Kind: linearize.Set, Key: key, Data: data, Version: -1}
}
func get(key string) linearize.Input { return linearize.Input{Kind: linearize.Get, Key: key} }

func status(s linearize.Status) linearize.Output { return linearize.Output{Status: s} }
func setTo(v int32) linearize.Output             { return linearize.Output{Status: linearize.OK, Version: v} }
func read(data string, v int32) linearize.Output {
	return linearize.Output{Status: linearize.OK, Data: data, Version: v}
}

func TestRegisters(t *testing.T) {
	base := []porcupine.Operation{
		regOp(0, create("/r", "a"), status(linearize.OK), 0, 10),
		regOp(1, create("/other", "x"), status(linearize.OK), 0, 10),
	}
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want verdict
	}{
		{"good", []porcupine.Operation{
			regOp(0, set("/r", "b"), setTo(1), 20, 30),
			regOp(1, get("/r"), read("b", 1), 40, 50),
		}, verdict{ok: true}},
		{"concurrent read may see either", []porcupine.Operation{
			regOp(0, set("/r", "b"), setTo(1), 20, 60),
			regOp(1, get("/r"), read("a", 0), 30, 40),
		}, verdict{ok: true}},
		{"forged read", []porcupine.Operation{
			regOp(0, set("/r", "b"), setTo(1), 20, 30),
			regOp(1, get("/r"), read("c", 1), 40, 50),
		}, verdict{problem: []string{"/r", "not linearizable"}, evidence: []string{`get /r -> "c" v1`, `/r: 3 operations`}}},
		{"stale read after the write returned", []porcupine.Operation{
			regOp(0, set("/r", "b"), setTo(1), 20, 30),
			regOp(1, get("/r"), read("a", 0), 40, 50),
		}, verdict{problem: []string{"/r"}, evidence: []string{`get /r -> "a" v0`}}},
		{"a read fine only if an unknown write happened", []porcupine.Operation{
			regOp(0, set("/r", "b"), status(linearize.Unknown), 20, 0),
			regOp(1, get("/r"), read("b", 1), 40, 50),
		}, verdict{ok: true}},
		{"an unknown write may also not have happened", []porcupine.Operation{
			regOp(0, set("/r", "b"), status(linearize.Unknown), 20, 0),
			regOp(1, get("/r"), read("a", 0), 40, 50),
		}, verdict{ok: true}},
		{"the same read after a definite failure", []porcupine.Operation{
			regOp(0, linearize.Input{Kind: linearize.Set, Key: "/r", Data: "b", Version: 7}, status(linearize.BadVersion), 20, 30),
			regOp(1, get("/r"), read("b", 1), 40, 50),
		}, verdict{problem: []string{"/r"}, evidence: []string{`get /r -> "b" v1`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Registers(append(append([]porcupine.Operation{}, base...), tt.ops...), RegisterOptions{})
			expectResult(t, got, tt.want)
			if got.Name != "registers" || got.Checked != len(base)+len(tt.ops) {
				t.Errorf("name %q checked %d", got.Name, got.Checked)
			}
		})
	}
}

// TestRegistersVisualization: a failing history's visualization is
// written into the directory asked for and named in the evidence.
func TestRegistersVisualization(t *testing.T) {
	dir := t.TempDir() + "/vis"
	got := Registers([]porcupine.Operation{
		regOp(0, create("/r", "a"), status(linearize.OK), 0, 10),
		regOp(1, get("/r"), read("z", 0), 20, 30),
	}, RegisterOptions{VisualizeDir: dir})
	if got.OK {
		t.Fatal("forged read passed")
	}
	last := got.Evidence[len(got.Evidence)-1]
	file, ok := strings.CutPrefix(last, "visualization: ")
	if !ok || !strings.HasPrefix(file, dir) {
		t.Fatalf("last evidence line %q does not name a file in %s", last, dir)
	}
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), "<html") {
		t.Fatalf("visualization %s: %v (%d bytes)", file, err, len(b))
	}
}

// TestRegistersFromRecorder: the register history recorded through
// Recorder.Registers checks, with its unknown write counted.
func TestRegistersFromRecorder(t *testing.T) {
	r := NewRecorder(timeNow())
	lr := r.Registers()
	lr.Begin(0, create("/r", "a")).End(status(linearize.OK), "")
	lr.Begin(1, set("/r", "b")) // never ended: unknown
	lr.Begin(0, get("/r")).End(read("b", 1), "")
	got := Registers(r.History().Registers, RegisterOptions{})
	expectResult(t, got, verdict{ok: true})
	if !strings.Contains(strings.Join(got.Notes, " "), "1 writes of unknown outcome") {
		t.Errorf("notes %q do not count the unknown write", got.Notes)
	}
}
