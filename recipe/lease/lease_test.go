package lease

import (
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe/internal/kazoolock"
	"github.com/zkgo/zkgo/tests/framework/recipetest"
)

// TestEncodeAsPython: the record is byte for byte what kazoo's
// json.dumps writes (the expected text is Python 3's output).
func TestEncodeAsPython(t *testing.T) {
	end := time.Date(2024, 5, 1, 12, 30, 9, 0, time.UTC)
	got := string(Encode(Record{Version: 1, Holder: "a\"\\\x7f\x01é😀\n<&>", End: end}))
	want := `{"version": 1, "holder": "a\"\\\u007f\u0001\u00e9\ud83d\ude00\n<&>", "end": "2024-05-01T12:30:09"}`
	if got != want {
		t.Fatalf("Encode =\n%s\nwant\n%s", got, want)
	}
	r, err := Decode([]byte(want))
	if err != nil || r.Holder != "a\"\\\x7f\x01é😀\n<&>" || !r.End.Equal(end) || r.Version != 1 {
		t.Fatalf("Decode = %+v, %v", r, err)
	}
	if r, err := Decode([]byte(`{"version": 2, "holder": "x", "end": "whenever"}`)); err != nil || r.Version != 2 {
		t.Fatalf("Decode of version 2 = %+v, %v", r, err)
	}
	if _, err := Decode([]byte(`{"version": 1, "holder": "x", "end": "2024-05-01 12:30"}`)); err == nil {
		t.Fatal("bad end accepted")
	}
}

func clock(t time.Time) Option { return WithClock(func() time.Time { return t }) }

func TestNonBlocking(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *recipetest.Env) {
		ctx := recipetest.Ctx(t)
		c := e.Connect(t)
		path := e.Root + "/leases/job"
		t0 := time.Date(2030, 1, 2, 3, 4, 5, 600e6, time.UTC)
		l, err := NonBlocking(ctx, c, path, time.Minute, WithIdentifier("a"), clock(t0))
		if err != nil || !l.Obtained || l.Holder != "a" || !l.End.Equal(t0.Add(time.Minute).Truncate(time.Second)) {
			t.Fatalf("first attempt: %+v %v", l, err)
		}
		// Another identifier is refused while the lease runs.
		l, err = NonBlocking(ctx, e.Connect(t), path, time.Minute, WithIdentifier("b"), clock(t0.Add(30*time.Second)))
		if err != nil || l.Obtained || l.Holder != "a" {
			t.Fatalf("b during a's lease: %+v %v", l, err)
		}
		// The holder renews.
		l, err = NonBlocking(ctx, c, path, time.Minute, WithIdentifier("a"), clock(t0.Add(50*time.Second)))
		if err != nil || !l.Obtained || !l.End.Equal(t0.Add(110*time.Second).Truncate(time.Second)) {
			t.Fatalf("renewal: %+v %v", l, err)
		}
		// Expired: b gets it.
		l, err = NonBlocking(ctx, c, path, time.Minute, WithIdentifier("b"), clock(t0.Add(111*time.Second)))
		if err != nil || !l.Obtained || l.Holder != "b" {
			t.Fatalf("b after expiry: %+v %v", l, err)
		}
		r, err := Read(ctx, c, path)
		if err != nil || r.Holder != "b" {
			t.Fatalf("Read: %+v %v", r, err)
		}
		// Only the record is left: the lock nodes are gone.
		names, _, err := c.Children(ctx, path)
		if err != nil || len(names) != 1 || names[0] != HolderNode {
			t.Fatalf("children %v %v", names, err)
		}
		// A record of another version is never replaced.
		if _, err := c.Set(ctx, path+"/"+HolderNode, []byte(`{"version": 2, "holder": "z", "end": "?"}`), -1); err != nil {
			t.Fatal(err)
		}
		l, err = NonBlocking(ctx, c, path, time.Minute, WithIdentifier("b"), clock(t0.Add(time.Hour)))
		if err != nil || l.Obtained || l.Holder != "" {
			t.Fatalf("over version 2: %+v %v", l, err)
		}
	})
}

func TestMultiNonBlocking(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *recipetest.Env) {
		ctx := recipetest.Ctx(t)
		c := e.Connect(t)
		path := e.Root + "/multi"
		now := time.Now()
		for i, id := range []string{"a", "b"} {
			l, err := MultiNonBlocking(ctx, c, 2, path, time.Hour, WithIdentifier(id), clock(now))
			if err != nil || !l.Obtained || !strings.HasSuffix(l.Path, "/"+string(rune('0'+i))) {
				t.Fatalf("%s: %+v %v", id, l, err)
			}
		}
		l, err := MultiNonBlocking(ctx, c, 2, path, time.Hour, WithIdentifier("c"), clock(now))
		if err != nil || l.Obtained {
			t.Fatalf("c: %+v %v", l, err)
		}
		// a renews its own (the first).
		l, err = MultiNonBlocking(ctx, c, 2, path, time.Hour, WithIdentifier("a"), clock(now))
		if err != nil || !l.Obtained || !strings.HasSuffix(l.Path, "/0") {
			t.Fatalf("a again: %+v %v", l, err)
		}
	})
}

// TestLockWaits: an attempt waits for a contender holding the lease's
// lock (as kazoo's does).
func TestLockWaits(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *recipetest.Env) {
		ctx := recipetest.Ctx(t)
		c := e.Connect(t)
		path := e.Root + "/locked"
		other := kazoolock.New(e.Connect(t), path, "other", nil)
		if err := other.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		done := make(chan Lease, 1)
		go func() {
			l, err := NonBlocking(ctx, c, path, time.Minute, WithIdentifier("w"))
			if err != nil {
				t.Error(err)
			}
			done <- l
		}()
		select {
		case l := <-done:
			t.Fatalf("attempt finished under another's lock: %+v", l)
		case <-time.After(200 * time.Millisecond):
		}
		if err := other.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if l := <-done; !l.Obtained {
			t.Fatalf("after the lock: %+v", l)
		}
	})
}
