package check

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/zkgo/zkgo/tests/framework/linearize"
)

// RegisterOptions configure Registers.
type RegisterOptions struct {
	// Timeout bounds porcupine's search (0: no limit). A search that runs
	// out is inconclusive: the Result is not OK and says so.
	Timeout time.Duration
	// VisualizeDir, if set, is the directory where a history that is not
	// linearizable gets porcupine's visualization written, as a new
	// "linearize-*.html" file named in the Evidence. The directory is
	// created if needed.
	VisualizeDir string
}

// evidenceTimeout bounds the second, verbose search that finds the
// partial linearizations shown as evidence: on a history that is not
// linearizable it can take much longer than the check itself.
const evidenceTimeout = 10 * time.Second

// maxShown caps the operations listed as evidence: a path with at most
// that many operations has them all listed, a longer one only those that
// cannot come next.
const maxShown = 12

// Registers checks that the register workload's history (from the
// linearize.Recorder of Recorder.Registers, via History) is linearizable,
// with the model of package tests/framework/linearize: one register per znode
// path; sync+getData reads, setData and create writes; unknown writes may
// take effect at any point after their call or never.
//
// On a violation the Evidence names the path whose operations cannot be
// linearized, the state the longest linearization found leaves it in, and
// the operations none of which can come next (the smallest history that
// shows the violation, given that prefix), and the visualization file when
// o.VisualizeDir is set.
func Registers(history []porcupine.Operation, o RegisterOptions) Result {
	res := Result{Name: "registers", OK: true, Checked: len(history)}
	unknown := 0
	for _, op := range history {
		if op.Output.(linearize.Output).Status == linearize.Unknown {
			unknown++
		}
	}
	res.note("%d operations, %d writes of unknown outcome (may have happened at any point after their call, or never)", len(history), unknown)
	switch linearize.Check(history, o.Timeout) {
	case porcupine.Ok:
		return res
	case porcupine.Unknown:
		res.fail(fmt.Sprintf("inconclusive: the linearizability search of %d operations ran out of its %v (no violation found)", len(history), o.Timeout))
		return res
	}
	_, info := porcupine.CheckOperationsVerbose(linearize.Model, history, evidenceTimeout)
	path, evidence := frontier(history, info)
	res.fail(fmt.Sprintf("the operations on %s are not linearizable", path), evidence...)
	if o.VisualizeDir != "" {
		file, err := visualize(info, o.VisualizeDir)
		if err != nil {
			res.Evidence = append(res.Evidence, "visualization not written: "+err.Error())
		} else {
			res.Evidence = append(res.Evidence, "visualization: "+file)
		}
	}
	return res
}

// frontier returns the path of the first partition of history that info
// found no complete linearization of, and the evidence for it: the state
// after the longest partial linearization, then the operations left over
// that could have come next (called before any left-over one returned).
func frontier(history []porcupine.Operation, info porcupine.LinearizationInfo) (string, []string) {
	parts := linearize.Model.Partition(history)
	partials := info.PartialLinearizations()
	for p, part := range parts {
		var longest []int
		if p < len(partials) {
			for _, l := range partials[p] {
				if len(l) > len(longest) {
					longest = l
				}
			}
		}
		if len(longest) == len(part) {
			continue
		}
		key := part[0].Input.(linearize.Input).Key
		state := linearize.Model.Init()
		for _, id := range longest {
			_, state = linearize.Model.Step(state, part[id].Input, part[id].Output)
		}
		done := make([]bool, len(part))
		for _, id := range longest {
			done[id] = true
		}
		minRet := int64(math.MaxInt64)
		for i, op := range part {
			if !done[i] {
				minRet = min(minRet, op.Return)
			}
		}
		// The frontier: left-over operations called before any left-over
		// one returned, each of which would have to come next.
		next := make([]bool, len(part))
		for i, op := range part {
			next[i] = !done[i] && op.Call <= minRet
		}
		shown := make([]int, 0, len(part))
		for i := range part {
			if next[i] || len(part) <= maxShown {
				shown = append(shown, i)
			}
		}
		slices.SortStableFunc(shown, func(a, b int) int { return cmp.Compare(part[a].Call, part[b].Call) })
		ev := []string{fmt.Sprintf("%s: %d operations; the longest linearization found takes %d and leaves the node %s; none of those marked * can come next:",
			key, len(part), len(longest), linearize.Model.DescribeState(state))}
		for n, i := range shown {
			if n == maxShown {
				ev = append(ev, fmt.Sprintf("... and %d more", len(shown)-maxShown))
				break
			}
			mark := "  "
			if next[i] {
				mark = "* "
			}
			ev = append(ev, mark+describeRegisterOp(part[i]))
		}
		return key, ev
	}
	return "?", []string{"porcupine found no partition without a complete linearization on the second search (it ran out of time)"}
}

// describeRegisterOp formats one register operation on one line.
func describeRegisterOp(op porcupine.Operation) string {
	out := op.Output.(linearize.Output)
	ret := ts(op.Return)
	if out.Status == linearize.Unknown {
		ret = "?"
	}
	s := fmt.Sprintf("client %d [%s, %s] %s", op.ClientId, ts(op.Call), ret, linearize.Model.DescribeOperation(op.Input, op.Output))
	if op.Metadata != nil {
		s += fmt.Sprintf(" (%v)", op.Metadata)
	}
	return s
}

// visualize writes porcupine's visualization of info to a new file in dir
// and returns its path.
func visualize(info porcupine.LinearizationInfo, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "linearize-*.html")
	if err != nil {
		return "", err
	}
	if err := porcupine.Visualize(linearize.Model, info, f); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}
