package zk

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// Sessions is where long-lived recipes get their Conn: Current is the Conn
// to use now, and Next, called once Current's session has ended, waits for
// the Conn of the next session. A *Conn is a Sessions whose session is the
// only one (Next fails with the session's error); a *Redialer starts a new
// session after each expiry, as Curator's client does.
type Sessions interface {
	// Current returns the Conn to use now. It never returns nil.
	Current() *Conn
	// Next returns the first Conn after `after` (whose session has ended)
	// once its setup functions have run, or an error if there will be
	// none (closed) or ctx ends first.
	Next(ctx context.Context, after *Conn) (*Conn, error)
	// DeleteGuaranteed is Conn.DeleteGuaranteed (a Redialer's carries
	// the delete over to its next sessions).
	DeleteGuaranteed(ctx context.Context, path string, version int32) error
}

// Current returns c: a Conn is the only Conn of its Sessions.
func (c *Conn) Current() *Conn { return c }

// Next returns the error that ended c's session (ErrSessionExpired or
// ErrClosing), waiting for it if the session has not ended yet: a Conn has
// no next session.
func (c *Conn) Next(ctx context.Context, after *Conn) (*Conn, error) {
	select {
	case <-c.runDone:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.mu.Lock()
	err := c.termErr
	c.mu.Unlock()
	if err == nil {
		err = &Error{Err: ErrClosing}
	}
	return nil, err
}

// A SetupFunc prepares a new session: it (re)creates what depends on the
// session, such as ephemeral nodes and watches. ctx ends when the Redialer
// is closed.
type SetupFunc func(ctx context.Context, c *Conn) error

// Redialer keeps a process connected across session expiries, as Curator's
// client does: when its Conn reports StateLost it closes that Conn, connects
// again with the same servers (and the members its Conn learned by
// ensemble tracking) and options (a new session), runs the
// registered setup functions on the new Conn in registration order, and
// only then makes it Current. Programs that run for a long time then need
// no restart logic of their own.
//
// What survives an expiry is what the setup functions rebuild: ephemeral
// nodes, watches and locks of the old session are gone, and the old Conn
// fails every operation with ErrSessionExpired. Recipes that take a
// Sessions (recipe/node, recipe/discovery) follow the Redialer to each new
// session themselves.
//
// A setup function that fails with a retryable error (IsRetryable) is run
// again after a pause; any other error is logged and the next one runs. A
// Redialer's methods may be called from any goroutine.
type Redialer struct {
	servers []string
	opts    []Option
	ctx     context.Context // canceled by Close
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returns

	// mu guards conn, changed, setups and nextID.
	mu      sync.Mutex
	conn    *Conn
	changed chan struct{} // closed (and replaced) when conn is replaced or the Redialer closes
	setups  []setupEntry
	nextID  int
}

type setupEntry struct {
	id int
	fn SetupFunc
}

// Redial connects like Connect and returns a Redialer over the new Conn.
func Redial[S string | []string](ctx context.Context, servers S, opts ...Option) (*Redialer, error) {
	var list []string
	switch v := any(servers).(type) {
	case string:
		list = []string{v}
	case []string:
		list = slices.Clone(v)
	}
	c, err := Connect(ctx, list, opts...)
	if err != nil {
		return nil, err
	}
	r := &Redialer{servers: list, opts: slices.Clone(opts), conn: c, changed: make(chan struct{}), done: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.run()
	return r, nil
}

// Current returns the Conn of the current session.
func (r *Redialer) Current() *Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conn
}

// Next waits until the current Conn is not `after` and returns it, or
// ErrClosing once the Redialer is closed.
func (r *Redialer) Next(ctx context.Context, after *Conn) (*Conn, error) {
	for {
		r.mu.Lock()
		c, ch := r.conn, r.changed
		r.mu.Unlock()
		if r.ctx.Err() != nil {
			return nil, &Error{Err: ErrClosing}
		}
		if c != after {
			return c, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// OnSession registers fn to run at the start of every later session, and
// runs it once now on the current Conn (returning its error; fn stays
// registered either way). remove unregisters it.
func (r *Redialer) OnSession(ctx context.Context, fn SetupFunc) (remove func(), err error) {
	r.mu.Lock()
	r.nextID++
	id := r.nextID
	r.setups = append(r.setups, setupEntry{id: id, fn: fn})
	c := r.conn
	r.mu.Unlock()
	remove = func() {
		r.mu.Lock()
		r.setups = slices.DeleteFunc(r.setups, func(e setupEntry) bool { return e.id == id })
		r.mu.Unlock()
	}
	return remove, fn(ctx, c)
}

// DeleteGuaranteed is Conn.DeleteGuaranteed on the current Conn, carried
// over to the next sessions: a background delete abandoned because the
// session ended is started again on the next Conn. (Ephemeral nodes need
// no such care: they end with their session.) It stops when the Redialer
// is closed.
func (r *Redialer) DeleteGuaranteed(ctx context.Context, path string, version int32) error {
	c := r.Current()
	err := c.Delete(ctx, path, version)
	if err == nil || !(unknownOutcome(ctx, err) || errors.Is(err, ErrSessionExpired)) {
		return err
	}
	r.carry(c, path, version)
	return err
}

// carry runs a guaranteed delete on c, and on the next Conn if c's session
// ends first.
func (r *Redialer) carry(c *Conn, path string, version int32) {
	c.startGuaranteed(path, version, func(err error) {
		if err == nil || !errors.Is(err, ErrSessionExpired) {
			return
		}
		if next, nerr := r.Next(r.ctx, c); nerr == nil {
			r.carry(next, path, version)
		}
	})
}

// Close stops redialing and closes the current Conn.
func (r *Redialer) Close() error {
	r.cancel()
	<-r.done
	r.mu.Lock()
	c := r.conn
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	return c.Close()
}

// run watches the current Conn and replaces it when its session is lost.
func (r *Redialer) run() {
	defer close(r.done)
	for {
		c := r.Current()
		states, stop := c.NotifyState()
		lost := false
		if c.State() == StateLost {
			lost = true
		}
		for !lost {
			select {
			case s, ok := <-states:
				lost = !ok || s == StateLost
			case <-r.ctx.Done():
				stop()
				return
			}
		}
		stop()
		c.Close()
		next := r.dial(c)
		if next == nil {
			return // closed
		}
		r.setup(next)
		r.mu.Lock()
		r.conn = next
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
		next.cfg.logger.Info("zk: new session after expiry", "session", next.SessionID())
	}
}

// dial connects until it succeeds or the Redialer is closed (nil). With
// ensemble tracking, the servers the previous Conn knew last (the members
// it learned) are tried along with the original ones.
func (r *Redialer) dial(prev *Conn) *Conn {
	servers := r.servers
	if tracked := prev.Servers(); !prev.cfg.noTrack && len(tracked) > 0 {
		servers = append(r.servers[:len(r.servers):len(r.servers)], tracked...)
	}
	pause := 10 * time.Millisecond
	for {
		c, err := Connect(r.ctx, servers, r.opts...)
		if err == nil {
			return c
		}
		if !r.sleep(pause) {
			return nil
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// setup runs the setup functions on c, in registration order.
func (r *Redialer) setup(c *Conn) {
	r.mu.Lock()
	setups := slices.Clone(r.setups)
	r.mu.Unlock()
	for _, e := range setups {
		pause := 10 * time.Millisecond
		for {
			err := e.fn(r.ctx, c)
			if err == nil || r.ctx.Err() != nil {
				break
			}
			if !IsRetryable(err) || c.State() == StateLost {
				c.cfg.logger.Warn("zk: session setup failed", "err", err)
				break
			}
			if !r.sleep(pause) {
				return
			}
			pause = min(2*pause, time.Second)
		}
	}
}

func (r *Redialer) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.ctx.Done():
		return false
	}
}
