package discovery

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/recipe/internal/children"
)

// Strategy picks one instance of a non-empty list (Curator's
// ProviderStrategy). A Provider calls it from the goroutine that calls
// Provider.Instance, so it must be safe for concurrent use. The list is
// sorted by id; it is the Strategy's to read, not to keep.
type Strategy interface {
	Pick(instances []*Instance) *Instance
}

// RoundRobin returns Curator's RoundRobinStrategy: the instances in turn.
func RoundRobin() Strategy { return &roundRobin{} }

type roundRobin struct{ next atomic.Uint64 }

func (s *roundRobin) Pick(in []*Instance) *Instance {
	return in[(s.next.Add(1)-1)%uint64(len(in))]
}

// Random returns Curator's RandomStrategy: an instance chosen at random.
func Random() Strategy { return random{} }

type random struct{}

func (random) Pick(in []*Instance) *Instance { return in[rand.IntN(len(in))] }

// Sticky returns Curator's StickyStrategy: the instance picked first, for
// as long as it is in the list (same id); then a new one picked by inner.
func Sticky(inner Strategy) Strategy { return &sticky{inner: inner} }

type sticky struct {
	inner Strategy
	mu    sync.Mutex // guards id
	id    string
}

func (s *sticky) Pick(in []*Instance) *Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id != "" {
		if i := slices.IndexFunc(in, func(x *Instance) bool { return x.ID == s.id }); i >= 0 {
			return in[i]
		}
	}
	p := s.inner.Pick(in)
	s.id = p.ID
	return p
}

// ProviderOption configures a Provider.
type ProviderOption func(*Provider)

// WithStrategy sets how instances are picked (default RoundRobin).
func WithStrategy(s Strategy) ProviderOption { return func(p *Provider) { p.strategy = s } }

// WithDownInstancePolicy sets Curator's DownInstancePolicy: an instance
// reported (NoteError) threshold times is skipped until timeout has passed
// since its first report. Default: 30 s and 2, as Curator's.
func WithDownInstancePolicy(timeout time.Duration, threshold int) ProviderOption {
	return func(p *Provider) { p.downTimeout, p.downThreshold = timeout, threshold }
}

// withClock replaces time.Now (tests).
func withClock(now func() time.Time) ProviderOption { return func(p *Provider) { p.now = now } }

// Provider offers instances of one service from a watched list (Curator's
// ServiceProvider over a ServiceCache): the list follows the service's
// nodes through a children watch and a data watch per instance.
type Provider struct {
	w             *children.Watcher
	strategy      Strategy
	downTimeout   time.Duration
	downThreshold int
	now           func() time.Time

	// mu guards down.
	mu   sync.Mutex
	down map[string]*downStatus // by instance id
}

type downStatus struct {
	since  time.Time
	errors int
}

// NewProvider starts following service name's instances and returns once
// the first list has been read.
func (d *Discovery) NewProvider(ctx context.Context, name string, opts ...ProviderOption) (*Provider, error) {
	p := &Provider{strategy: RoundRobin(), downTimeout: 30 * time.Second, downThreshold: 2, now: time.Now, down: map[string]*downStatus{}}
	for _, o := range opts {
		o(p)
	}
	p.w = children.Start(d.src, d.base+"/"+name)
	if err := p.w.WaitReady(ctx); err != nil {
		p.w.Close()
		return nil, err
	}
	return p, nil
}

// Instances returns every instance in the list (also those down), sorted
// by id, and a channel closed when the list next changes.
func (p *Provider) Instances() ([]*Instance, <-chan struct{}) {
	names, data, changed := p.w.View()
	var out []*Instance
	for _, n := range names {
		if in, err := Decode(data[n]); err == nil {
			out = append(out, in)
		}
	}
	return out, changed
}

// Instance returns an instance picked by the strategy among those not
// down, or ErrNoInstances.
func (p *Provider) Instance() (*Instance, error) {
	all, _ := p.Instances()
	now := p.now()
	p.mu.Lock()
	up := all[:0:0]
	for _, in := range all {
		s := p.down[in.ID]
		if s != nil && now.Sub(s.since) >= p.downTimeout {
			delete(p.down, in.ID)
			s = nil
		}
		if s == nil || s.errors < p.downThreshold {
			up = append(up, in)
		}
	}
	p.mu.Unlock()
	if len(up) == 0 {
		return nil, ErrNoInstances
	}
	return p.strategy.Pick(up), nil
}

// NoteError reports that in failed (Curator's noteError): after the
// policy's threshold of reports it is skipped until the timeout has passed
// since the first.
func (p *Provider) NoteError(in *Instance) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.down[in.ID]
	if s == nil || now.Sub(s.since) >= p.downTimeout {
		s = &downStatus{since: now}
		p.down[in.ID] = s
	}
	s.errors++
}

// Close stops following the list.
func (p *Provider) Close() { p.w.Close() }
