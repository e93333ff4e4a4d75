package lock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/zk"
)

// Semaphore is a distributed counting semaphore with leases (Curator's
// InterProcessSemaphoreV2): at most N leases are out at a time. Acquirers
// take "<path>/locks" (a Mutex) while they wait, so waiters queue fairly;
// each lease is an ephemeral node under "<path>/leases". The limit is fixed
// (NewSemaphore) or read from a shared count node that all participants
// agree on (NewSharedSemaphore, Curator's SharedCount: a 4-byte big-endian
// integer).
type Semaphore struct {
	src       zk.Sessions
	base      string
	leases    string
	max       int
	countPath string
	opts      options
}

// Lease is one permit of a Semaphore.
type Lease struct {
	*recipe.Grant
	s *Semaphore
}

// Release returns the lease (deleting its node).
func (l *Lease) Release(ctx context.Context) error {
	l.Grant.Release()
	return recipeutil.DeleteNode(ctx, l.s.src.Current(), l.Path())
}

// NewSemaphore returns a semaphore on path with maxLeases permits.
func NewSemaphore(src zk.Sessions, path string, maxLeases int, opts ...Option) *Semaphore {
	return &Semaphore{src: src, base: path, leases: path + "/leases", max: maxLeases, opts: buildOptions(opts)}
}

// NewSharedSemaphore returns a semaphore on path whose limit is the integer
// stored at countPath (4 bytes, big-endian, as Curator's SharedCount writes
// it). A change of the count takes effect for waiting acquirers at once.
func NewSharedSemaphore(src zk.Sessions, path, countPath string, opts ...Option) *Semaphore {
	return &Semaphore{src: src, base: path, leases: path + "/leases", countPath: countPath, opts: buildOptions(opts)}
}

// SetSharedCount writes n to a shared count node (creating it), in Curator's
// SharedCount format.
func SetSharedCount(ctx context.Context, src zk.Sessions, countPath string, n int32) error {
	conn := src.Current()
	b := binary.BigEndian.AppendUint32(nil, uint32(n))
	_, err := conn.Set(ctx, countPath, b, -1)
	if errors.Is(err, zk.ErrNoNode) {
		_, err = conn.CreateAll(ctx, countPath, b, zk.OpenACLUnsafe, zk.ModePersistent)
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = conn.Set(ctx, countPath, b, -1)
		}
	}
	return err
}

// limit returns the current limit and, for a shared count, a watch on it.
func (s *Semaphore) limit(ctx context.Context, conn *zk.Conn) (int, <-chan zk.Event, error) {
	if s.countPath == "" {
		return s.max, nil, nil
	}
	data, _, ev, err := conn.GetW(ctx, s.countPath)
	if err != nil {
		return 0, nil, fmt.Errorf("semaphore count %s: %w", s.countPath, err)
	}
	if len(data) != 4 {
		return 0, nil, fmt.Errorf("semaphore count %s: %d bytes, want 4", s.countPath, len(data))
	}
	return int(int32(binary.BigEndian.Uint32(data))), ev, nil
}

