// Package children follows the children of one node and their data: a
// view for recipe/node's GroupMember and recipe/discovery's providers.
//
// After every notification it reads again: the children with a children
// watch, then each child's data with a data watch, so a change made after
// a read always triggers the next read and none is missed between two
// reads (only intermediate states may be skipped). Across sessions (a
// *zk.Redialer) it starts again on the next Conn.
package children

import (
	"context"
	"errors"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// Watcher keeps a view of path's children. One goroutine owns the
// reading; the accessors may be called from any goroutine.
type Watcher struct {
	src  zk.Sessions
	path string
	stop chan struct{}
	done chan struct{}
	once sync.Once

	// mu guards view, ready, changed and err.
	mu      sync.Mutex
	view    map[string][]byte
	ready   bool
	changed chan struct{} // closed (and replaced) when view changes or the watcher stops
	err     error
}

// Start starts following path's children. The path need not exist (the
// view is then empty).
func Start(src zk.Sessions, path string) *Watcher {
	w := &Watcher{src: src, path: path, stop: make(chan struct{}), done: make(chan struct{}), changed: make(chan struct{})}
	go w.run()
	return w
}

// View returns the children's names (sorted) and data as last read, and a
// channel closed at the next change (or when the watcher stops). The map is
// the caller's.
func (w *Watcher) View() (names []string, data map[string][]byte, changed <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data = maps.Clone(w.view)
	if data == nil {
		data = map[string][]byte{}
	}
	for n := range data {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, data, w.changed
}

// WaitReady waits for the first complete read.
func (w *Watcher) WaitReady(ctx context.Context) error {
	for {
		w.mu.Lock()
		ready, ch, err := w.ready, w.changed, w.err
		w.mu.Unlock()
		if ready {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Err returns why the watcher stopped (nil while it runs, and after Close).
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close stops the watcher.
func (w *Watcher) Close() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

func (w *Watcher) publish(view map[string][]byte, err error) {
	w.mu.Lock()
	if view != nil {
		w.ready = true
		if maps.EqualFunc(view, w.view, func(a, b []byte) bool { return string(a) == string(b) }) && w.view != nil {
			w.mu.Unlock()
			return
		}
		w.view = view
	}
	if err != nil {
		w.err = err
	}
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

func (w *Watcher) run() {
	defer close(w.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.stop:
		case <-w.done:
		}
		cancel()
	}()
	conn := w.src.Current()
	pause := 10 * time.Millisecond
	for {
		round, endRound := context.WithCancel(ctx)
		wake, err := w.read(ctx, round, conn)
		switch {
		case ctx.Err() != nil:
			endRound()
			return
		case err == nil:
			pause = 10 * time.Millisecond
			select {
			case <-wake:
				endRound() // the forwarders of this round's watches stop
				continue
			case <-ctx.Done():
				endRound()
				return
			}
		case errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing):
			endRound()
			next, nerr := w.src.Next(ctx, conn)
			if nerr != nil {
				if ctx.Err() == nil {
					w.publish(nil, nerr)
				}
				return
			}
			conn = next
		default: // a connection loss: the Conn reconnects; read again
			endRound()
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			pause = min(2*pause, time.Second)
		}
	}
}

// read reads the view once, publishes it, and returns a channel that
// receives when any of the watches it set fires (until round ends).
func (w *Watcher) read(ctx, round context.Context, conn *zk.Conn) (<-chan struct{}, error) {
	wake := make(chan struct{}, 1)
	forward := func(ev <-chan zk.Event) {
		go func() {
			select {
			case <-ev:
				select {
				case wake <- struct{}{}:
				default:
				}
			case <-round.Done():
			}
		}()
	}
	names, _, ev, err := conn.ChildrenW(ctx, w.path)
	if errors.Is(err, zk.ErrNoNode) {
		st, eev, eerr := conn.ExistsW(ctx, w.path)
		if eerr != nil {
			return nil, eerr
		}
		forward(eev)
		if st == nil {
			w.publish(map[string][]byte{}, nil)
		} else {
			wake <- struct{}{} // created meanwhile: read again
		}
		return wake, nil
	}
	if err != nil {
		return nil, err
	}
	forward(ev)
	view := make(map[string][]byte, len(names))
	for _, n := range names {
		data, _, dev, err := conn.GetW(ctx, w.path+"/"+n)
		if errors.Is(err, zk.ErrNoNode) {
			continue // deleted since: the children watch fires
		}
		if err != nil {
			return nil, err
		}
		forward(dev)
		view[n] = data
	}
	w.publish(view, nil)
	return wake, nil
}
