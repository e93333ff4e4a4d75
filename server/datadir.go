package server

import (
	"io"
	"time"

	"github.com/zkgo/zkgo/server/replica"
	"github.com/zkgo/zkgo/tree"
)

// The data directory offline, for zkgo import, export, recover and the
// snapshot commands (cmd/zkgo): the work is the replica's
// (server/replica/seed.go, loaddir.go, recover.go, which say more).

// SeedDataDir makes the data directory of opts start from the tree read
// from r (zkgo's snapshot format), as replica.SeedDataDir describes.
func SeedDataDir(opts Options, r io.Reader) error {
	return replica.SeedDataDir(opts.replicaConfig(), r)
}

// LoadDataDir returns the tree a stopped member's data directory holds,
// as replica.LoadDataDir describes.
func LoadDataDir(opts Options) (*tree.Tree, error) {
	return replica.LoadDataDir(opts.replicaConfig())
}

// RecoverDataDir recovers a stopped member's data directory into a new
// one-member ensemble, as replica.RecoverDataDir describes.
func RecoverDataDir(opts Options) (*tree.Tree, string, error) {
	return replica.RecoverDataDir(opts.replicaConfig())
}

// RaftTickInterval is the length of one raft tick for a tickTime.
func RaftTickInterval(tickTime time.Duration) time.Duration {
	return replica.RaftTickInterval(tickTime)
}
