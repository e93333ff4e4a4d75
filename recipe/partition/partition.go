package partition

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/internal/kazoolock"
	"github.com/zkgo/zkgo/zk"
)

// State is a SetPartitioner's state; String gives kazoo's names.
type State int

// The states of kazoo's PartitionState.
const (
	Allocating State = iota
	Acquired
	Release
	Failure
)

func (s State) String() string {
	switch s {
	case Allocating:
		return "ALLOCATING"
	case Acquired:
		return "ACQUIRED"
	case Release:
		return "RELEASE"
	case Failure:
		return "FAILURE"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Func decides which items of set the member identifier gets, given the
// identifiers of all members (including its own).
type Func func(identifier string, members, set []string) []string

// Default is kazoo's partition function: with the items and the members
// sorted, the member at index i of n gets items i, i+n, i+2n, ….
func Default(identifier string, members, set []string) []string {
	items := slices.Sorted(slices.Values(set))
	workers := slices.Sorted(slices.Values(members))
	i := slices.Index(workers, identifier)
	if i < 0 {
		return nil
	}
	var out []string
	for ; i < len(items); i += len(workers) {
		out = append(out, items[i])
	}
	return out
}

// Option configures a SetPartitioner. It is recipe.Option: of the settings
// every recipe shares, it uses the ACL (recipe.WithACL); the others, and
// the options of other recipe packages, are ignored.
type Option = recipe.Option

type options struct {
	id       string
	fn       Func
	boundary time.Duration
	reaction time.Duration
	acl      []zk.ACL
}

// WithIdentifier sets this member's identifier (default "<host>-<pid>",
// as kazoo's). It must be unique in the party and a valid node name part.
func WithIdentifier(id string) Option { return recipe.Extend(func(o *options) { o.id = id }) }

// WithPartitionFunc replaces Default. Every member must use the same.
func WithPartitionFunc(fn Func) Option { return recipe.Extend(func(o *options) { o.fn = fn }) }

// WithTimeBoundary sets how long the party must stay unchanged before
// the set is divided (kazoo's time_boundary, default 30 s).
func WithTimeBoundary(d time.Duration) Option {
	return recipe.Extend(func(o *options) { o.boundary = d })
}

// WithMaxReactionTime bounds each wait for an item's lock, after which a
// party change is noticed (kazoo's max_reaction_time, default 1 s).
func WithMaxReactionTime(d time.Duration) Option {
	return recipe.Extend(func(o *options) { o.reaction = d })
}

// WithACL sets the ACL of the nodes created (default: open). It is
// recipe.WithACL.
func WithACL(acl []zk.ACL) Option { return recipe.WithACL(acl) }

// SetPartitioner is one member's share of a set (kazoo's SetPartitioner).
// Its methods are safe for concurrent use.
type SetPartitioner struct {
	conn      *zk.Conn
	path      string
	set       []string
	o         options
	partyNode string

	mu         sync.Mutex // guards the fields from state to running
	state      State
	stateID    int
	changed    chan struct{} // closed at the next state change
	partitions []string
	locks      []*kazoolock.Lock
	gen        int  // the allocation round whose party watch counts
	partyMoved bool // the party changed since round gen's stable read
	cancel     context.CancelFunc
	running    chan struct{} // closed when the current allocation returns

	done     chan struct{} // closed by fail
	stopConn func()
}

// New joins the party at path and starts allocating (in the background;
// see WaitForAcquire, State and Changed). The items must be valid node
// names.
func New(ctx context.Context, src zk.Sessions, path string, set []string, opts ...Option) (*SetPartitioner, error) {
	conn := src.Current() // a member lives in one session
	ro := recipe.Build(opts)
	o := options{boundary: 30 * time.Second, reaction: time.Second, fn: Default, acl: ro.ACL}
	recipe.ApplyExtensions(ro, &o)
	if o.acl == nil {
		o.acl = zk.OpenACLUnsafe
	}
	if o.id == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, err
		}
		o.id = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	for _, item := range set {
		if item == "" || strings.Contains(item, "/") {
			return nil, fmt.Errorf("partition: item %q is not a node name", item)
		}
	}
	for _, p := range []string{path, path + "/locks", path + "/party"} {
		if err := conn.EnsurePath(ctx, p, o.acl); err != nil {
			return nil, err
		}
	}
	var b [16]byte
	rand.Read(b[:])
	node := path + "/party/" + hex.EncodeToString(b[:]) + "-" + o.id
	for {
		_, err := conn.Create(ctx, node, []byte(o.id), o.acl, zk.ModeEphemeral)
		if err == nil || errors.Is(err, zk.ErrNodeExists) { // exists: our lost create landed
			break
		}
		if !errors.Is(err, zk.ErrConnectionLoss) {
			return nil, err
		}
	}
	p := &SetPartitioner{
		conn: conn, path: path, set: slices.Clone(set), o: o, partyNode: node,
		changed: make(chan struct{}), done: make(chan struct{}),
	}
	states, stop := conn.NotifyState()
	p.stopConn = stop
	go p.followConn(states)
	p.mu.Lock()
	p.startLocked()
	p.mu.Unlock()
	return p, nil
}

// State returns the current state.
func (p *SetPartitioner) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// Changed returns a channel closed at the next state change.
func (p *SetPartitioner) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// Partitions returns the items of this member's partition (in Acquired;
// nil before the first acquisition).
func (p *SetPartitioner) Partitions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.partitions)
}

