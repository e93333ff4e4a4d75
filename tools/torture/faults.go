package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// injector applies the schedule's faults to an ensemble. It runs on the
// schedule's goroutine only.
type injector struct {
	e       *ensemble
	clients int
	rng     *rand.Rand // for flapping; seeded from the schedule
	event   func(format string, args ...any)
	note    func(format string, args ...any)
	// freeze catches the next client to reach a pause point (a lock
	// holder about to make a fenced write) and returns what wakes it, or
	// why none came.
	freeze func(ctx context.Context) (client int, resume func(), err error)
}

// minorityOf returns the members a partition fault cut off from the
// majority (none for other kinds), as apply chose them.
func (in *injector) minorityOf(f Fault, desc string) []int {
	switch f.Kind {
	case Partition, PartitionLeader:
		var ms []int
		var list string
		if _, after, ok := strings.Cut(desc, "members ["); ok {
			list, _, _ = strings.Cut(after, "]")
		} else if _, after, ok := strings.Cut(desc, "member "); ok {
			list, _, _ = strings.Cut(after, " ")
		}
		for _, f := range strings.Fields(list) {
			if m, err := strconv.Atoi(f); err == nil {
				ms = append(ms, m-1)
			}
		}
		return ms
	}
	return nil
}

// target resolves the member a fault hits.
func (in *injector) target(f Fault) int {
	if f.Leader {
		if l := in.e.leader(); l >= 0 {
			return l
		}
	}
	return f.Member
}

// others returns every member but those in set.
func (in *injector) others(set ...int) []int {
	var out []int
	for i := 0; i < in.e.n; i++ {
		skip := false
		for _, s := range set {
			skip = skip || s == i
		}
		if !skip {
			out = append(out, i)
		}
	}
	return out
}

// apply starts fault f and returns what removes it. The removal runs
// after f.For, on the same goroutine; it returns once the fault is gone
// (a stopped member started again).
func (in *injector) apply(ctx context.Context, f Fault) (desc string, undo func() error, err error) {
	fn, e := in.e.net, in.e
	switch f.Kind {
	case Partition:
		minority := []int{f.Member}
		if e.n > 3 {
			minority = append(minority, (f.Member+1)%e.n)
		}
		for _, a := range minority {
			for _, b := range in.others(minority...) {
				fn.Partition(memberName(a), memberName(b))
			}
		}
		return fmt.Sprintf("members %v cut from the others", plusOne(minority)), healAll(in), nil
	case PartitionLeader:
		l := in.target(f)
		for _, b := range in.others(l) {
			fn.Partition(memberName(l), memberName(b))
		}
		return fmt.Sprintf("member %d (leader) cut from the others", l+1), healAll(in), nil
	case OneWay:
		l := in.target(f)
		for _, b := range in.others(l) {
			fn.PartitionOneWay(memberName(l), memberName(b))
		}
		return fmt.Sprintf("bytes from member %d (leader) to the others lost", l+1), healAll(in), nil
	case Flap:
		m := in.target(f)
		stop := make(chan struct{})
		done := make(chan struct{})
		seed := in.rng.Uint64()
		go func() {
			defer close(done)
			rng := rand.New(rand.NewPCG(seed, 1))
			cut := false
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(200+rng.IntN(300)) * time.Millisecond):
				}
				if cut {
					fn.HealAll()
				} else {
					for _, b := range in.others(m) {
						fn.Partition(memberName(m), memberName(b))
					}
				}
				cut = !cut
			}
		}()
		return fmt.Sprintf("member %d cut and healed every 200-500ms", m+1), func() error {
			close(stop)
			<-done
			fn.HealAll()
			return nil
		}, nil
	case Delay:
		in.eachLink(func(a, b string) { fn.Delay(a, b, f.Param, f.Param/2) })
		return fmt.Sprintf("%v ± %v on every peer link", f.Param, f.Param/2), func() error {
			in.eachLink(func(a, b string) { fn.Delay(a, b, 0, 0) })
			return nil
		}, nil
	case Loss:
		in.eachLink(func(a, b string) {
			fn.DropFrames(a, b, f.Prob)
			fn.ReorderFrames(a, b, f.Prob)
		})
		return fmt.Sprintf("raft messages dropped and reordered with p=%.2f on every peer link", f.Prob), func() error {
			in.eachLink(func(a, b string) {
				fn.DropFrames(a, b, 0)
				fn.ReorderFrames(a, b, 0)
			})
			return nil
		}, nil
	case Pause:
		m := in.target(f)
		if err := e.signal(m, syscall.SIGSTOP); err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("member %d stopped (SIGSTOP)", m+1), func() error {
			return e.signal(m, syscall.SIGCONT)
		}, nil
	case Kill:
		m := in.target(f)
		if err := e.kill(ctx, m); err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("member %d killed (SIGKILL)", m+1), func() error { return e.start(m) }, nil
	case DiskFull, DiskError:
		m := in.target(f)
		mode := map[Kind]string{DiskFull: "enospc", DiskError: "eio"}[f.Kind]
		if err := e.setDisk(m, mode); err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("member %d's disk fails (%s)", m+1, mode), func() error {
			stopped, err := e.exited(m)
			if !stopped {
				in.note("member %d did not stop in %v of a failing disk (%s): it saved nothing meanwhile?", m+1, f.For, mode)
			} else {
				in.event("member %d had stopped on its failing disk (%v)", m+1, err)
			}
			if err := e.setDisk(m, ""); err != nil {
				return err
			}
			if stopped {
				return e.start(m)
			}
			return nil
		}, nil
	case SlowDisk:
		m := in.target(f)
		if err := e.setDisk(m, "slow "+f.Param.String()); err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("member %d's fsyncs take %v more", m+1, f.Param), func() error { return e.setDisk(m, "") }, nil
	case ClientCut:
		c := clientName(f.Client)
		fn.Isolate(c)
		return fmt.Sprintf("client %d cut from every member", f.Client), healAll(in), nil
	case ClientPause:
		k, resume, err := in.freeze(ctx)
		if err != nil {
			return "", nil, err
		}
		fn.Isolate(clientName(k))
		return fmt.Sprintf("client %d frozen before a fenced write, its links cut", k), func() error {
			fn.HealAll()
			resume()
			return nil
		}, nil
	}
	return "", nil, fmt.Errorf("unknown fault kind %v", f.Kind)
}

// eachLink calls fn for every ordered pair of members.
func (in *injector) eachLink(fn func(a, b string)) {
	for a := 0; a < in.e.n; a++ {
		for b := 0; b < in.e.n; b++ {
			if a != b {
				fn(memberName(a), memberName(b))
			}
		}
	}
}

func healAll(in *injector) func() error {
	return func() error { in.e.net.HealAll(); return nil }
}

func plusOne(ms []int) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = m + 1
	}
	return out
}

// clientName is client k's node name in the fault network.
func clientName(k int) string { return fmt.Sprintf("c%d", k) }
