package acl

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
)

// largeACL returns n digest entries, every tenth one repeating an earlier
// entry (the one five before it), so the duplicate check has work to do.
func largeACL(n int) []proto.ACL {
	acls := make([]proto.ACL, n)
	for i := range acls {
		j := i
		if i%10 == 9 {
			j = i - 5
		}
		acls[i] = proto.ACL{Perms: proto.Perm(1 + j%31), ID: digest(fmt.Sprintf("user%d:hash%d", j, j))}
	}
	return acls
}

// dedupNaive is the definition of the duplicate check: an entry is dropped
// when an equal one came before it.
func dedupNaive(acls []proto.ACL) []proto.ACL {
	var out []proto.ACL
next:
	for i, a := range acls {
		for _, b := range acls[:i] {
			if a == b {
				continue next
			}
		}
		out = append(out, a)
	}
	return out
}

// Fixup drops exact duplicates keeping the first of each, in order, for
// random lists with many repeats (entries differing only in perms, scheme
// or id are distinct).
func TestFixupDedupMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := []proto.Id{world, digest("a:x"), digest("b:x"), digest("a:y"), ip("10.0.0.1"), ip("10.0.0.0/8"),
		{Scheme: SchemeSASL, ID: "a:x"}}
	for round := 0; round < 500; round++ {
		acls := make([]proto.ACL, 1+rng.IntN(40))
		for i := range acls {
			acls[i] = proto.ACL{Perms: proto.Perm(rng.IntN(3)), ID: ids[rng.IntN(len(ids))]}
		}
		got, err := Fixup(acls, nil)
		if err != nil {
			t.Fatalf("Fixup(%v): %v", acls, err)
		}
		if want := dedupNaive(acls); !reflect.DeepEqual(got, want) {
			t.Fatalf("Fixup(%v) = %v, want %v", acls, got, want)
		}
	}
}

// A large ACL is checked in linear time: every member runs Fixup when it
// applies a create or setACL, so a quadratic check lets one request stall
// them all. 100,000 entries took 12 s with the pairwise comparison;
// the bound leaves a wide margin for a slow, shared machine.
func TestFixupLargeACLIsLinear(t *testing.T) {
	acls := largeACL(100_000)
	start := time.Now()
	got, err := Fixup(acls, nil)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 90_000 {
		t.Fatalf("%d entries kept, want 90000", len(got))
	}
	for i, a := range got[:20] {
		if want := acls[i+i/9]; a != want {
			t.Fatalf("entry %d = %v, want %v", i, a, want)
		}
	}
	if took > 2*time.Second {
		t.Fatalf("Fixup of 100,000 entries took %v", took)
	}
}

func BenchmarkFixupLargeACL(b *testing.B) {
	for _, n := range []int{1_000, 40_000} {
		acls := largeACL(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Fixup(acls, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
