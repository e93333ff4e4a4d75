package linearize

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zkgo/zkgo/zk"
)

// TestRecorderConcurrent: clients record at once (run with -race); every
// operation is in the history with call ≤ return, an operation never
// ended counts as unknown, and the counts add up.
func TestRecorderConcurrent(t *testing.T) {
	const clients, ops = 8, 200
	r := NewRecorder()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("/k%d", c) // one path per client: linearizable
			r.Begin(c, create(key, "0")).End(status(OK), "")
			for i := 1; i < ops; i++ {
				if i%2 == 1 {
					r.Begin(c, set(key, fmt.Sprint(i))).End(setTo(int32(i+1)/2), "")
				} else {
					r.Begin(c, get(key)).End(read(fmt.Sprint(i-1), int32(i)/2), "")
				}
			}
		}()
	}
	wg.Wait()
	r.Begin(0, set("/k0", "never ended"))
	r.Begin(1, get("/k1")) // never ended: left out
	h := r.History()
	if len(h) != clients*ops+1 {
		t.Fatalf("%d operations in the history, want %d", len(h), clients*ops+1)
	}
	for _, op := range h {
		if op.Return < op.Call {
			t.Fatalf("%v returns at %d before its call at %d", op.Input, op.Return, op.Call)
		}
	}
	want := Counts{Reads: clients * (ops/2 - 1), Writes: clients*(ops/2+1) + 1, OK: clients * ops, Unknown: 1, DroppedReads: 1}
	if got := r.Counts(); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	if got := Check(h, 0); got != porcupine.Ok {
		t.Fatalf("Check = %v", got)
	}
}

func TestEndTwicePanics(t *testing.T) {
	op := NewRecorder().Begin(0, get("/a"))
	op.End(status(NoNode), "")
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	op.End(status(NoNode), "")
}

func TestStatusOf(t *testing.T) {
	tests := []struct {
		err  error
		want Status
	}{
		{nil, OK},
		{&zk.Error{Code: zk.ErrorCode(zk.ErrNoNode), Err: zk.ErrNoNode, Op: "getData", Path: "/a"}, NoNode},
		{zk.ErrNodeExists, NodeExists},
		{fmt.Errorf("wrapped: %w", zk.ErrBadVersion), BadVersion},
		{zk.ErrConnectionLoss, Unknown},
		{zk.ErrOperationTimeout, Unknown},
		{zk.ErrRequestTimeout, Unknown},
		{zk.ErrClosing, Unknown},
		{zk.ErrSessionExpired, Unknown},
		{zk.ErrSessionMoved, Unknown},
		{zk.ErrThrottled, Unknown},
		{context.DeadlineExceeded, Unknown},
		{context.Canceled, Unknown},
	}
	for _, tt := range tests {
		if got := StatusOf(tt.err); got != tt.want {
			t.Errorf("StatusOf(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// fakeT records Require's failure instead of ending the test.
type fakeT struct {
	testing.TB
	failure string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failure = fmt.Sprintf(format, args...)
}

// TestRequire: a linearizable history passes; one that is not fails,
// naming a visualization written to $ZKGO_LIN_OUT that shows the
// operations.
func TestRequire(t *testing.T) {
	out := filepath.Join(t.TempDir(), "vis")
	t.Setenv(OutEnv, out)
	good := record(t, []event{
		call(0, create("/a", "x")), ret(0, status(OK)),
		call(1, get("/a")), ret(1, read("x", 0)),
	})
	f := &fakeT{TB: t}
	Require(f, good, time.Minute)
	if f.failure != "" {
		t.Fatalf("linearizable history failed: %s", f.failure)
	}
	bad := record(t, []event{
		call(0, create("/a", "x")), ret(0, status(OK)),
		call(0, set("/a", "y")), ret(0, setTo(1)),
		call(1, get("/a")), ret(1, read("x", 0)),
	})
	Require(f, bad, time.Minute)
	_, path, ok := strings.Cut(f.failure, "visualization: ")
	if !ok {
		t.Fatalf("failure names no visualization: %q", f.failure)
	}
	if filepath.Dir(path) != out {
		t.Fatalf("visualization %s not in %s", path, out)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `get /a -\u003e \"x\" v0`) { // JSON in the page
		t.Fatalf("visualization does not show the stale read:\n%.2000s", html)
	}
}
