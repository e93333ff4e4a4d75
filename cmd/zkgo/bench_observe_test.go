package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The bench observers scrape every interval, and keep a console open: its
// event stream, and the page fetched again on each change event.
func TestBenchObservers(t *testing.T) {
	var scrapes, pages, streams atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		scrapes.Add(1)
		fmt.Fprintln(w, "znode_count 5")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		pages.Add(1)
		fmt.Fprintln(w, "<html>overview</html>")
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page") != "overview" {
			http.Error(w, "no page", http.StatusBadRequest)
			return
		}
		streams.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", i)
		}
		fmt.Fprint(w, ": heartbeat\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()

	ctx, cancel := context.WithCancel(context.Background())
	o, err := startObservers(ctx, hs.URL+"/metrics", 10*time.Millisecond, hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); scrapes.Load() < 3 || pages.Load() < 4; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d scrapes, %d page loads", scrapes.Load(), pages.Load())
		}
	}
	cancel()
	var out strings.Builder
	o.report(&out)
	for _, want := range []string{"scrapes: ", "(0 failed)", "console: ", "3 change events on 1 streams (0 failed)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report %q lacks %q", out.String(), want)
		}
	}
	if _, err := startObservers(context.Background(), "localhost:7000/metrics", time.Second, ""); err == nil {
		t.Error("a -scrape URL without a scheme was accepted")
	}
}
