package leader

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/zk"
)

// LeaderFunc runs while its Selector leads. ctx is cancelled when
// leadership is lost (per the error policy), on Interrupt and on Close;
// the function must then return promptly. Returning gives leadership up.
type LeaderFunc func(ctx context.Context, g *recipe.Grant) error

// Selector takes turns at leadership with the other participants on the
// same path (Curator's LeaderSelector): participants queue in arrival order
// (a Curator InterProcessMutex), and each in turn runs its LeaderFunc.
type Selector struct {
	src  zk.Sessions
	path string
	id   string
	fn   LeaderFunc
	opts options

	mu        sync.Mutex // guards the fields below
	started   bool
	closed    bool
	queued    bool          // will (re)join the queue
	requeue   chan struct{} // wakes the loop when Requeue is called (cap 1)
	leading   *recipe.Grant
	interrupt context.CancelFunc // cancels the running LeaderFunc
	lastErr   error
	cancel    context.CancelFunc
	loopDone  chan struct{}
}

// NewSelector returns a selector on path; id is stored in its node.
func NewSelector(src zk.Sessions, path, id string, fn LeaderFunc, opts ...Option) *Selector {
	return &Selector{src: src, path: path, id: id, fn: fn, opts: buildOptions(opts), requeue: make(chan struct{}, 1)}
}

// Start joins the queue once (and again after each turn with
// WithAutoRequeue).
func (s *Selector) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return ErrLatchState
	}
	s.started, s.queued = true, true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.loopDone = cancel, make(chan struct{})
	go s.run(ctx)
	return nil
}

// Requeue joins the queue again after a turn; it reports false if the
// selector is already queued or leading, or not running.
func (s *Selector) Requeue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.closed || s.queued {
		return false
	}
	s.queued = true
	select {
	case s.requeue <- struct{}{}:
	default:
	}
	return true
}

// Interrupt cancels the running LeaderFunc's ctx (if any).
func (s *Selector) Interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.interrupt != nil {
		s.interrupt()
	}
}

// HasLeadership reports whether the LeaderFunc is running and leadership is
// held.
func (s *Selector) HasLeadership() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leading != nil && s.leading.Held()
}

// Err returns the last error of the LeaderFunc or of joining the queue.
func (s *Selector) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Participants returns the queue in order; the first is the leader.
func (s *Selector) Participants(ctx context.Context) ([]recipe.Participant, error) {
	return recipeutil.Participants(ctx, s.src.Current(), s.path, []string{"lock-"}, nil)
}

// Leader returns the current leader (ok false if there is none).
func (s *Selector) Leader(ctx context.Context) (p recipe.Participant, ok bool, err error) {
	ps, err := s.Participants(ctx)
	if err != nil || len(ps) == 0 {
		return recipe.Participant{}, false, err
	}
	return ps[0], true, nil
}

// Close leaves the queue, interrupting the LeaderFunc if it runs, and waits
// for it to return.
func (s *Selector) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cancel, done := s.cancel, s.loopDone
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

func (s *Selector) run(ctx context.Context) {
	defer close(s.loopDone)
	m := lock.NewMutex(s.src, s.path, lock.WithData([]byte(s.id)), lock.WithPolicy(s.opts.policy), lock.WithACL(s.opts.acl))
	for ctx.Err() == nil {
		s.mu.Lock()
		queued := s.queued
		s.mu.Unlock()
		if !queued {
			select {
			case <-s.requeue:
				continue
			case <-ctx.Done():
				return
			}
		}
		conn := s.src.Current()
		g, err := m.Lock(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.setErr(err)
			if permanent(err) {
				if !nextSession(ctx, s.src, conn) {
					return
				}
				continue
			}
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		lctx, interrupt := context.WithCancel(ctx)
		go func() {
			select {
			case <-g.Done():
				interrupt()
			case <-lctx.Done():
			}
		}()
		s.mu.Lock()
		s.leading, s.interrupt = g, interrupt
		s.queued = s.opts.autoRequeue
		s.mu.Unlock()
		ferr := s.fn(lctx, g)
		interrupt()
		s.mu.Lock()
		s.leading, s.interrupt = nil, nil
		s.mu.Unlock()
		if ferr != nil && !errors.Is(ferr, context.Canceled) {
			s.setErr(ferr)
		}
		uerr := m.Unlock(context.WithoutCancel(ctx))
		if uerr != nil && permanent(uerr) {
			s.setErr(uerr)
			if !nextSession(ctx, s.src, conn) {
				return
			}
			continue
		}
		if permanent(g.Err()) {
			s.setErr(g.Err())
			if !nextSession(ctx, s.src, conn) {
				return
			}
		}
	}
}

func (s *Selector) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}
