package discovery

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

type env = recipetest.Env

var seedFlag = flag.Uint64("discovery.seed", 0, "seed of the randomized tests (0: random)")

// TestCuratorJSON: instances written by curator-x-discovery decode, and
// encode back to the same bytes.
func TestCuratorJSON(t *testing.T) {
	f, err := os.Open("testdata/curator-instances.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		n++
		in, err := Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		out, err := in.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, line) {
			t.Errorf("round trip:\n got %s\nwant %s", out, line)
		}
	}
	if n != 3 {
		t.Fatalf("%d instances", n)
	}
	in, _ := Decode([]byte(`{"name":"svc","id":"x","address":"a","port":80,"sslPort":443,"payload":null,"registrationTimeUTC":5,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://h:","variable":false},{"value":"ssl-port","variable":true},{"value":"/{x}","variable":false},{"value":"nope","variable":true}]},"enabled":true}`))
	if got := in.URISpec.Build(in, nil); got != "https://h:443/{x}{nope}" {
		t.Fatalf("Build %q", got)
	}
	spec := ParseURISpec("{scheme}://foo.com:{port}")
	want := `{"parts":[{"value":"scheme","variable":true},{"value":"://foo.com:","variable":false},{"value":"port","variable":true}]}`
	if b, _ := (&Instance{URISpec: spec}).Encode(); !strings.Contains(string(b), want) {
		t.Fatalf("ParseURISpec: %s", b)
	}
}

func TestRegisterQuery(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		d := New(e.Connect(t), e.Root+"/services")
		other := New(e.Connect(t), e.Root+"/services")
		a := NewInstance("api", "10.0.0.1", 80)
		a.Payload = []byte(`"v1"`)
		b := NewInstance("api", "10.0.0.2", 80)
		b.ServiceType = Static
		w := NewInstance("web", "10.0.0.3", 8080)
		w.ServiceType = Permanent
		for _, in := range []*Instance{a, b, w} {
			if err := d.Register(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		names, err := other.Names(ctx)
		if err != nil || strings.Join(names, ",") != "api,web" {
			t.Fatalf("names %v %v", names, err)
		}
		ins, err := other.Instances(ctx, "api")
		if err != nil || len(ins) != 2 {
			t.Fatalf("instances %v %v", ins, err)
		}
		got, err := other.Instance(ctx, "api", a.ID)
		if err != nil || got.Address != "10.0.0.1" || string(got.Payload) != `"v1"` || got.ServiceType != Dynamic {
			t.Fatalf("instance %+v %v", got, err)
		}
		a.Payload = []byte(`"v2"`)
		if err := d.Update(ctx, a); err != nil {
			t.Fatal(err)
		}
		if got, _ := other.Instance(ctx, "api", a.ID); string(got.Payload) != `"v2"` {
			t.Fatalf("after Update %s", got.Payload)
		}
		if err := other.Update(ctx, a); !errors.Is(err, ErrNotRegistered) {
			t.Fatalf("Update elsewhere: %v", err)
		}
		if err := d.Unregister(ctx, b); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Instance(ctx, "api", b.ID); !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("unregistered: %v", err)
		}
		if err := d.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Instance(ctx, "api", a.ID); !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("after Close: %v", err)
		}
		if _, err := other.Instance(ctx, "web", w.ID); err != nil {
			t.Fatalf("permanent after Close: %v", err)
		}
	})
}

// TestProviderFollows: a provider's list follows registrations, updates
// and unregistrations, and the strategies pick from it.
func TestProviderFollows(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		d := New(e.Connect(t), e.Root+"/services")
		p, err := New(e.Connect(t), e.Root+"/services").NewProvider(ctx, "api")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if _, err := p.Instance(); !errors.Is(err, ErrNoInstances) {
			t.Fatalf("empty: %v", err)
		}
		// waitList waits until the provider's list satisfies ok.
		waitList := func(ok func([]*Instance) bool) {
			t.Helper()
			for range 100 {
				list, changed := p.Instances()
				if ok(list) {
					return
				}
				select {
				case <-changed:
				case <-ctx.Done():
					t.Fatal("list not reached")
				}
			}
			t.Fatal("list not reached after 100 changes")
		}
		var ins []*Instance
		for i := range 3 {
			in := NewInstance("api", "10.0.0."+string(rune('1'+i)), 80)
			in.ID = "id-" + string(rune('a'+i))
			if err := d.Register(ctx, in); err != nil {
				t.Fatal(err)
			}
			ins = append(ins, in)
		}
		waitList(func(l []*Instance) bool { return len(l) == 3 })
		seen := map[string]int{}
		for range 6 {
			in, err := p.Instance()
			if err != nil {
				t.Fatal(err)
			}
			seen[in.ID]++
		}
		if seen["id-a"] != 2 || seen["id-b"] != 2 || seen["id-c"] != 2 {
			t.Fatalf("round robin %v", seen)
		}
		ins[1].Address = "10.9.9.9"
		if err := d.Update(ctx, ins[1]); err != nil {
			t.Fatal(err)
		}
		waitList(func(l []*Instance) bool { return len(l) == 3 && l[1].Address == "10.9.9.9" })
		if err := d.Unregister(ctx, ins[0]); err != nil {
			t.Fatal(err)
		}
		waitList(func(l []*Instance) bool { return len(l) == 2 && l[0].ID == "id-b" })
	})
}

