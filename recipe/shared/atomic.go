package shared

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/zk"
)

// DefaultRetry is the retry policy of an AtomicValue's optimistic phase
// unless WithRetry sets another (Curator makes the caller choose).
var DefaultRetry zk.RetryPolicy = zk.ExponentialBackoff{Base: 5 * time.Millisecond, Max: 200 * time.Millisecond, MaxRetries: 10}

// WithRetry sets how often, and after what pause, an AtomicValue retries an
// optimistic update that met a concurrent change (default DefaultRetry).
// zk.NTimes{} makes one attempt. It is recipe.WithRetry.
func WithRetry(p zk.RetryPolicy) Option { return recipe.WithRetry(p) }

type promotion struct {
	lockPath string
	retry    zk.RetryPolicy
	maxWait  time.Duration
}

// WithPromotion makes an AtomicValue whose optimistic attempts all failed
// try again while holding a mutex at lockPath (Curator's PromotedToLock;
// the mutex has InterProcessMutex's layout, so Curator's promoted writers
// are excluded too). retry governs the attempts made under the mutex (nil:
// one attempt, Curator's default RetryNTimes(0, 0)); maxWait bounds the wait
// for the mutex (0: as long as ctx allows). Writers that are not promoted
// are not excluded, so an attempt under the mutex can still meet a
// conflict.
func WithPromotion(lockPath string, retry zk.RetryPolicy, maxWait time.Duration) Option {
	if retry == nil {
		retry = zk.NTimes{}
	}
	return recipe.Extend(func(o *options) {
		o.promo = &promotion{lockPath: lockPath, retry: retry, maxWait: maxWait}
	})
}

// Stats says how an AtomicValue operation went (Curator's AtomicStats).
type Stats struct {
	// OptimisticTries and PromotedTries count the attempts made without
	// and with the mutex.
	OptimisticTries, PromotedTries int
	// OptimisticTime and PromotedTime are the time spent in each phase
	// (the promoted phase includes waiting for the mutex).
	OptimisticTime, PromotedTime time.Duration
}

// Result is the outcome of an AtomicValue operation (Curator's
// AtomicValue): whether it succeeded, the value it read last (Pre) and,
// when it succeeded, the value it wrote (Post). Pre is the zero value when
// the node did not exist.
type Result[T any] struct {
	Succeeded bool
	Pre, Post T
	Stats     Stats
}

// AtomicValue is a byte value changed by optimistic compare-and-set
// (Curator's DistributedAtomicValue). Its methods are safe for concurrent
// use; it keeps no state between calls.
type AtomicValue struct {
	src  zk.Sessions
	path string
	opts options
}

// NewAtomicValue returns the atomic value at path.
func NewAtomicValue(src zk.Sessions, path string, opts ...Option) *AtomicValue {
	return &AtomicValue{src: src, path: path, opts: buildOptions(opts)}
}

// get reads the node; exists is false when it is missing.
func (a *AtomicValue) get(ctx context.Context) (data []byte, st *zk.Stat, exists bool, err error) {
	for {
		data, st, err = a.src.Current().Get(ctx, a.path)
		switch {
		case err == nil:
			return data, st, true, nil
		case errors.Is(err, zk.ErrNoNode):
			return nil, nil, false, nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue
		default:
			return nil, nil, false, err
		}
	}
}

// Get returns the current value (Succeeded, Pre = Post = the value; nil
// when the node does not exist).
func (a *AtomicValue) Get(ctx context.Context) (Result[[]byte], error) {
	data, _, _, err := a.get(ctx)
	if err != nil {
		return Result[[]byte]{}, err
	}
	return Result[[]byte]{Succeeded: true, Pre: data, Post: data}, nil
}

// ForceSet writes data unconditionally, creating the node if needed.
func (a *AtomicValue) ForceSet(ctx context.Context, data []byte) error {
	for {
		_, err := a.src.Current().Set(ctx, a.path, data, zk.AnyVersion)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = a.src.Current().CreateAll(ctx, a.path, data, a.opts.acl, zk.ModePersistent, zk.AsContainers())
			if errors.Is(err, zk.ErrNodeExists) {
				continue
			}
		}
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue // an unconditional write may be repeated
		}
		return err
	}
}

