package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// TestConsoleLockQueue watches, in headless Chromium, the console of a
// real three-process ensemble while `zkgo lock` processes come and go: the
// recipes page (and the overview, in a second tab) of a member that does
// not lead show one holder and two waiters of /locks/jobs, each process
// connected to a different member; the holder releases (its command
// exits) and the first waiter holds with one waiter behind it; the last
// waiter is killed (SIGKILL) and its node goes when its 2 s session
// expires; the last holder releases and the queue is gone. The pages are
// never reloaded (server-sent events). It skips when no Chromium is
// installed (ZKGO_CHROMIUM chooses one). With ZKGO_CONSOLE_SCREENSHOTS=1 it
// writes docs/console/lock-queue-processes.png (the recipes page with the
// queue formed).
func TestConsoleLockQueue(t *testing.T) {
	exe := chromiumPath(t)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 3
	m, clients, consoles := startConsoleEnsemble(ctx, t, n)
	lead := waitLeader(ctx, t, m)
	w := (lead + 1) % n // the member whose console the browser shows
	t.Logf("ensemble up in %v; member %d leads, the browser shows member %d's console", time.Since(start).Round(time.Millisecond), lead+1, w+1)
	zc, err := zk.Connect(ctx, clients)
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost" // as zkgo lock's participant id does
	}

	br := startBrowser(ctx, t, exe)
	rec, ov := br.tab(w+1), br.tab(w+1)
	rec.open(consoles[w] + "/recipes")
	ov.open(consoles[w] + "/")
	for _, b := range []*consoleTab{rec, ov} {
		b.waitJS("stream open", `document.getElementById("live-state").innerText === "live"`)
		b.markPage()
	}
	t.Logf("browser pages open at %v", time.Since(start).Round(time.Millisecond))

	// Three processes, each through a different member: a holds the lock,
	// b and c queue behind it in that order (each is started once the
	// page shows the one before it queued). c's session is short so that
	// its node goes soon after it is killed.
	a := startLockProc(t, "a", clients[0])
	aNode := a.waitHolding(ctx, t)
	at := time.Now()
	rec.waitQueue("a holds, nobody waits", func(q lockQueue) bool {
		return len(q.Holders) == 1 && len(q.Waiters) == 0 && a.in(host, q.Holders[0])
	})
	t.Logf("a holds %s; shown after %v", aNode, time.Since(at).Round(time.Millisecond))
	b := startLockProc(t, "b", clients[1])
	rec.waitQueue("b waits", func(q lockQueue) bool { return len(q.Waiters) == 1 && b.in(host, q.Waiters[0]) })
	c := startLockProc(t, "c", clients[2], "-timeout", "2000")
	rec.waitQueue("c waits behind b", func(q lockQueue) bool { return len(q.Waiters) == 2 && c.in(host, q.Waiters[1]) })
	q := rec.queue()
	if !a.in(host, q.Holders[0]) || !strings.Contains(q.Holders[0], hexSession(ctx, t, zc, aNode)) || !b.in(host, q.Waiters[0]) {
		t.Errorf("queue %q: want a (%d, session %s) holding, then b (%d) and c (%d) waiting", q, a.pid(), hexSession(ctx, t, zc, aNode), b.pid(), c.pid())
	}
	ov.waitOverview("a holds, 2 waiters", a, host, hexSession(ctx, t, zc, aNode), 2)
	writeScreenshot(t, "lock-queue-processes", rec.screenshot())
	t.Logf("queue formed at %v: %s", time.Since(start).Round(time.Millisecond), rec.queueText())

	// a's command exits: a releases, b holds, c waits.
	at = time.Now()
	a.release(t)
	bNode := b.waitHolding(ctx, t)
	rec.waitQueue("b holds, c waits", func(q lockQueue) bool {
		return len(q.Holders) == 1 && b.in(host, q.Holders[0]) && strings.Contains(q.Holders[0], hexSession(ctx, t, zc, bNode)) &&
			len(q.Waiters) == 1 && c.in(host, q.Waiters[0])
	})
	ov.waitOverview("b holds, 1 waiter", b, host, hexSession(ctx, t, zc, bNode), 1)
	t.Logf("a released; the pages show b holding %v later", time.Since(at).Round(time.Millisecond))

	// c is killed while it waits: its node goes when its session expires.
	at = time.Now()
	c.kill()
	rec.waitQueue("c's node gone", func(q lockQueue) bool {
		return len(q.Holders) == 1 && b.in(host, q.Holders[0]) && len(q.Waiters) == 0
	})
	ov.waitOverview("b holds, no waiter", b, host, hexSession(ctx, t, zc, bNode), 0)
	t.Logf("c killed (SIGKILL); the pages show its node gone %v later", time.Since(at).Round(time.Millisecond))

	// b releases: the lock has no participants and is no recipe any more.
	at = time.Now()
	b.release(t)
	rec.waitJS("the queue gone from the recipes page", `document.querySelectorAll('section.recipe[data-path="/locks/jobs"]').length === 0 && document.getElementById("live").innerText.includes("No recipes found.")`)
	ov.waitJS("the queue gone from the overview", `document.querySelectorAll('tr.recipe[data-path="/locks/jobs"]').length === 0 && document.getElementById("live").innerText.includes("No lock queues found.")`)
	t.Logf("b released; the pages show no queue %v later", time.Since(at).Round(time.Millisecond))
	for _, p := range []*consoleTab{rec, ov} {
		if !p.sameDocument() {
			t.Errorf("a page of member %d's console was reloaded", p.member)
		}
	}
	t.Logf("done in %v", time.Since(start).Round(time.Millisecond))
}

