package leader

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/zk"
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.30.0 -type=ElectionEventType -trimprefix=Election

// ElectionEventType is an event of ZooKeeper's LeaderElectionSupport recipe.
type ElectionEventType int

// The events, in the order an election goes through them.
const (
	ElectionStart ElectionEventType = iota
	ElectionOfferStart
	ElectionOfferComplete
	ElectionDetermineStart
	ElectionDetermineComplete
	ElectionElectedStart
	ElectionElectedComplete
	ElectionReadyStart
	ElectionReadyComplete
	ElectionFailed
	ElectionStopStart
	ElectionStopComplete
)

// ElectionEvent is one event of an Election.
type ElectionEvent struct {
	Type ElectionEventType
	// Grant is the leadership, on ElectionElectedComplete.
	Grant *recipe.Grant
	// Err says what failed, on ElectionFailed.
	Err error
}

const offerPrefix = "n_"

// Election is ZooKeeper's LeaderElectionSupport recipe: each participant
// offers itself with an ephemeral sequential node "<root>/n_<seq>" holding
// its host name; the lowest sequence number is elected; every other
// participant watches the offer just ahead of its own ("ready") and
// determines the election again when that offer goes.
//
// Beyond the Java recipe: leadership is a recipe.Grant (fencing token, lost
// channel); when it is lost (per the error policy) the election sends
// ElectionFailed and, if the session survives, determines the election
// again; a create whose reply was lost is found again by the session's
// ephemeral owner instead of being left behind.
type Election struct {
	src  zk.Sessions
	conn *zk.Conn // src.Current() at Start
	root string
	host string
	opts options

	mu       sync.Mutex // guards the fields below
	started  bool
	stopped  bool
	offer    string // our node's path
	grant    *recipe.Grant
	events   *recipeutil.Stream[ElectionEvent]
	cancel   context.CancelFunc
	loopDone chan struct{}
}

// NewElection returns an election under root for a participant named
// hostName.
func NewElection(src zk.Sessions, root, hostName string, opts ...Option) *Election {
	return &Election{src: src, conn: src.Current(), root: root, host: hostName, opts: buildOptions(opts), events: recipeutil.NewStream[ElectionEvent]()}
}

// Events returns the election's events; receive until it is closed (after
// Stop).
func (e *Election) Events() <-chan ElectionEvent { return e.events.C() }

// Start joins the election in the background. The root must exist, as with
// the Java recipe.
func (e *Election) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started || e.stopped {
		return ErrLatchState
	}
	e.started = true
	e.conn = e.src.Current()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.loopDone = cancel, make(chan struct{})
	e.events.Send(ElectionEvent{Type: ElectionStart})
	go e.run(ctx)
	return nil
}

// Stop withdraws the offer and ends the election (events ElectionStopStart
// and ElectionStopComplete, then the channel closes).
func (e *Election) Stop(ctx context.Context) error {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil
	}
	e.stopped = true
	cancel, done := e.cancel, e.loopDone
	e.mu.Unlock()
	e.events.Send(ElectionEvent{Type: ElectionStopStart})
	if cancel != nil {
		cancel()
		<-done
	}
	e.mu.Lock()
	g, offer := e.grant, e.offer
	e.grant, e.offer = nil, ""
	e.mu.Unlock()
	if g != nil {
		g.Release()
	}
	var err error
	if offer != "" {
		err = recipeutil.DeleteNode(ctx, e.conn, offer)
	}
	if err != nil {
		e.events.Send(ElectionEvent{Type: ElectionFailed, Err: err})
	}
	e.events.Send(ElectionEvent{Type: ElectionStopComplete})
	e.events.Close()
	return err
}

// Grant returns the leadership while elected, or nil.
func (e *Election) Grant() *recipe.Grant {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.grant
}

// LeaderHostName returns the host name in the lowest offer ("" if none).
func (e *Election) LeaderHostName(ctx context.Context) (string, error) {
	offers, err := e.offers(ctx)
	if err != nil || len(offers) == 0 {
		return "", err
	}
	data, _, err := e.conn.Get(ctx, e.root+"/"+offers[0])
	if errors.Is(err, zk.ErrNoNode) {
		return e.LeaderHostName(ctx)
	}
	return string(data), err
}