// Initialize creates the node with data if it does not exist; it reports
// whether it did.
func (a *AtomicValue) Initialize(ctx context.Context, data []byte) (bool, error) {
	_, err := a.src.Current().CreateAll(ctx, a.path, data, a.opts.acl, zk.ModePersistent, zk.AsContainers())
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, zk.ErrNodeExists):
		return false, nil
	case errors.Is(err, zk.ErrConnectionLoss):
		return false, unknownOutcome(err)
	default:
		return false, err
	}
}

// CompareAndSet writes data if the node holds expected, in one attempt
// (no retries, no promotion, as Curator's compareAndSet). A missing node
// never matches.
func (a *AtomicValue) CompareAndSet(ctx context.Context, expected, data []byte) (Result[[]byte], error) {
	var r Result[[]byte]
	cur, st, exists, err := a.get(ctx)
	if err != nil {
		return r, err
	}
	r.Pre = cur
	if !exists || !bytes.Equal(expected, cur) {
		return r, nil
	}
	_, err = a.src.Current().Set(ctx, a.path, data, st.Version)
	switch {
	case err == nil:
		r.Succeeded, r.Post = true, bytes.Clone(data)
		return r, nil
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		return r, nil
	case errors.Is(err, zk.ErrConnectionLoss):
		return r, unknownOutcome(err)
	default:
		return r, err
	}
}

// TrySet writes data, retrying on conflicts as the retry policy allows
// and then, with WithPromotion, under the mutex.
func (a *AtomicValue) TrySet(ctx context.Context, data []byte) (Result[[]byte], error) {
	data = bytes.Clone(data)
	return a.Update(ctx, func([]byte) ([]byte, error) { return data, nil })
}

// Update changes the value to fn(current) by optimistic compare-and-set
// (Curator's package-private trySet(MakeValue)): fn gets the current value
// (nil when the node does not exist, which is then created) and may be
// called once per attempt. An error from fn ends the update with that
// error. Result.Succeeded is false when every attempt met a concurrent
// change; an error wrapping ErrUnknownOutcome means the last write's
// connection was lost before its reply.
func (a *AtomicValue) Update(ctx context.Context, fn func(cur []byte) ([]byte, error)) (Result[[]byte], error) {
	var r Result[[]byte]
	start := time.Now()
	err := a.attempts(ctx, &r, fn, a.opts.retry, &r.Stats.OptimisticTries)
	r.Stats.OptimisticTime = time.Since(start)
	if err != nil || r.Succeeded || a.opts.promo == nil {
		return r, err
	}
	start = time.Now()
	err = a.promoted(ctx, &r, fn)
	r.Stats.PromotedTime = time.Since(start)
	return r, err
}

func (a *AtomicValue) promoted(ctx context.Context, r *Result[[]byte], fn func([]byte) ([]byte, error)) error {
	p := a.opts.promo
	lctx := ctx
	if p.maxWait > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, p.maxWait)
		defer cancel()
	}
	// A Mutex per call: a shared one would be reentrant across callers.
	m := lock.NewMutex(a.src, p.lockPath, lock.WithACL(a.opts.acl))
	if _, err := m.Lock(lctx); err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil // the mutex was not free in time: not succeeded
		}
		return err
	}
	err := a.attempts(ctx, r, fn, p.retry, &r.Stats.PromotedTries)
	if uerr := m.Unlock(context.WithoutCancel(ctx)); err == nil {
		err = uerr
	}
	return err
}

