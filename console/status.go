package console

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/zkgo/zkgo/console/status"
)

// The status types live in package status (console/status), which
// package server implements without importing the console.
type (
	// StatusSource is status.Source: what the console asks the server.
	StatusSource = status.Source
	Role         = status.Role
	Member       = status.Member
	Snapshot     = status.Snapshot
	Peer         = status.Peer
	SessionInfo  = status.SessionInfo
	Watch        = status.Watch
)

// ErrNoSession is status.ErrNoSession.
var ErrNoSession = status.ErrNoSession

// Roles (status's).
const (
	RoleStandalone = status.RoleStandalone
	RoleLeader     = status.RoleLeader
	RoleFollower   = status.RoleFollower
	RoleObserver   = status.RoleObserver
	RoleCandidate  = status.RoleCandidate
	RoleJoining    = status.RoleJoining
	RoleUnknown    = status.RoleUnknown
)

// FakeStatus is a StatusSource held in memory, for tests and for running
// the console without a server. Set its fields under Lock/Unlock (or
// before use); the methods copy what they return.
type FakeStatus struct {
	// mu guards M and S.
	mu sync.Mutex
	M  Member
	S  []SessionInfo // any order
}

// Update runs fn with the fake's fields locked.
func (f *FakeStatus) Update(fn func(m *Member, s *[]SessionInfo)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.M, &f.S)
}

// Member implements StatusSource.
func (f *FakeStatus) Member(ctx context.Context) (Member, error) {
	if err := ctx.Err(); err != nil {
		return Member{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.M
	m.Ensemble = slices.Clone(f.M.Ensemble)
	return m, nil
}

// Sessions implements StatusSource.
func (f *FakeStatus) Sessions(ctx context.Context, after int64, limit int) ([]SessionInfo, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	all := slices.Clone(f.S)
	slices.SortFunc(all, func(a, b SessionInfo) int { return cmp.Compare(a.ID, b.ID) })
	var page []SessionInfo
	for _, s := range all {
		if s.ID > after && len(page) < limit {
			s.EphemeralCount, s.WatchCount = max(s.EphemeralCount, len(s.Ephemerals)), max(s.WatchCount, len(s.Watches))
			s.Ephemerals, s.Watches, s.AuthIDs = nil, nil, slices.Clone(s.AuthIDs)
			page = append(page, s)
		}
	}
	return page, len(all), nil
}

// Session implements StatusSource.
func (f *FakeStatus) Session(ctx context.Context, id int64, limit int) (SessionInfo, error) {
	if err := ctx.Err(); err != nil {
		return SessionInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.S {
		if s.ID == id {
			s.EphemeralCount, s.WatchCount = max(s.EphemeralCount, len(s.Ephemerals)), max(s.WatchCount, len(s.Watches))
			s.Ephemerals = slices.Sorted(slices.Values(s.Ephemerals))
			s.Watches = slices.Clone(s.Watches)
			slices.SortFunc(s.Watches, func(a, b Watch) int {
				if a.Path != b.Path {
					return cmp.Compare(a.Path, b.Path)
				}
				return cmp.Compare(a.Kind, b.Kind)
			})
			s.Ephemerals = s.Ephemerals[:min(len(s.Ephemerals), limit)]
			s.Watches = s.Watches[:min(len(s.Watches), limit)]
			s.AuthIDs = slices.Clone(s.AuthIDs)
			return s, nil
		}
	}
	return SessionInfo{}, ErrNoSession
}
