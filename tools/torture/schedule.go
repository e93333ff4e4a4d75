package torture

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind uint8

// The fault kinds. Target "leader" faults pick the member that leads when
// the fault starts (found with srvr), so a replayed seed makes the same
// choices of kind, time and duration but may hit another member.
const (
	// Partition isolates a minority of the members (both ways) from the
	// rest.
	Partition Kind = iota + 1
	// PartitionLeader isolates the leader (both ways) from the other
	// members; its clients stay connected to it.
	PartitionLeader
	// OneWay loses the bytes the leader sends to the other members (they
	// elect a new leader while the old one still hears them).
	OneWay
	// Flap partitions a random member on and off every few hundred
	// milliseconds.
	Flap
	// Delay adds latency (with jitter) to every peer link.
	Delay
	// Loss drops and reorders raft messages on every peer link.
	Loss
	// Pause stops a member with SIGSTOP (a long GC pause, a frozen VM)
	// for longer than the session timeout, then continues it.
	Pause
	// Kill kills a member with SIGKILL and starts it again later.
	Kill
	// DiskFull makes a member's writes fail with ENOSPC: it stops; the
	// disk is given back and the member started again later.
	DiskFull
	// DiskError makes a member's fsyncs and writes fail with EIO: it
	// stops; the disk is repaired and the member started again later.
	DiskError
	// SlowDisk delays each of a member's fsyncs.
	SlowDisk
	// ClientCut cuts one client from every member for longer than its
	// session timeout: its session expires while it runs.
	ClientCut
	// ClientPause freezes the next lock holder to reach a fenced write
	// (as a long GC pause or a stopped process would), for longer than
	// its session timeout, with its session's links cut: its lock is
	// given to another client meanwhile, and when it wakes it makes the
	// write it was about to make, believing it still holds the lock.
	ClientPause
)

var kindNames = [...]string{
	Partition:       "partition",
	PartitionLeader: "partition-leader",
	OneWay:          "one-way",
	Flap:            "flap",
	Delay:           "delay",
	Loss:            "loss",
	Pause:           "pause",
	Kill:            "kill",
	DiskFull:        "disk-full",
	DiskError:       "disk-error",
	SlowDisk:        "slow-disk",
	ClientCut:       "client-cut",
	ClientPause:     "client-pause",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// AllKinds are every fault kind, in order.
func AllKinds() []Kind {
	var ks []Kind
	for k := Partition; k <= ClientPause; k++ {
		ks = append(ks, k)
	}
	return ks
}

// ParseKinds parses a comma-separated list of kind names ("all" for every
// kind).
func ParseKinds(s string) ([]Kind, error) {
	if s == "" || s == "all" {
		return AllKinds(), nil
	}
	var ks []Kind
	for _, name := range strings.Split(s, ",") {
		found := false
		for k := Partition; k <= ClientPause; k++ {
			if k.String() == strings.TrimSpace(name) {
				ks = append(ks, k)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown fault kind %q (known: %s)", name, kindList())
		}
	}
	return ks, nil
}

func kindList() string {
	var names []string
	for _, k := range AllKinds() {
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}

// Fault is one scheduled fault.
type Fault struct {
	Kind Kind
	// At is when it starts, from the start of the faults; For is how long
	// it lasts.
	At, For time.Duration
	// Leader: the fault targets the member leading when it starts;
	// otherwise Member (0-based) or, for ClientCut, Client.
	Leader bool
	Member int
	Client int
	// Param is the kind's strength: a delay, a drop probability in
	// per-mille, a slow fsync's duration.
	Param time.Duration
	Prob  float64
}

func (f Fault) String() string {
	target := fmt.Sprintf("member %d", f.Member+1)
	switch {
	case f.Leader:
		target = "the leader"
	case f.Kind == ClientCut:
		target = fmt.Sprintf("client %d", f.Client)
	case f.Kind == ClientPause:
		target = "a lock client"
	case f.Kind == Delay || f.Kind == Loss:
		target = "every peer link"
	}
	s := fmt.Sprintf("%v %s at %v for %v", f.Kind, target, f.At.Round(time.Millisecond), f.For.Round(time.Millisecond))
	if f.Param > 0 {
		s += fmt.Sprintf(" (%v)", f.Param)
	}
	if f.Prob > 0 {
		s += fmt.Sprintf(" (p=%.2f)", f.Prob)
	}
	return s
}

// Schedule is the faults of a run, in time order, one at a time with a
// quiet gap after each (for the ensemble to recover and the checkers to
// see it did).
type Schedule struct {
	Seed   uint64
	Faults []Fault
}

// NewSchedule makes the schedule of seed: faults of the given kinds, in
// random order and strength, filling d. members and clients bound the
// targets; sessionTimeout sets how long pauses and client cuts last.
func NewSchedule(seed uint64, d time.Duration, kinds []Kind, members, clients int, sessionTimeout time.Duration) Schedule {
	rng := rand.New(rand.NewPCG(seed, 0x746f7274757265)) // "torture"
	s := Schedule{Seed: seed}
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	at := between(time.Second, 2*time.Second)
	// A schedule cycles through the kinds in a shuffled order, so a short
	// run still sees each kind once.
	var order []Kind
	for at < d {
		if len(order) == 0 {
			order = append(order, kinds...)
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		k := order[0]
		order = order[1:]
		f := Fault{Kind: k, At: at, Member: rng.IntN(members), Leader: rng.IntN(2) == 0}
		switch k {
		case Partition, Flap, Kill, DiskFull, DiskError, SlowDisk:
			f.For = between(2*time.Second, 5*time.Second)
		case PartitionLeader, OneWay:
			f.Leader = true
			f.For = between(2*time.Second, 5*time.Second)
		case Delay:
			f.Leader = false
			f.For = between(2*time.Second, 4*time.Second)
			f.Param = between(5*time.Millisecond, 60*time.Millisecond)
		case Loss:
			f.Leader = false
			f.For = between(2*time.Second, 4*time.Second)
			f.Prob = float64(between(20, 200)) / 1000
		case Pause:
			f.For = sessionTimeout + between(time.Second, 3*time.Second)
		case ClientCut, ClientPause:
			f.Leader = false
			f.Client = rng.IntN(clients) // ClientPause: whichever lock holder comes first
			f.For = sessionTimeout + between(time.Second, 2*time.Second)
		}
		if k == SlowDisk {
			f.Param = between(20*time.Millisecond, 200*time.Millisecond)
		}
		if k == Partition && members > 3 {
			f.Leader = false // a minority of two: Member and the next
		}
		if at+f.For > d {
			break
		}
		s.Faults = append(s.Faults, f)
		// The quiet gap: long enough for an election and the clients'
		// reconnection.
		at += f.For + between(2*time.Second, 4*time.Second)
	}
	return s
}

func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %d faults\n", s.Seed, len(s.Faults))
	for _, f := range s.Faults {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}
