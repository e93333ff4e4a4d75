package lock

import (
	"context"
	"math"
	"strings"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/zk"
)

// Curator's lock names; they must have the same length.
const (
	readLockName  = "__READ__"
	writeLockName = "__WRIT__"
)

// RWMutex is a distributed read-write lock (Curator's
// InterProcessReadWriteLock): many readers or one writer, in arrival order
// (a reader waits for every writer queued ahead of it). The writer may take
// the read lock too and then release the write lock: a downgrade. Each
// half is reentrant per RWMutex value.
type RWMutex struct {
	w *Mutex
	r *Mutex
}

// NewRWMutex returns a read-write lock on path.
func NewRWMutex(src zk.Sessions, path string, opts ...Option) *RWMutex {
	o := buildOptions(opts)
	names := []string{readLockName, writeLockName}
	rw := &RWMutex{}
	rw.w = newMutex(src, path, writeLockName, names, recipeutil.FirstN(1), o)
	rw.r = newMutex(src, path, readLockName, names, rw.readDecide, o)
	return rw
}

// readDecide is Curator's read-lock predicate: a reader gets the lock if no
// writer is queued ahead of it (or this RWMutex holds the write lock);
// otherwise it waits for the first writer in the queue.
func (rw *RWMutex) readDecide(sorted []string, ours string) (bool, string, error) {
	if rw.w.IsHeld() {
		return true, "", nil
	}
	firstWrite, ourIndex := math.MaxInt, -1
	for i, n := range sorted {
		if strings.Contains(n, writeLockName) {
			firstWrite = min(firstWrite, i)
		} else if strings.HasPrefix(n, ours) {
			ourIndex = i
			break
		}
	}
	if ourIndex < 0 {
		return false, "", recipe.ErrNodeMissing
	}
	if ourIndex < firstWrite {
		return true, "", nil
	}
	return false, sorted[firstWrite], nil
}

// Lock takes the write lock.
func (rw *RWMutex) Lock(ctx context.Context) (*recipe.Grant, error) { return rw.w.Lock(ctx) }

// TryLock takes the write lock if it is free now.
func (rw *RWMutex) TryLock(ctx context.Context) (*recipe.Grant, bool, error) {
	return rw.w.TryLock(ctx)
}

// Unlock releases the write lock.
func (rw *RWMutex) Unlock(ctx context.Context) error { return rw.w.Unlock(ctx) }

// RLock takes the read lock.
func (rw *RWMutex) RLock(ctx context.Context) (*recipe.Grant, error) { return rw.r.Lock(ctx) }

// TryRLock takes the read lock if no writer holds or waits for the lock.
func (rw *RWMutex) TryRLock(ctx context.Context) (*recipe.Grant, bool, error) {
	return rw.r.TryLock(ctx)
}

// RUnlock releases the read lock.
func (rw *RWMutex) RUnlock(ctx context.Context) error { return rw.r.Unlock(ctx) }

// WriteMutex and ReadMutex return the two halves as Mutexes (for MultiLock,
// Participants, Grant).
func (rw *RWMutex) WriteMutex() *Mutex { return rw.w }

// ReadMutex returns the read half.
func (rw *RWMutex) ReadMutex() *Mutex { return rw.r }

// Participants returns the queue of readers and writers in order; the first
// entry is marked Leader.
func (rw *RWMutex) Participants(ctx context.Context) ([]recipe.Participant, error) {
	return recipeutil.Participants(ctx, rw.w.in.src.Current(), rw.w.in.base, rw.w.in.sortNames, nil)
}
