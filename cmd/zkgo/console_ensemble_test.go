package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/zkgo/zkgo/tests/framework/browsertest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleEnsembleLeaderChange drives the web console of a real
// three-process ensemble in headless Chromium: the overview of each member
// that does not lead shows the leader; the leader is killed (SIGKILL);
// the same pages, without a reload (server-sent events), then show another
// member leading and the killed one unreachable. It skips when no Chromium
// is installed (ZKGO_CHROMIUM chooses one). With
// ZKGO_CONSOLE_SCREENSHOTS=1 it writes docs/console/ensemble-before-kill.png
// and ensemble-after-kill.png (the page of the member that takes over).
func TestConsoleEnsembleLeaderChange(t *testing.T) {
	exe := chromiumPath(t)
	start := time.Now()
	const n = 3
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, _, consoles := startConsoleEnsemble(ctx, t, n)
	lead := waitLeader(ctx, t, m)
	var watchers []int // the members that do not lead
	for i := range n {
		if i != lead {
			watchers = append(watchers, i)
		}
	}
	t.Logf("ensemble up in %v; member %d leads", time.Since(start).Round(time.Millisecond), lead+1)

	// One browser, a tab on the overview of each member that does not
	// lead: after the kill one of them leads and the other follows, and
	// both views must show the change.
	br := startBrowser(ctx, t, exe)
	tabs := make([]*consoleTab, len(watchers))
	for k, i := range watchers {
		tabs[k] = br.tab(i + 1)
		tabs[k].open(consoles[i] + "/")
	}
	t.Logf("browser pages open at %v", time.Since(start).Round(time.Millisecond))
	for _, b := range tabs {
		b.waitJS("stream open", `document.getElementById("live-state").innerText === "live"`)
		b.waitRows(fmt.Sprintf("member %d shown leading", lead+1), func(rows map[int][]string) bool {
			return len(rows) == n && role(rows, lead+1) == "leader" && reachable(rows, lead+1) == "yes" && role(rows, b.member) == "follower"
		})
		b.markPage()
	}
	before := make([][]byte, len(tabs))
	for k, b := range tabs {
		before[k] = b.screenshot()
	}

	killed := time.Now()
	m.procs[lead].kill() // SIGKILL, and waits for the exit
	newLead := waitLeader(ctx, t, m)
	if newLead == lead {
		t.Fatalf("mntr still calls the killed member %d the leader", lead+1)
	}
	t.Logf("member %d killed; member %d leads after %v", lead+1, newLead+1, time.Since(killed).Round(time.Millisecond))
	for _, b := range tabs {
		// A follower hears only from its leader: it shows the other
		// members as followers, not reachable from it. The leader hears
		// every member's answers to its heartbeats: one that does not
		// answer is unknown and unreachable, whatever its match index.
		wantDead := "follower"
		if b.member == newLead+1 {
			wantDead = "unknown"
		}
		b.waitRows(fmt.Sprintf("member %d leading, member %d %s and unreachable", newLead+1, lead+1, wantDead), func(rows map[int][]string) bool {
			return role(rows, newLead+1) == "leader" && reachable(rows, newLead+1) == "yes" &&
				role(rows, lead+1) == wantDead && reachable(rows, lead+1) == "no"
		})
		// The member's own role, above the table, follows too.
		want := "follower"
		if b.member == newLead+1 {
			want = "leader"
		}
		b.waitJS("this member's role", `document.querySelector("#live dl.facts .role").innerText === `+fmt.Sprintf("%q", want))
		if !b.sameDocument() {
			t.Errorf("member %d's page was reloaded", b.member)
		}
		t.Logf("member %d's page shows the change %v after the kill: %s", b.member, time.Since(killed).Round(time.Millisecond), b.rowsText())
	}
	// The pictures for docs/console: the page of the member that took
	// over, before and after.
	for k, b := range tabs {
		if b.member == newLead+1 {
			writeScreenshot(t, "ensemble-before-kill", before[k])
			writeScreenshot(t, "ensemble-after-kill", b.screenshot())
		}
	}
	t.Logf("done in %v", time.Since(start).Round(time.Millisecond))
}

func chromiumPath(t *testing.T) string { return browsertest.Chromium(t) }

// startConsoleEnsemble starts an ensemble of n `zkgo server` processes
// (writeEnsemble's zoo.cfg: tickTime 100 ms, sessions of up to 10 s, an
// AdminServer and so a console on a free port) and waits until it is
// healthy. It returns the members, their client addresses and their
// consoles' root URLs.
func startConsoleEnsemble(ctx context.Context, t *testing.T, n int) (m *memberProcs, clients, consoles []string) {
	t.Helper()
	cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\n")
	clients = make([]string, n)
	for i, l := range lines {
		_, clients[i], _ = strings.Cut(l, ";")
	}
	m = newMemberProcs(t, cfgs)
	for i := range n {
		m.start(i)
	}
	waitHealthy(ctx, t, clients, "starting")
	consoles = make([]string, n)
	for i := range n {
		consoles[i] = consoleURL(ctx, t, m.procs[i].log)
	}
	return m, clients, consoles
}