// lockProc is a `zkgo lock ... /locks/jobs -- sh -c ...` process whose
// command says it holds the lock and then holds it until its standard
// input (a pipe from the test) closes.
type lockProc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *syncBuf // stdout and stderr, zkgo's and the command's
	done  chan struct{}
	err   error // Wait's, once done is closed
}

var holdingRE = regexp.MustCompile(`holding (\S+) token \d+`)

// startLockProc starts the process, connected to server, with flags added
// before the lock path. The test's cleanup releases it (closes its input)
// and, if it has not exited 5 s later, kills it (the supervisor's watchdog
// then kills the command), and reaps it.
func startLockProc(t *testing.T, name, server string, flags ...string) *lockProc {
	t.Helper()
	args := append([]string{"lock", "-server", server}, flags...)
	args = append(args, "/locks/jobs", "--", "sh", "-c", `echo "holding $ZKGO_LOCK_PATH token $ZKGO_FENCING_TOKEN"; read x; exit 0`)
	p := &lockProc{name: name, cmd: exec.Command(binary, args...), out: &syncBuf{}, done: make(chan struct{})}
	p.cmd.Dir = t.TempDir()
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.WaitDelay = 5 * time.Second // the command may outlive zkgo by a moment, holding the output pipe
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("zkgo lock %s (pid %d): %v; its output:\n%s", p.name, p.pid(), p.err, p.out.String())
		}
	})
	return p
}

func (p *lockProc) pid() int { return p.cmd.Process.Pid }

// in reports whether a row's text names the process: zkgo lock's node
// data, its participant id, is host-pid.
func (p *lockProc) in(host, row string) bool {
	return strings.Contains(row, fmt.Sprintf("%s-%d", host, p.pid()))
}

// waitHolding waits until the command says it holds the lock and returns
// the lock node.
func (p *lockProc) waitHolding(ctx context.Context, t *testing.T) string {
	t.Helper()
	for {
		if m := holdingRE.FindStringSubmatch(p.out.String()); m != nil {
			return m[1]
		}
		select {
		case <-p.done:
			t.Fatalf("zkgo lock %s exited (%v) without holding the lock:\n%s", p.name, p.err, p.out.String())
		case <-ctx.Done():
			t.Fatalf("zkgo lock %s did not get the lock:\n%s", p.name, p.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// release closes the command's input (it exits 0) and waits for zkgo lock
// to release the lock and exit 0.
func (p *lockProc) release(t *testing.T) {
	t.Helper()
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("zkgo lock %s did not exit after its command's input closed:\n%s", p.name, p.out.String())
	}
	if p.err != nil {
		t.Fatalf("zkgo lock %s: %v\n%s", p.name, p.err, p.out.String())
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *lockProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// hexSession is the console's name (hexid) for the session that owns node.
func hexSession(ctx context.Context, t *testing.T, zc *zk.Conn, node string) string {
	t.Helper()
	st, err := zc.Exists(ctx, node)
	if err != nil || st == nil {
		t.Fatalf("lock node %s: %v", node, err)
	}
	return fmt.Sprintf("0x%x", uint64(st.EphemeralOwner))
}

// lockQueue is /locks/jobs on the recipes page: the text of each holder's
// and each waiter's row, in service order.
type lockQueue struct {
	Holders []string `json:"holders"`
	Waiters []string `json:"waiters"`
}

const lockQueueJS = `JSON.stringify({
	holders: Array.from(document.querySelectorAll('section.recipe[data-path="/locks/jobs"] tr.holder'), tr => tr.innerText),
	waiters: Array.from(document.querySelectorAll('section.recipe[data-path="/locks/jobs"] tr.waiter'), tr => tr.innerText)})`

func (b *consoleTab) readQueue() (lockQueue, error) {
	var q lockQueue
	s, err := b.eval(lockQueueJS)
	if err == nil {
		err = json.Unmarshal([]byte(s), &q)
	}
	return q, err
}

func (b *consoleTab) queue() lockQueue {
	b.t.Helper()
	q, err := b.readQueue()
	if err != nil {
		b.t.Fatal(err)
	}
	return q
}

func (b *consoleTab) queueText() string {
	s, _ := b.eval(lockQueueJS)
	return s
}

func (b *consoleTab) waitQueue(what string, cond func(lockQueue) bool) {
	b.t.Helper()
	b.wait(what, func() (bool, error) {
		q, err := b.readQueue()
		return err == nil && cond(q), err
	})
}

// waitOverview waits until the overview's row for /locks/jobs shows p
// holding with session and waiters waiting.
func (b *consoleTab) waitOverview(what string, p *lockProc, host, session string, waiters int) {
	b.t.Helper()
	row := `document.querySelector('tr.recipe[data-path="/locks/jobs"]')`
	b.wait("overview: "+what, func() (bool, error) {
		s, err := b.eval(`JSON.stringify(` + row + ` ? Array.from(` + row + `.cells, td => td.innerText.trim()) : [])`)
		if err != nil {
			return false, err
		}
		var cells []string
		if err := json.Unmarshal([]byte(s), &cells); err != nil {
			return false, err
		}
		// lock, kind, holder, session, fencing token, waiters, longest wait
		return len(cells) == 7 && cells[1] == "mutex" && p.in(host, cells[2]) && cells[3] == session && cells[5] == fmt.Sprint(waiters), nil
	})
}
