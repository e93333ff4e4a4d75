package zk

import (
	"context"
	"math/rand/v2"
	"time"
)

// RetryPolicy decides whether and when to retry.
type RetryPolicy interface {
	// Next returns the delay before retry n (1 for the first retry), given
	// the time elapsed since the first attempt; ok false means give up.
	Next(n int, elapsed time.Duration) (delay time.Duration, ok bool)
}

// ExponentialBackoff doubles the delay from Base up to Max, with jitter
// (each delay is drawn from [d/2, d]). MaxRetries 0 means no limit.
type ExponentialBackoff struct {
	Base, Max  time.Duration
	MaxRetries int
}

// Next implements RetryPolicy.
func (p ExponentialBackoff) Next(n int, _ time.Duration) (time.Duration, bool) {
	if p.MaxRetries > 0 && n > p.MaxRetries {
		return 0, false
	}
	base, limit := p.Base, p.Max
	if base <= 0 {
		base = 10 * time.Millisecond
	}
	if limit < base {
		limit = base
	}
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	half := d / 2
	return half + rand.N(d-half+1), true
}

// NTimes retries N times, waiting Delay before each retry.
type NTimes struct {
	N     int
	Delay time.Duration
}

// Next implements RetryPolicy.
func (p NTimes) Next(n int, _ time.Duration) (time.Duration, bool) {
	return p.Delay, n <= p.N
}

// UntilElapsed retries, waiting Delay each time, until Max has elapsed
// since the first attempt.
type UntilElapsed struct {
	Max   time.Duration
	Delay time.Duration
}

// Next implements RetryPolicy.
func (p UntilElapsed) Next(_ int, elapsed time.Duration) (time.Duration, bool) {
	if elapsed+p.Delay > p.Max {
		return 0, false
	}
	return p.Delay, true
}

// Retry calls fn until it succeeds, fails with an error that IsRetryable
// does not accept, the policy gives up (the last error is returned) or ctx
// is done (ctx's error is returned).
func Retry(ctx context.Context, policy RetryPolicy, fn func(ctx context.Context) error) error {
	start := time.Now()
	for n := 1; ; n++ {
		err := fn(ctx)
		if err == nil || !IsRetryable(err) {
			return err
		}
		delay, ok := policy.Next(n, time.Since(start))
		if !ok {
			return err
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