// browser is a headless Chromium (exe, from chromiumPath) that lives
// until ctx ends or the test is cleaned up; tab opens a tab in it.
type browser struct {
	t    *testing.T
	ctx  context.Context // the first tab's
	tabs int
}

func startBrowser(ctx context.Context, t *testing.T, exe string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return &browser{t: t, ctx: bctx}
}

// tab returns a new tab (the first call: the browser's first tab) for a
// page of member's console.
func (br *browser) tab(member int) *consoleTab {
	ctx := br.ctx
	if br.tabs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = chromedp.NewContext(br.ctx)
		br.t.Cleanup(cancel)
	}
	br.tabs++
	return &consoleTab{t: br.t, ctx: ctx, member: member}
}

// consoleURL returns the console's root URL (the AdminServer's, without
// its command path) from a member's log.
func consoleURL(ctx context.Context, t *testing.T, log *syncBuf) string {
	t.Helper()
	for {
		if mm := adminURLRE.FindStringSubmatch(log.String()); mm != nil {
			u, err := url.Parse(mm[1])
			if err != nil {
				t.Fatal(err)
			}
			return "http://" + u.Host
		}
		if ctx.Err() != nil {
			t.Fatalf("no AdminServer logged:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// consoleTab is a browser tab on member's console.
type consoleTab struct {
	t      *testing.T
	ctx    context.Context
	member int // myid
}

func (b *consoleTab) open(u string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(u)); err != nil {
		b.t.Fatalf("open %s: %v", u, err)
	}
	b.waitJS("page loaded", `document.readyState === "complete"`)
}

func (b *consoleTab) eval(expr string) (string, error) {
	return chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
}

// wait polls cond until it holds, for at most 20 s.
func (b *consoleTab) wait(what string, cond func() (bool, error)) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := cond()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			body, _ := b.eval(`document.body ? document.body.innerText : ""`)
			b.t.Fatalf("member %d's console: %s: not within 20s (err %v); page:\n%s", b.member, what, err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *consoleTab) waitJS(what, expr string) {
	b.t.Helper()
	b.wait(what, func() (bool, error) {
		return chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr))
	})
}

// ensembleRows is the overview's ensemble table as JSON: each row's cells'
// text (id, role, client address, peer address, voting, reachable, match,
// lag).
const ensembleRows = `JSON.stringify(Array.from(document.querySelectorAll("#live table.ensemble tbody tr"), tr => Array.from(tr.cells, td => td.innerText.trim())))`

// rows reads the ensemble table by member id.
func (b *consoleTab) rows() (map[int][]string, error) {
	s, err := b.eval(ensembleRows)
	if err != nil {
		return nil, err
	}
	var cells [][]string
	if err := json.Unmarshal([]byte(s), &cells); err != nil {
		return nil, err
	}
	out := map[int][]string{}
	for _, r := range cells {
		var id int
		if len(r) < 8 {
			return nil, fmt.Errorf("ensemble row %q", r)
		}
		if _, err := fmt.Sscan(r[0], &id); err != nil {
			return nil, fmt.Errorf("ensemble row %q: %v", r, err)
		}
		out[id] = r
	}
	return out, nil
}

func (b *consoleTab) rowsText() string {
	s, _ := b.eval(ensembleRows)
	return s
}

func (b *consoleTab) waitRows(what string, cond func(map[int][]string) bool) {
	b.t.Helper()
	b.wait(what, func() (bool, error) {
		rows, err := b.rows()
		return err == nil && cond(rows), err
	})
}

func role(rows map[int][]string, id int) string {
	if r, ok := rows[id]; ok {
		return r[1]
	}
	return ""
}

func reachable(rows map[int][]string, id int) string {
	if r, ok := rows[id]; ok {
		return r[5]
	}
	return ""
}

// markPage and sameDocument tell whether the page was reloaded meanwhile.
func (b *consoleTab) markPage() {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.__marker = true`)); err != nil {
		b.t.Fatal(err)
	}
}

func (b *consoleTab) sameDocument() bool {
	ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.__marker === true`))
	return err == nil && ok
}

// screenshot returns a PNG of the page with ZKGO_CONSOLE_SCREENSHOTS set
// (as console's browser test does), and nil otherwise.
func (b *consoleTab) screenshot() []byte {
	b.t.Helper()
	if os.Getenv("ZKGO_CONSOLE_SCREENSHOTS") == "" {
		return nil
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	return png
}

// writeScreenshot writes docs/console/name.png, if there is a picture.
func writeScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	if png == nil {
		return
	}
	p := filepath.Join("..", "..", "docs", "console", name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", p)
}
