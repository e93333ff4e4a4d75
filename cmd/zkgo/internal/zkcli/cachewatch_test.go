package zkcli

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// lineWriter hands each written line to a channel.
type lineWriter struct{ lines chan string }

func (w *lineWriter) Write(p []byte) (int, error) {
	for _, l := range strings.SplitAfter(string(p), "\n") {
		if l != "" {
			w.lines <- strings.TrimSuffix(l, "\n")
		}
	}
	return len(p), nil
}

func TestWatchCommand(t *testing.T) {
	srv := zktest.Start(t)
	ctx := context.Background()
	w, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, n := range []struct{ p, d string }{{"/w", "a"}, {"/w/x", "b"}} {
		if _, err := w.Create(ctx, n.p, []byte(n.d), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	out := &lineWriter{lines: make(chan string, 100)}
	// A short command timeout: watch is not bound by it.
	s, _, errb := newShellFor(t, Config{Timeout: 300 * time.Millisecond})
	s.o.out = out
	if err := s.Connect(ctx, srv.Addr()); err != nil {
		t.Fatal(err)
	}
	expectLine := func(pattern string) {
		t.Helper()
		re := regexp.MustCompile("^" + pattern + "$")
		select {
		case l := <-out.lines:
			if !re.MatchString(l) {
				t.Fatalf("printed %q, want %s", l, pattern)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("nothing printed; want %s", pattern)
		}
	}
	run := func(line string) (context.CancelFunc, chan int) {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan int, 1)
		go func() { done <- ExitCode(s.Exec(cctx, line)) }()
		return cancel, done
	}

	cancel, done := run("watch -R /w")
	expectLine(`Created /w zxid:0x[0-9a-f]+ version:0 data:"a"`)
	expectLine(`Created /w/x zxid:0x[0-9a-f]+ version:0 data:"b"`)
	expectLine(`Initialized zxid:0x[0-9a-f]+`)
	time.Sleep(600 * time.Millisecond) // longer than the command timeout
	st, err := w.Set(ctx, "/w/x", []byte("c"), -1)
	if err != nil {
		t.Fatal(err)
	}
	expectLine(fmt.Sprintf(`Changed /w/x zxid:0x%x version:1 data:"c"`, st.Mzxid))
	if err := w.Delete(ctx, "/w/x", -1); err != nil {
		t.Fatal(err)
	}
	expectLine(`Deleted /w/x zxid:0x[0-9a-f]+`)
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("watch interrupted: exit %d (stderr %q)", code, errb.String())
	}

	// Without -R: the node alone, which need not exist.
	cancel, done = run("watch /w/y")
	expectLine(`Initialized zxid:0x[0-9a-f]+`)
	if _, err := w.Create(ctx, "/w/y", []byte("y"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	expectLine(`Created /w/y zxid:0x[0-9a-f]+ version:0 data:"y"`)
	if _, err := w.Create(ctx, "/w/y/child", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Set(ctx, "/w/y", []byte("y2"), -1); err != nil {
		t.Fatal(err)
	}
	expectLine(`Changed /w/y zxid:0x[0-9a-f]+ version:1 data:"y2"`) // the child: no line
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("watch interrupted: exit %d", code)
	}

	// Usage and path errors.
	for _, tt := range []struct{ line, wantErr string }{
		{"watch", "watch path [-R]"},
		{"watch -x /w", "Unrecognized option: -x"},
		{"watch w", "Path must start with / character"},
	} {
		errb.Reset()
		if code := ExitCode(s.Exec(ctx, tt.line)); code != 1 || !strings.Contains(errb.String(), tt.wantErr) {
			t.Errorf("%q: exit %d, stderr %q; want 1 and %q", tt.line, code, errb.String(), tt.wantErr)
		}
	}
}