func TestStrategies(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -discovery.seed %d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0))
	list := []*Instance{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	s := Sticky(RoundRobin())
	first := s.Pick(list)
	for range 50 {
		// Any subset that still holds the first: it stays.
		sub := []*Instance{first}
		for _, in := range list {
			if in != first && r.IntN(2) == 0 {
				sub = append(sub, in)
			}
		}
		r.Shuffle(len(sub), func(i, j int) { sub[i], sub[j] = sub[j], sub[i] })
		if got := s.Pick(sub); got.ID != first.ID {
			t.Fatalf("sticky moved to %s from %s", got.ID, first.ID)
		}
	}
	rest := []*Instance{}
	for _, in := range list {
		if in.ID != first.ID {
			rest = append(rest, in)
		}
	}
	next := s.Pick(rest)
	if next.ID == first.ID || s.Pick(list).ID != next.ID {
		t.Fatal("sticky did not move on, or moved back")
	}
	counts := map[string]int{}
	rs := Random()
	for range 300 {
		counts[rs.Pick(list).ID]++
	}
	if len(counts) != 3 {
		t.Fatalf("random picked only %v", counts)
	}
}

// TestDownInstancePolicy: an instance reported threshold times is skipped
// until the timeout since its first report.
func TestDownInstancePolicy(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		d := New(e.Connect(t), e.Root+"/services")
		now := time.Unix(1000, 0)
		p, err := d.NewProvider(ctx, "api", WithDownInstancePolicy(10*time.Second, 2), withClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		a := NewInstance("api", "a", 1)
		a.ID = "a"
		b := NewInstance("api", "b", 1)
		b.ID = "b"
		for _, in := range []*Instance{a, b} {
			if err := d.Register(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		for {
			l, ch := p.Instances()
			if len(l) == 2 {
				break
			}
			<-ch
		}
		pick := func() map[string]bool {
			got := map[string]bool{}
			for range 4 {
				in, err := p.Instance()
				if err != nil {
					t.Fatal(err)
				}
				got[in.ID] = true
			}
			return got
		}
		p.NoteError(a)
		if got := pick(); !got["a"] || !got["b"] {
			t.Fatalf("one error: %v", got)
		}
		now = now.Add(5 * time.Second)
		p.NoteError(a)
		if got := pick(); got["a"] || !got["b"] {
			t.Fatalf("down: %v", got)
		}
		p.NoteError(b)
		p.NoteError(b)
		if _, err := p.Instance(); !errors.Is(err, ErrNoInstances) {
			t.Fatalf("all down: %v", err)
		}
		now = now.Add(5 * time.Second) // 10 s after a's first report
		if got := pick(); !got["a"] || got["b"] {
			t.Fatalf("a back, b down: %v", got)
		}
	})
}

// TestDynamicAfterExpiry: a Dynamic instance registered through a
// Redialer is registered again on the next session.
func TestDynamicAfterExpiry(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		var net recipetest.Net
		r, err := zk.Redial(ctx, e.Addr, net.Dialer(), zk.WithSessionTimeout(4*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		d := New(r, e.Root+"/services")
		p, err := New(e.Connect(t), e.Root+"/services").NewProvider(ctx, "api")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		in := NewInstance("api", "10.0.0.1", 80)
		if err := d.Register(ctx, in); err != nil {
			t.Fatal(err)
		}
		c1 := r.Current()
		net.Expire(t, e.Addr, c1)
		c2, err := r.Next(ctx, c1)
		if err != nil {
			t.Fatal(err)
		}
		for range 100 {
			st, err := c2.Exists(ctx, e.Root+"/services/api/"+in.ID)
			if err != nil {
				t.Fatal(err)
			}
			if st != nil && st.EphemeralOwner == c2.SessionID() {
				return
			}
			_, ch := p.Instances()
			select {
			case <-ch:
			case <-ctx.Done():
				t.Fatal("not registered again")
			}
		}
		t.Fatal("not registered again after 100 changes")
	})
}
