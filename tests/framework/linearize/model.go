package linearize

//go:generate go run golang.org/x/tools/cmd/stringer@v0.30.0 -type=Kind,Status -output=enums_string.go

import (
	"fmt"
	"hash/fnv"

	"github.com/anishathalye/porcupine"
)

// Kind is what an operation does.
type Kind uint8

const (
	// Get is sync, then getData.
	Get Kind = iota
	// Set is setData, conditional on Input.Version unless it is -1.
	Set
	// Create is create with Input.Data.
	Create
)

// Status is an operation's outcome as its client saw it.
type Status uint8

const (
	// Unknown: no definite answer (connection loss, timeout, closed
	// client); a write may or may not have taken effect. The zero value,
	// so an outcome never filled in is unknown.
	Unknown Status = iota
	// OK: the operation took effect (a Get read the node).
	OK
	// NoNode: the node does not exist; nothing changed.
	NoNode
	// NodeExists: a Create found the node; nothing changed.
	NodeExists
	// BadVersion: a conditional Set found another version; nothing
	// changed.
	BadVersion
)

// Input is an operation as called.
type Input struct {
	Kind    Kind
	Key     string // the znode's path
	Data    string // Set, Create: the data written
	Version int32  // Set: the expected data version, or -1 for any
}

// Output is an operation's outcome.
type Output struct {
	Status  Status
	Data    string // Get with OK: the data read
	Version int32  // Get with OK: the version read; Set with OK: the new version
}

// register is the state of one znode: a partition's state in the model.
// It is comparable, so porcupine's default == is its equality.
type register struct {
	exists  bool
	data    string
	version int32
}

// apply returns what in would answer in state s and the state after it.
func (s register) apply(in Input) (Output, register) {
	switch in.Kind {
	case Get:
		if !s.exists {
			return Output{Status: NoNode}, s
		}
		return Output{Status: OK, Data: s.data, Version: s.version}, s
	case Set:
		switch {
		case !s.exists:
			return Output{Status: NoNode}, s
		case in.Version != -1 && in.Version != s.version:
			return Output{Status: BadVersion}, s
		}
		next := register{exists: true, data: in.Data, version: s.version + 1}
		return Output{Status: OK, Version: next.version}, next
	case Create:
		if s.exists {
			return Output{Status: NodeExists}, s
		}
		return Output{Status: OK}, register{exists: true, data: in.Data}
	}
	panic(fmt.Sprintf("linearize: unknown kind %v", in.Kind))
}

// step is the model's step: whether out is a legal outcome of in in state
// s, and the state after it. An unknown outcome is always legal and takes
// the effect the operation would have had; the recorder gives it a return
// time after every other event, so the checker can also order it last,
// where its effect is seen by nobody (it did not take effect).
func step(s register, in Input, out Output) (bool, register) {
	want, next := s.apply(in)
	switch {
	case out.Status == Unknown:
		return true, next
	case out.Status != want.Status:
		return false, s
	case out.Status != OK:
		return true, s
	case in.Kind == Get:
		return out.Data == want.Data && out.Version == want.Version, s
	case in.Kind == Set:
		return out.Version == want.Version, next
	default:
		return true, next
	}
}

// Model is the porcupine model of a set of znodes, each absent at the
// start of the history, partitioned by path.
var Model = porcupine.Model{
	Partition: partition,
	Init:      func() any { return register{} },
	Step: func(state, input, output any) (bool, any) {
		return step(state.(register), input.(Input), output.(Output))
	},
	Hash: func(state any) uint64 {
		s := state.(register)
		h := fnv.New64a()
		fmt.Fprintf(h, "%t %d %s", s.exists, s.version, s.data)
		return h.Sum64()
	},
	DescribeOperation: func(input, output any) string {
		return describe(input.(Input), output.(Output))
	},
	DescribeState: func(state any) string {
		s := state.(register)
		if !s.exists {
			return "absent"
		}
		return fmt.Sprintf("%q v%d", s.data, s.version)
	},
	DescribeOperationMetadata: func(info any) string {
		if info == nil {
			return ""
		}
		return fmt.Sprint(info)
	},
}

// partition splits a history by path, keeping each path's operations in
// their order.
func partition(history []porcupine.Operation) [][]porcupine.Operation {
	var keys []string
	byKey := make(map[string][]porcupine.Operation)
	for _, op := range history {
		k := op.Input.(Input).Key
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], op)
	}
	parts := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, byKey[k])
	}
	return parts
}

func describe(in Input, out Output) string {
	var call string
	switch in.Kind {
	case Get:
		call = "get " + in.Key
	case Set:
		call = fmt.Sprintf("set %s %q", in.Key, in.Data)
		if in.Version != -1 {
			call += fmt.Sprintf(" if v%d", in.Version)
		}
	case Create:
		call = fmt.Sprintf("create %s %q", in.Key, in.Data)
	}
	var res string
	switch {
	case out.Status == Unknown:
		res = "?"
	case out.Status != OK:
		res = out.Status.String()
	case in.Kind == Get:
		res = fmt.Sprintf("%q v%d", out.Data, out.Version)
	case in.Kind == Set:
		res = fmt.Sprintf("v%d", out.Version)
	default:
		res = "OK"
	}
	return call + " -> " + res
}
