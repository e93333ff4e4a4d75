package server

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/internal/atomicfile"
)

// ensembleFile holds a member's ensemble identity, in its data directory
// beside the raft storage.
const ensembleFile = "ENSEMBLE"

// ensembleIdentity returns the identity of the ensemble this member
// belongs to, which the peer handshake checks on both sides, so that a
// member of another ensemble (a server.N line copied from the wrong
// zoo.cfg) is refused instead of mixing two ensembles' raft traffic.
//
// The identity is fixed when the member first starts: a hash of the
// initial membership (every member's id, peer address and role, as all
// members' zoo.cfg files list them), recorded in dir/ENSEMBLE and read
// from there afterwards. A data directory of an earlier release, which has
// no such file, records the current membership's.
func ensembleIdentity(dir string, peers []Peer) (uint64, error) {
	path := filepath.Join(dir, ensembleFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		text := strings.TrimSpace(string(b))
		id, perr := strconv.ParseUint(strings.TrimPrefix(text, "ensemble "), 16, 64)
		if perr != nil || !strings.HasPrefix(text, "ensemble ") || id == 0 {
			return 0, fmt.Errorf("%s is damaged (%q): it names the ensemble this member belongs to", path, text)
		}
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return 0, err
	}
	id := membershipHash(peers)
	if err := atomicfile.Write(path, []byte(fmt.Sprintf("ensemble %016x\n", id)), 0o600); err != nil {
		return 0, fmt.Errorf("recording the ensemble identity: %w", err)
	}
	return id, nil
}

// adoptEnsembleIdentity records the identity of the ensemble a member
// joined (as its members' probes answered it), unless the data directory
// records one already, which wins.
func adoptEnsembleIdentity(dir string, id uint64) (uint64, error) {
	path := filepath.Join(dir, ensembleFile)
	if _, err := os.Stat(path); err == nil {
		return ensembleIdentity(dir, nil)
	}
	if id == 0 {
		return 0, errors.New("the ensemble did not say its identity")
	}
	if err := atomicfile.Write(path, []byte(fmt.Sprintf("ensemble %016x\n", id)), 0o600); err != nil {
		return 0, fmt.Errorf("recording the ensemble identity: %w", err)
	}
	return id, nil
}

// membershipHash hashes a membership independently of its order.
func membershipHash(peers []Peer) uint64 {
	lines := make([]string, 0, len(peers))
	for _, p := range peers {
		role := "participant"
		if p.Observer {
			role = "observer"
		}
		lines = append(lines, fmt.Sprintf("%d=%s;%s", p.ID, p.Addr, role))
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte("zkgo ensemble\n" + strings.Join(lines, "\n")))
	id := binary.BigEndian.Uint64(sum[:8])
	if id == 0 {
		id = 1
	}
	return id
}