// Acquire takes one lease, waiting as long as ctx allows.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	ls, err := s.AcquireN(ctx, 1)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// AcquireN takes n leases, all or none.
func (s *Semaphore) AcquireN(ctx context.Context, n int) ([]*Lease, error) {
	if n <= 0 {
		return nil, fmt.Errorf("lock: AcquireN(%d): n must be positive", n)
	}
	var out []*Lease
	for len(out) < n {
		l, err := s.acquire1(ctx, true)
		if err != nil {
			for _, l := range slices.Backward(out) {
				l.Release(ctx)
			}
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// TryAcquire takes a lease only if one is free now (it may still wait
// briefly for the semaphore's internal lock). ok is false when all leases
// are out.
func (s *Semaphore) TryAcquire(ctx context.Context) (l *Lease, ok bool, err error) {
	l, err = s.acquire1(ctx, false)
	return l, l != nil, err
}

func (s *Semaphore) acquire1(ctx context.Context, wait bool) (*Lease, error) {
	// A Mutex per call: Semaphore methods may run concurrently, and a
	// shared reentrant Mutex would let them in together.
	conn := s.src.Current() // one session for the whole acquisition
	m := newMutex(conn, s.base+"/locks", "lock-", []string{"lock-"}, recipeutil.FirstN(1), options{policy: recipe.Session, acl: s.opts.acl})
	if _, err := m.Lock(ctx); err != nil {
		return nil, err
	}
	defer m.Unlock(ctx)
	for attempt := 0; ; attempt++ {
		path, st, err := recipeutil.CreateNode(ctx, conn, s.leases, "lease-", s.opts.data, s.opts.acl)
		if err != nil {
			return nil, err
		}
		name := path[len(s.leases)+1:]
		got, err := s.waitLease(ctx, conn, name, wait)
		if err == nil && got {
			g, herr := recipeutil.Hold(ctx, conn, path, st.Czxid, recipeutil.HoldOptions{Policy: s.opts.policy})
			if herr == nil {
				return &Lease{Grant: g, s: s}, nil
			}
			err = herr
		}
		derr := recipeutil.DeleteNode(ctx, conn, path)
		if err == nil { // not waiting and no lease free
			return nil, derr
		}
		if errors.Is(err, recipe.ErrNodeMissing) && attempt < 3 && ctx.Err() == nil {
			continue
		}
		return nil, err
	}
}

// waitLease waits until the leases (ours included) are within the limit.
func (s *Semaphore) waitLease(ctx context.Context, conn *zk.Conn, name string, wait bool) (bool, error) {
	for {
		limit, countEv, err := s.limit(ctx, conn)
		if err != nil {
			return false, err
		}
		children, _, ev, err := conn.ChildrenW(ctx, s.leases)
		if err != nil {
			return false, err
		}
		if !slices.Contains(children, name) {
			return false, recipe.ErrNodeMissing
		}
		if len(children) <= limit {
			return true, nil
		}
		if !wait {
			return false, nil
		}
		select {
		case e := <-ev:
			if e.Type == zk.EventNotWatching {
				return false, e.Err
			}
		case e := <-countEv:
			if e.Type == zk.EventNotWatching {
				return false, e.Err
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// Participants returns the current leases.
func (s *Semaphore) Participants(ctx context.Context) ([]recipe.Participant, error) {
	return recipeutil.Participants(ctx, s.src.Current(), s.leases, []string{"lease-"}, nil)
}

// SemaphoreMutex is a non-reentrant distributed mutex (Curator's
// InterProcessSemaphoreMutex): a Semaphore with one lease. Unlike Mutex,
// Lock on a SemaphoreMutex that holds the lock waits for its release, so it
// can be unlocked by another goroutine than the one that locked it.
type SemaphoreMutex struct {
	s *Semaphore

	mu    sync.Mutex // guards lease
	lease *Lease
}

// NewSemaphoreMutex returns a non-reentrant mutex on path.
func NewSemaphoreMutex(src zk.Sessions, path string, opts ...Option) *SemaphoreMutex {
	return &SemaphoreMutex{s: NewSemaphore(src, path, 1, opts...)}
}

// Lock acquires the mutex.
func (m *SemaphoreMutex) Lock(ctx context.Context) (*recipe.Grant, error) {
	l, err := m.s.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.lease = l
	m.mu.Unlock()
	return l.Grant, nil
}

// Unlock releases the mutex; ErrNotHeld if it is not held.
func (m *SemaphoreMutex) Unlock(ctx context.Context) error {
	m.mu.Lock()
	l := m.lease
	m.lease = nil
	m.mu.Unlock()
	if l == nil {
		return recipe.ErrNotHeld
	}
	return l.Release(ctx)
}

// IsHeld reports whether this SemaphoreMutex holds the lock and has not
// lost it.
func (m *SemaphoreMutex) IsHeld() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease != nil && m.lease.Held()
}
