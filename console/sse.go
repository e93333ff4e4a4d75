package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// Live updates: a page with a stream URL opens an EventSource on
// /events; each "change" event makes the page fetch itself again and swap
// its live part (assets/static/console.js). A stream carries no data, only
// "something changed", so its memory is bounded whatever the event rate:
// the watch's events are drained at once into a one-slot signal.
//
//	tree pages:     a persistent (non-recursive) watch on the viewed node
//	                through the shared session: its data, its children
//	overview pages: the overview feed, one goroutine for all such streams,
//	                which polls Status, re-scans the recipes and watches
//	                the recipes' nodes
//
// Bounds: Config.MaxStreams streams at once (more get 503), each for at
// most Config.StreamMaxAge (the browser then reconnects), a write that
// does not complete within streamWriteWait ends the stream, and a comment
// line every heartbeat keeps proxies from closing it.

const heartbeat = 15 * time.Second

func (c *Console) eventsURL(kind, p string) string {
	u := c.cfg.BasePath + "/events?page=" + kind
	if p != "" {
		u += "&path=" + url.QueryEscape(p)
	}
	return u
}

func (c *Console) serveEvents(w http.ResponseWriter, r *http.Request) {
	select {
	case c.streams <- struct{}{}:
		defer func() { <-c.streams }()
	default:
		w.Header().Set("Retry-After", "30")
		http.Error(w, "too many live streams", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), c.cfg.StreamMaxAge)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()

	var signal <-chan struct{}
	var ended <-chan struct{}
	q := r.URL.Query()
	switch q.Get("page") {
	case "tree":
		p := q.Get("path")
		if !validPath(p) {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
		sctx, scancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
		conn, err := c.shared.get(sctx)
		var wt *zk.Watcher
		if err == nil {
			wt, err = conn.AddWatch(sctx, p, zk.AddWatchPersistent)
		}
		scancel()
		if err != nil {
			http.Error(w, "watch: "+err.Error(), http.StatusBadGateway)
			return
		}
		defer wt.Close()
		sig, done := make(chan struct{}, 1), make(chan struct{})
		go drain(wt.Events(), sig, done)
		signal, ended = sig, done
	case "overview":
		sig, unsub := c.feed.subscribe()
		defer unsub()
		signal = sig
	default:
		http.Error(w, "unknown page", http.StatusBadRequest)
		return
	}

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(s string) bool {
		rc.SetWriteDeadline(time.Now().Add(streamWriteWait))
		if _, err := fmt.Fprint(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: 2000\n: live\n\n") {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-ended:
			send("event: ended\ndata: watch ended\n\n")
			return
		case <-signal:
			n++
			if !send(fmt.Sprintf("event: change\ndata: %d\n\n", n)) {
				return
			}
		case <-tick.C:
			if !send(": ping\n\n") {
				return
			}
		}
	}
}

// drain turns a watch's events into one-slot signals; done closes when the
// watch ends.
func drain(evs <-chan zk.Event, sig chan<- struct{}, done chan<- struct{}) {
	defer close(done)
	for range evs {
		select {
		case sig <- struct{}{}:
		default:
		}
	}
}

// feed watches what the overview shows, for every overview stream at
// once: it runs while at least one is subscribed.
type feed struct {
	c *Console
	// mu guards subs and running.
	mu      sync.Mutex
	subs    map[chan struct{}]struct{}
	running bool
}

const (
	feedStatusEvery = 2 * time.Second
	feedMinScan     = time.Second // between two scans, however many events
	// feedScanDuty: the gap between two scans is also at least this many
	// times the last scan's duration, so that a large tree is scanned at
	// most a tenth of the time however busy its locks are.
	feedScanDuty   = 10
	feedMaxWatches = 256 // recipe nodes watched at once
)

func newFeed(c *Console) *feed { return &feed{c: c, subs: map[chan struct{}]struct{}{}} }

// subscribe returns a one-slot channel signalled after each change.
func (f *feed) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	f.subs[ch] = struct{}{}
	start := !f.running && f.c.ctx.Err() == nil
	if start {
		f.running = true
	}
	f.mu.Unlock()
	if start {
		f.c.wg.Add(1)
		go f.run()
	}
	return ch, func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}
}

