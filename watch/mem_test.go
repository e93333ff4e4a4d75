package watch

import (
	"fmt"
	"runtime"
	"testing"
)

// benchHeapPerWatch reports the heap a Manager holds per registration for
// watchers watchers each holding a one-shot data watch on each of the
// paths path(i, 0), …, path(i, perWatcher-1): HeapAlloc after a GC, less
// the same before the watches were added. The watchers and the path
// strings exist before (the server holds them anyway: the connection and
// the request's path), so only the tables' own memory counts.
func benchHeapPerWatch(b *testing.B, watchers, perWatcher int, path func(i, j int) string) {
	ws := make([]*recorder, watchers)
	ps := make([][]string, watchers)
	for i := range ws {
		ws[i] = newRecorder(int64(i))
		ps[i] = make([]string, perWatcher)
		for j := range ps[i] {
			ps[i][j] = path(i, j)
		}
	}
	var before, after runtime.MemStats
	var perWatch float64
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		m := NewManager()
		for i, w := range ws {
			for _, p := range ps[i] {
				m.AddData(p, w)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if got := m.Count(); got != watchers*perWatcher {
			b.Fatalf("Count()=%d, want %d", got, watchers*perWatcher)
		}
		perWatch = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(watchers*perWatcher)
		runtime.KeepAlive(m)
	}
	b.ReportMetric(perWatch, "B/watch")
}

// BenchmarkAddOnePathPerWatcher: 100k watchers, each watching a path of
// its own (a path with one watcher, a watcher with one path).
func BenchmarkAddOnePathPerWatcher(b *testing.B) {
	benchHeapPerWatch(b, 100000, 1, func(i, _ int) string { return fmt.Sprintf("/n/%d", i) })
}

// BenchmarkAddWatchersOnOnePath: 100k watchers all watching one path (the
// watch fan-out of tools/compare).
func BenchmarkAddWatchersOnOnePath(b *testing.B) {
	benchHeapPerWatch(b, 100000, 1, func(int, int) string { return "/fanout" })
}

// BenchmarkAddFewPathsPerWatcher: 20k watchers each watching 4 of 1000
// shared paths.
func BenchmarkAddFewPathsPerWatcher(b *testing.B) {
	benchHeapPerWatch(b, 20000, 4, func(i, j int) string { return fmt.Sprintf("/n/%d", (i*7+j*131)%1000) })
}

// BenchmarkAddManyPathsPerWatcher: 1000 watchers each watching 32 paths
// of its own.
func BenchmarkAddManyPathsPerWatcher(b *testing.B) {
	benchHeapPerWatch(b, 1000, 32, func(i, j int) string { return fmt.Sprintf("/n/%d/%d", i, j) })
}

// BenchmarkTriggerFanOut: 10k watchers with a one-shot data watch on one
// path, set again and fired each op.
func BenchmarkTriggerFanOut(b *testing.B) {
	m := NewManager()
	ws := make([]*recorder, 10000)
	for i := range ws {
		ws[i] = newRecorder(int64(i))
	}
	evs := changed("/fanout")
	for b.Loop() {
		for _, w := range ws {
			m.AddData("/fanout", w)
		}
		m.Trigger(evs)
		b.StopTimer()
		for _, w := range ws {
			w.take()
		}
		b.StartTimer()
	}
}
