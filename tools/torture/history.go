package torture

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/anishathalye/porcupine"

	"github.com/zkgo/zkgo/tests/framework/linearize"
)

// registerOp is one line of registers.jsonl: a register operation as the
// checker gets it (times in nanoseconds; an unknown write returns at the
// end of the history).
type registerOp struct {
	Client int              `json:"c"`
	Call   int64            `json:"call"`
	Return int64            `json:"ret"`
	In     linearize.Input  `json:"in"`
	Out    linearize.Output `json:"out"`
}

// writeRegisters saves the register history into path, so that a
// failure can be checked again, and looked at, without the run.
func writeRegisters(path string, h []porcupine.Operation) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, op := range h {
		if err := enc.Encode(registerOp{Client: op.ClientId, Call: op.Call, Return: op.Return,
			In: op.Input.(linearize.Input), Out: op.Output.(linearize.Output)}); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readRegisters loads a history saved by writeRegisters.
func readRegisters(path string) ([]porcupine.Operation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var h []porcupine.Operation
	dec := json.NewDecoder(bufio.NewReader(f))
	for dec.More() {
		var op registerOp
		if err := dec.Decode(&op); err != nil {
			return nil, fmt.Errorf("%s: operation %d: %w", path, len(h)+1, err)
		}
		h = append(h, porcupine.Operation{ClientId: op.Client, Call: op.Call, Return: op.Return, Input: op.In, Output: op.Out})
	}
	return h, nil
}