func (f *feed) broadcast() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// idle stops the feed if nobody listens; it reports whether it did.
func (f *feed) idle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) == 0 {
		f.running = false
		return true
	}
	return false
}

// run is the feed's goroutine: it owns watches, lastStatus and lastScan.
func (f *feed) run() {
	c := f.c
	defer c.wg.Done()
	watches := map[string]*zk.Watcher{}
	defer func() {
		for _, w := range watches {
			w.Close()
		}
	}()
	dirty := make(chan struct{}, 1)
	statusT := time.NewTicker(feedStatusEvery)
	defer statusT.Stop()
	rescanT := time.NewTicker(max(c.cfg.ScanMaxAge, feedMinScan))
	defer rescanT.Stop()
	var lastStatus, lastScan string
	var lastScanAt time.Time
	gap := feedMinScan // the least time between two scans
	rescan := func() {
		lastScanAt = time.Now()
		res, err := c.scan(c.ctx, 0)
		if err != nil {
			return
		}
		gap = max(feedMinScan, feedScanDuty*res.Took)
		if fp := scanFingerprint(res); fp != lastScan {
			lastScan = fp
			f.broadcast()
		}
		want := watchTargets(res)
		for p, w := range watches {
			if !want[p] {
				w.Close()
				delete(watches, p)
			}
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RequestTimeout)
		defer cancel()
		conn, err := c.shared.get(ctx)
		if err != nil {
			return
		}
		for p := range want {
			if watches[p] != nil {
				continue
			}
			w, err := conn.AddWatch(ctx, p, zk.AddWatchPersistent)
			if err != nil {
				continue
			}
			watches[p] = w
			go drain(w.Events(), dirty, make(chan struct{}))
		}
	}
	rescan()
	// soon fires gap after a scan when an event came too early for
	// another; its channel is nil while it is not armed.
	var soon *time.Timer
	var soonC <-chan time.Time
	for {
		select {
		case <-soonC:
			soonC = nil
			rescan()
		case <-dirty:
			if wait := gap - time.Since(lastScanAt); wait > 0 {
				if soonC == nil {
					soon = time.NewTimer(wait)
					soonC = soon.C
				}
				continue
			}
			rescan()
		case <-c.ctx.Done():
			return
		case <-statusT.C:
			if f.idle() {
				return
			}
			if c.cfg.Status != nil {
				ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RequestTimeout)
				m, err := c.cfg.Status.Member(ctx)
				cancel()
				fp := fmt.Sprintf("%+v %v", m, err)
				if fp != lastStatus {
					lastStatus = fp
					f.broadcast()
				}
			}
		case <-rescanT.C:
			if time.Since(lastScanAt) >= gap {
				rescan()
			}
		}
	}
}

// watchTargets are the nodes whose children make up the recipes found.
func watchTargets(res *ScanResult) map[string]bool {
	want := map[string]bool{}
	for _, r := range res.Recipes {
		if len(want) >= feedMaxWatches {
			break
		}
		if r.Kind == KindSemaphore {
			want[joinPath(r.Path, leasesDir)] = true
			want[joinPath(r.Path, locksDir)] = true
		} else {
			want[r.Path] = true
		}
	}
	return want
}

// scanFingerprint is what the overview shows of a scan, without the ages
// (the page counts those up itself).
func scanFingerprint(res *ScanResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %d %q\n", res.Truncated, len(res.Recipes), res.Errors)
	for _, r := range res.Recipes {
		fmt.Fprintf(&b, "%s %s:", r.Kind, r.Path)
		for _, l := range [][]Participant{r.Holders, r.Waiters} {
			for _, p := range l {
				fmt.Fprintf(&b, " %s/%x", p.Node.Name, p.Node.Data)
			}
			b.WriteString(" |")
		}
		b.WriteByte('\n')
	}
	return b.String()
}
