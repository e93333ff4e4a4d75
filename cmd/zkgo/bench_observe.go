package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Observers for `zkgo bench`: what operators run beside the load — a
// Prometheus scrape every second, the web console open on its overview —
// so that a run with them can be compared with one without (the metrics
// and the console must not slow the request path).

// observers runs the -scrape and -console observers until ctx ends.
type observers struct {
	client *http.Client
	wg     sync.WaitGroup

	mu      sync.Mutex // guards the counts below
	scrapes []time.Duration
	scrapeErrors,
	pageLoads, pageErrors, events, streams, streamErrors int
}

// startObservers starts one scraper per URL of scrape (comma-separated)
// and, if console is set, a console client: the overview's event stream,
// and the page fetched again on each change event, as the console's
// script does.
func startObservers(ctx context.Context, scrape string, every time.Duration, console string) (*observers, error) {
	o := &observers{client: &http.Client{Timeout: 10 * time.Second}}
	for _, u := range strings.Split(scrape, ",") {
		if u = strings.TrimSpace(u); u == "" {
			continue
		}
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("-scrape %q: not an http(s) URL", u)
		}
		o.wg.Add(1)
		go o.scrapeLoop(ctx, u, every)
	}
	if console != "" {
		if !strings.HasPrefix(console, "http://") && !strings.HasPrefix(console, "https://") {
			return nil, fmt.Errorf("-console %q: not an http(s) URL", console)
		}
		base := strings.TrimSuffix(console, "/") + "/"
		o.wg.Add(1)
		go o.consoleLoop(ctx, base)
	}
	return o, nil
}

func (o *observers) scrapeLoop(ctx context.Context, url string, every time.Duration) {
	defer o.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		start := time.Now()
		err := o.get(ctx, url, nil)
		o.mu.Lock()
		if err != nil && ctx.Err() == nil {
			o.scrapeErrors++
		} else if err == nil {
			o.scrapes = append(o.scrapes, time.Since(start))
		}
		o.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// get fetches url and reads the body to its end.
func (o *observers) get(ctx context.Context, url string, hdr map[string]string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// consoleLoop keeps the console's overview open: its event stream, and a
// refresh of the page on each "change" event. A stream that ends (the
// console bounds their age) is opened again.
func (o *observers) consoleLoop(ctx context.Context, base string) {
	defer o.wg.Done()
	page := func() {
		err := o.get(ctx, base, map[string]string{"X-Console-Refresh": "1"})
		o.mu.Lock()
		if err != nil && ctx.Err() == nil {
			o.pageErrors++
		} else if err == nil {
			o.pageLoads++
		}
		o.mu.Unlock()
	}
	page()
	for ctx.Err() == nil {
		err := o.stream(ctx, base+"events?page=overview", page)
		if ctx.Err() != nil {
			return
		}
		o.mu.Lock()
		if err != nil {
			o.streamErrors++
		}
		o.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// stream reads one event stream until it ends, calling onChange for each
// event.
func (o *observers) stream(ctx context.Context, url string, onChange func()) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{}).Do(req) // no timeout: the stream is long
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	o.mu.Lock()
	o.streams++
	o.mu.Unlock()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		if sc.Text() == "event: change" {
			o.mu.Lock()
			o.events++
			o.mu.Unlock()
			onChange()
		}
	}
	return sc.Err()
}

// report waits for the observers to stop (after their ctx ended) and
// prints what they did.
func (o *observers) report(w io.Writer) {
	o.wg.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	if n := len(o.scrapes) + o.scrapeErrors; n > 0 {
		s := slices.Clone(o.scrapes)
		slices.Sort(s)
		line := fmt.Sprintf("scrapes: %d (%d failed)", len(s), o.scrapeErrors)
		if len(s) > 0 {
			line += fmt.Sprintf(", p50 %v, max %v", s[len(s)/2].Round(time.Microsecond), s[len(s)-1].Round(time.Microsecond))
		}
		fmt.Fprintln(w, line)
	}
	if o.pageLoads+o.pageErrors+o.streams+o.streamErrors > 0 {
		fmt.Fprintf(w, "console: %d page loads (%d failed), %d change events on %d streams (%d failed)\n",
			o.pageLoads, o.pageErrors, o.events, o.streams, o.streamErrors)
	}
}
