package lock

import (
	"context"
	"errors"
	"slices"

	"github.com/zkgo/zkgo/recipe"
)

// Locker is what MultiLock combines: Mutex, RWMutex's halves and
// SemaphoreMutex are Lockers.
type Locker interface {
	Lock(ctx context.Context) (*recipe.Grant, error)
	Unlock(ctx context.Context) error
}

// MultiLock holds several locks as one (Curator's InterProcessMultiLock):
// Lock takes them in the order given, and if one cannot be taken it releases
// those it took, in reverse order, and fails. Always list the locks in the
// same order in every process, or two processes can deadlock.
type MultiLock struct {
	locks []Locker
}

// NewMultiLock combines locks.
func NewMultiLock(locks ...Locker) *MultiLock { return &MultiLock{locks: locks} }

// Lock acquires every lock, or none.
func (m *MultiLock) Lock(ctx context.Context) ([]*recipe.Grant, error) {
	grants := make([]*recipe.Grant, 0, len(m.locks))
	for i, l := range m.locks {
		g, err := l.Lock(ctx)
		if err != nil {
			for _, held := range slices.Backward(m.locks[:i]) {
				held.Unlock(context.WithoutCancel(ctx))
			}
			return nil, err
		}
		grants = append(grants, g)
	}
	return grants, nil
}

// Unlock releases every lock, in reverse order, and returns their errors
// joined.
func (m *MultiLock) Unlock(ctx context.Context) error {
	var errs []error
	for _, l := range slices.Backward(m.locks) {
		if err := l.Unlock(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