// attempts runs tryOnce until it succeeds, fails, or the policy gives up.
func (a *AtomicValue) attempts(ctx context.Context, r *Result[[]byte], fn func([]byte) ([]byte, error), policy zk.RetryPolicy, tries *int) error {
	start := time.Now()
	for n := 1; ; n++ {
		*tries++
		ok, err := a.tryOnce(ctx, r, fn)
		if err != nil || ok {
			r.Succeeded = ok
			return err
		}
		delay, more := policy.Next(n, time.Since(start))
		if !more {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// tryOnce reads the value, computes the new one and writes it with the
// version read (or creates the node). false, nil: a concurrent change won.
func (a *AtomicValue) tryOnce(ctx context.Context, r *Result[[]byte], fn func([]byte) ([]byte, error)) (bool, error) {
	cur, st, exists, err := a.get(ctx)
	if err != nil {
		return false, err
	}
	r.Pre = cur
	next, err := fn(cur)
	if err != nil {
		return false, err
	}
	if exists {
		_, err = a.src.Current().Set(ctx, a.path, next, st.Version)
	} else {
		_, err = a.src.Current().CreateAll(ctx, a.path, next, a.opts.acl, zk.ModePersistent, zk.AsContainers())
	}
	switch {
	case err == nil:
		r.Post = bytes.Clone(next)
		return true, nil
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNodeExists):
		return false, nil
	case errors.Is(err, zk.ErrConnectionLoss):
		return false, unknownOutcome(err)
	default:
		return false, err
	}
}

// EncodeLong returns n as Curator's DistributedAtomicLong stores it: 8
// bytes, big-endian (ByteBuffer.putLong).
func EncodeLong(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// DecodeLong reads a DistributedAtomicLong: no data is 0, otherwise the
// first 8 bytes, big-endian; 1 to 7 bytes are ErrCorrupt (Curator's
// "Corrupted data for node").
func DecodeLong(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if len(b) < 8 {
		return 0, fmt.Errorf("%w: long of %d bytes, want 8", ErrCorrupt, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// AtomicLong is a 64-bit integer changed by optimistic compare-and-set
// (Curator's DistributedAtomicLong). Increments from many processes, Go
// and Java, never get lost: each one that reports Succeeded was applied
// exactly once. Its methods are safe for concurrent use.
type AtomicLong struct{ v *AtomicValue }

// NewAtomicLong returns the atomic long at path.
func NewAtomicLong(src zk.Sessions, path string, opts ...Option) *AtomicLong {
	return &AtomicLong{v: NewAtomicValue(src, path, opts...)}
}

func longResult(r Result[[]byte], err error) (Result[int64], error) {
	out := Result[int64]{Succeeded: r.Succeeded, Stats: r.Stats}
	var perr, qerr error
	out.Pre, perr = DecodeLong(r.Pre)
	out.Post, qerr = DecodeLong(r.Post)
	if err == nil {
		err = errors.Join(perr, qerr)
	}
	return out, err
}

// Get returns the current value (0 when the node does not exist).
func (l *AtomicLong) Get(ctx context.Context) (Result[int64], error) { return longResult(l.v.Get(ctx)) }

// ForceSet writes n unconditionally.
func (l *AtomicLong) ForceSet(ctx context.Context, n int64) error {
	return l.v.ForceSet(ctx, EncodeLong(n))
}

// Initialize creates the node with n if it does not exist; it reports
// whether it did.
func (l *AtomicLong) Initialize(ctx context.Context, n int64) (bool, error) {
	return l.v.Initialize(ctx, EncodeLong(n))
}

// CompareAndSet writes n if the node holds expected, in one attempt.
func (l *AtomicLong) CompareAndSet(ctx context.Context, expected, n int64) (Result[int64], error) {
	return longResult(l.v.CompareAndSet(ctx, EncodeLong(expected), EncodeLong(n)))
}

// TrySet writes n, with retries and promotion.
func (l *AtomicLong) TrySet(ctx context.Context, n int64) (Result[int64], error) {
	return longResult(l.v.TrySet(ctx, EncodeLong(n)))
}

// Add adds delta (overflow wraps around, as Java's long addition).
func (l *AtomicLong) Add(ctx context.Context, delta int64) (Result[int64], error) {
	return longResult(l.v.Update(ctx, func(cur []byte) ([]byte, error) {
		n, err := DecodeLong(cur)
		if err != nil {
			return nil, err
		}
		return EncodeLong(n + delta), nil
	}))
}

// Subtract subtracts delta.
func (l *AtomicLong) Subtract(ctx context.Context, delta int64) (Result[int64], error) {
	return l.Add(ctx, -delta)
}

// Increment adds 1.
func (l *AtomicLong) Increment(ctx context.Context) (Result[int64], error) { return l.Add(ctx, 1) }

// Decrement subtracts 1.
func (l *AtomicLong) Decrement(ctx context.Context) (Result[int64], error) { return l.Add(ctx, -1) }