// Identifier returns this member's identifier.
func (p *SetPartitioner) Identifier() string { return p.o.id }

// WaitForAcquire waits while the state is Allocating (kazoo's
// wait_for_acquire; a context deadline is its timeout) and returns the
// state then.
func (p *SetPartitioner) WaitForAcquire(ctx context.Context) (State, error) {
	for {
		p.mu.Lock()
		s, ch := p.state, p.changed
		p.mu.Unlock()
		if s != Allocating {
			return s, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
}

// ReleaseSet gives back the locks of the partition and allocates again
// (kazoo's release_set); call it in the Release state.
func (p *SetPartitioner) ReleaseSet(ctx context.Context) error {
	p.stopAllocation()
	if err := p.releaseLocks(ctx); err != nil {
		p.fail()
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == Failure {
		return nil
	}
	p.setStateLocked(Allocating)
	p.startLocked()
	return nil
}

// Finish gives back the locks, leaves the party and moves to Failure
// (kazoo's finish).
func (p *SetPartitioner) Finish(ctx context.Context) error {
	p.stopAllocation()
	err := p.releaseLocks(ctx)
	p.fail()
	return err
}

func (p *SetPartitioner) setStateLocked(s State) {
	p.state = s
	p.stateID++
	close(p.changed)
	p.changed = make(chan struct{})
}

// fail moves to Failure and leaves the party.
func (p *SetPartitioner) fail() {
	p.mu.Lock()
	if p.state == Failure {
		p.mu.Unlock()
		return
	}
	p.setStateLocked(Failure)
	if p.cancel != nil {
		p.cancel()
	}
	close(p.done)
	p.mu.Unlock()
	p.stopConn()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.conn.Delete(ctx, p.partyNode, zk.AnyVersion)
}

// followConn is kazoo's session listener: a lost session fails the
// partitioner; any other connection change asks for a release.
func (p *SetPartitioner) followConn(states <-chan zk.State) {
	for s := range states {
		switch s {
		case zk.StateLost, zk.StateClosed:
			go p.fail()
			return
		default:
			p.mu.Lock()
			if p.state != Failure && p.state != Release {
				p.setStateLocked(Release)
			}
			p.mu.Unlock()
		}
	}
}

// startLocked starts an allocation round in the background.
func (p *SetPartitioner) startLocked() {
	ctx, cancel := context.WithCancel(context.Background())
	running := make(chan struct{})
	p.cancel, p.running = cancel, running
	id := p.stateID
	go func() {
		defer close(running)
		p.allocate(ctx, id)
	}()
}

// stopAllocation stops the current allocation round and waits for it.
func (p *SetPartitioner) stopAllocation() {
	p.mu.Lock()
	cancel, running := p.cancel, p.running
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-running
	}
}

func (p *SetPartitioner) releaseLocks(ctx context.Context) error {
	p.mu.Lock()
	locks := p.locks
	p.locks = nil
	p.mu.Unlock()
	var errs []error
	for _, l := range locks {
		if err := l.Release(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// allocate is kazoo's _allocate_transition, repeated while the party
// changes under it.
func (p *SetPartitioner) allocate(ctx context.Context, stateID int) {
	for {
		members, err := p.stableParty(ctx)
		if err != nil {
			if ctx.Err() == nil {
				go p.Finish(context.Background())
			}
			return
		}
		mine := p.o.fn(p.o.id, members, slices.Clone(p.set))
		if !slices.Contains(members, p.o.id) {
			go p.Finish(context.Background()) // our party node is gone
			return
		}
		restart, stop := false, false
		for _, item := range mine {
			lock := kazoolock.New(p.conn, p.path+"/locks/"+item, "", p.o.acl)
			for {
				actx, cancel := context.WithTimeout(ctx, p.o.reaction)
				err := lock.Acquire(actx)
				cancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					go p.Finish(context.Background())
					return
				}
				if restart, stop = p.abortIfNeeded(stateID); restart || stop {
					break
				}
			}
			if restart || stop {
				break
			}
			p.mu.Lock()
			p.locks = append(p.locks, lock)
			p.mu.Unlock()
			if restart, stop = p.abortIfNeeded(stateID); restart || stop {
				break
			}
		}
		if stop {
			return
		}
		if restart {
			if err := p.releaseLocks(ctx); err != nil {
				go p.Finish(context.Background())
				return
			}
			continue
		}
		p.mu.Lock()
		if p.stateID == stateID && !p.partyMoved {
			p.partitions = mine
			p.setStateLocked(Acquired)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		if restart, _ := p.abortIfNeeded(stateID); restart {
			if err := p.releaseLocks(ctx); err != nil {
				go p.Finish(context.Background())
				return
			}
			continue
		}
		return
	}
}

// abortIfNeeded: restart when the party moved during this round; stop
// (moving to Release) when the state changed under it.
func (p *SetPartitioner) abortIfNeeded(stateID int) (restart, stop bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stateID == stateID {
		return p.partyMoved, false
	}
	if p.state == Allocating || p.state == Acquired {
		p.setStateLocked(Release)
	}
	return false, true
}

// stableParty waits until the party's children have not changed for the
// time boundary (kazoo's PatientChildrenWatch) and returns the members'
// identifiers. The last read's watch then marks the round's party as
// moved, and an Acquired partitioner as needing a release.
func (p *SetPartitioner) stableParty(ctx context.Context) ([]string, error) {
	for {
		children, _, ev, err := p.conn.ChildrenW(ctx, p.path+"/party")
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err != nil {
			return nil, err
		}
		timer := time.NewTimer(p.o.boundary)
		moved := false
	wait:
		for {
			select {
			case <-ev:
				moved, ev = true, nil
			case <-timer.C:
				break wait
			case <-ctx.Done():
				timer.Stop()
				return nil, ctx.Err()
			}
		}
		if moved {
			continue
		}
		p.mu.Lock()
		p.gen++
		gen := p.gen
		p.partyMoved = false
		p.mu.Unlock()
		go p.watchParty(gen, ev)
		members := make([]string, len(children))
		for i, c := range children {
			_, id, _ := strings.Cut(c, "-")
			members[i] = id
		}
		return members, nil
	}
}

// watchParty waits for the stable party's watch to fire.
func (p *SetPartitioner) watchParty(gen int, ev <-chan zk.Event) {
	select {
	case <-ev:
	case <-p.done:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen != gen {
		return
	}
	p.partyMoved = true
	if p.state == Acquired {
		p.setStateLocked(Release)
	}
}