// offers lists the offers sorted by their sequence number, as the Java
// recipe does (ignoring names that are not offers).
func (e *Election) offers(ctx context.Context) ([]string, error) {
	children, _, err := e.conn.Children(ctx, e.root)
	if err != nil {
		return nil, err
	}
	seq := func(n string) int64 {
		v, _ := strconv.ParseInt(n[len(offerPrefix):], 10, 64)
		return v
	}
	children = slices.DeleteFunc(children, func(n string) bool {
		if !strings.HasPrefix(n, offerPrefix) {
			return true
		}
		_, err := strconv.ParseInt(n[len(offerPrefix):], 10, 64)
		return err != nil
	})
	slices.SortFunc(children, func(a, b string) int {
		sa, sb := seq(a), seq(b)
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	return children, nil
}

// makeOffer creates our offer. If the reply is lost with the connection,
// the node is looked for among the children by its ephemeral owner (our
// session) and host name before offering again.
func (e *Election) makeOffer(ctx context.Context) (string, int64, error) {
	a := e.opts.acl
	if a == nil {
		a = zk.OpenACLUnsafe
	}
	for {
		p, st, err := e.conn.Create2(ctx, e.root+"/"+offerPrefix, []byte(e.host), a, zk.ModeEphemeralSequential)
		if err == nil {
			return p, st.Czxid, nil
		}
		if !errors.Is(err, zk.ErrConnectionLoss) {
			return "", 0, err
		}
		offers, lerr := e.offers(ctx)
		if lerr != nil {
			if errors.Is(lerr, zk.ErrConnectionLoss) {
				continue
			}
			return "", 0, lerr
		}
		sid := e.conn.SessionID()
		for _, o := range slices.Backward(offers) {
			data, st, gerr := e.conn.Get(ctx, e.root+"/"+o)
			if gerr == nil && st.EphemeralOwner == sid && string(data) == e.host {
				return e.root + "/" + o, st.Czxid, nil
			}
		}
	}
}

func (e *Election) run(ctx context.Context) {
	defer close(e.loopDone)
	states, stop := e.conn.NotifyState()
	defer stop()
	fail := func(err error) bool {
		if ctx.Err() != nil {
			return false
		}
		e.events.Send(ElectionEvent{Type: ElectionFailed, Err: err})
		if permanent(err) {
			return false
		}
		t := time.NewTimer(50 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var czxid int64
	for ctx.Err() == nil {
		e.mu.Lock()
		offer := e.offer
		e.mu.Unlock()
		if offer == "" {
			e.events.Send(ElectionEvent{Type: ElectionOfferStart})
			p, z, err := e.makeOffer(ctx)
			if err != nil {
				if fail(err) {
					continue
				}
				return
			}
			e.mu.Lock()
			e.offer, offer, czxid = p, p, z
			e.mu.Unlock()
			e.events.Send(ElectionEvent{Type: ElectionOfferComplete})
		}
		e.events.Send(ElectionEvent{Type: ElectionDetermineStart})
		offers, err := e.offers(ctx)
		if err != nil {
			if fail(err) {
				continue
			}
			return
		}
		i := slices.Index(offers, offer[len(e.root)+1:])
		if i < 0 {
			e.mu.Lock()
			e.offer = ""
			e.mu.Unlock()
			continue
		}
		e.events.Send(ElectionEvent{Type: ElectionDetermineComplete})
		if i == 0 {
			e.events.Send(ElectionEvent{Type: ElectionElectedStart})
			g, err := recipeutil.Hold(ctx, e.conn, offer, czxid, recipeutil.HoldOptions{Policy: e.opts.policy})
			if err != nil {
				if errors.Is(err, recipe.ErrNodeDeleted) {
					e.mu.Lock()
					e.offer = ""
					e.mu.Unlock()
				}
				if fail(err) {
					if errors.Is(err, recipe.ErrSuspended) && !waitReconnected(ctx, states) {
						return
					}
					continue
				}
				return
			}
			e.mu.Lock()
			e.grant = g
			e.mu.Unlock()
			e.events.Send(ElectionEvent{Type: ElectionElectedComplete, Grant: g})
			select {
			case <-g.Done():
			case <-ctx.Done():
				return
			}
			e.mu.Lock()
			e.grant = nil
			e.mu.Unlock()
			why := g.Err()
			if errors.Is(why, recipe.ErrNodeDeleted) {
				e.mu.Lock()
				e.offer = ""
				e.mu.Unlock()
			}
			if !fail(why) {
				return
			}
			if errors.Is(why, recipe.ErrSuspended) && !waitReconnected(ctx, states) {
				return
			}
			continue
		}
		// Ready: watch the offer just ahead of ours.
		st, ev, err := e.conn.ExistsW(ctx, e.root+"/"+offers[i-1])
		if err != nil {
			if fail(err) {
				continue
			}
			return
		}
		if st == nil {
			continue // gone already: determine again
		}
		e.events.Send(ElectionEvent{Type: ElectionReadyStart})
		e.events.Send(ElectionEvent{Type: ElectionReadyComplete})
		select {
		case ev := <-ev:
			if ev.Type == zk.EventNotWatching {
				fail(ev.Err)
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
