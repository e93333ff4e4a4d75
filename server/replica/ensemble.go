package replica

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkgo/zkgo/internal/atomicfile"
	"github.com/zkgo/zkgo/internal/boundedfile"
	"github.com/zkgo/zkgo/raftnode"
)

// ensembleFile holds a member's ensemble identity, in its data directory
// beside the raft storage.
const ensembleFile = "ENSEMBLE"

// identity is who an ensemble is, as the peer handshake checks it on both
// sides: a member of another ensemble (a server.N line copied from the
// wrong zoo.cfg) or of an earlier formation of this one (a machine that
// was down while the others were wiped and formed the ensemble anew) is
// refused instead of mixing two logs.
//
// ensemble is a hash of the initial Membership (every member's id, peer
// address and role, as all members' zoo.cfg files list them), fixed when
// the member first starts. formation is raftnode's formation: pending
// while a new ensemble forms, then the random value its first leader
// chose and logged (statemachine.EntryFormation), 0 for a data directory of a zkgo
// that had no formations.
//
// The file holds one line: "ensemble HASH", "ensemble HASH formation
// pending" or "ensemble HASH formation VALUE", hexadecimal.
type identity struct {
	ensemble, formation uint64
}

func (id identity) line() string {
	switch id.formation {
	case 0:
		return fmt.Sprintf("ensemble %016x\n", id.ensemble)
	case raftnode.FormationPending:
		return fmt.Sprintf("ensemble %016x formation pending\n", id.ensemble)
	}
	return fmt.Sprintf("ensemble %016x formation %016x\n", id.ensemble, id.formation)
}

// readIdentity reads dir's identity file; ok is false if there is none.
func readIdentity(dir string) (id identity, ok bool, err error) {
	path := filepath.Join(dir, ensembleFile)
	b, err := boundedfile.ReadFile(path, "ensemble identity file", 4096)
	if errors.Is(err, fs.ErrNotExist) {
		return identity{}, false, nil
	}
	if err != nil {
		return identity{}, false, err
	}
	damaged := fmt.Errorf("%s is damaged (%q): it names the ensemble this member belongs to", path, strings.TrimSpace(string(b)))
	f := strings.Fields(string(b))
	if len(b) > 256 || (len(f) != 2 && len(f) != 4) || f[0] != "ensemble" {
		return identity{}, false, damaged
	}
	if id.ensemble, err = strconv.ParseUint(f[1], 16, 64); err != nil || id.ensemble == 0 {
		return identity{}, false, damaged
	}
	if len(f) == 4 {
		switch {
		case f[2] != "formation":
			return identity{}, false, damaged
		case f[3] == "pending":
			id.formation = raftnode.FormationPending
		default:
			if id.formation, err = strconv.ParseUint(f[3], 16, 64); err != nil || id.formation < 2 {
				return identity{}, false, damaged
			}
		}
	}
	return id, true, nil
}

// writeIdentity records id in dir, atomically and durably.
func writeIdentity(dir string, id identity) error {
	if err := atomicfile.Write(filepath.Join(dir, ensembleFile), []byte(id.line()), 0o600); err != nil {
		return fmt.Errorf("recording the ensemble identity: %w", err)
	}
	return nil
}

// ensembleIdentity returns the identity of the ensemble this member
// belongs to, recording it at first start: the Membership's hash, with a
// pending formation if the member is forming a new ensemble (forming),
// none if it restarts on data of a zkgo that had no identity file.
func ensembleIdentity(dir string, peers []Peer, forming bool) (identity, error) {
	id, ok, err := readIdentity(dir)
	if err != nil || ok {
		return id, err
	}
	id = identity{ensemble: membershipHash(peers)}
	if forming {
		id.formation = raftnode.FormationPending
	}
	return id, writeIdentity(dir, id)
}

// adoptEnsembleIdentity records the identity of the ensemble a member
// joined (as its members' probes answered it), unless the data directory
// records one already, which wins.
func adoptEnsembleIdentity(dir string, id identity) (identity, error) {
	if have, ok, err := readIdentity(dir); err != nil || ok {
		return have, err
	}
	if id.ensemble == 0 {
		return identity{}, errors.New("the ensemble did not say its identity")
	}
	return id, writeIdentity(dir, id)
}

// membershipHash hashes a Membership independently of its order and of
// the members' addresses: members agree on who belongs by server id and
// role. How each member reaches the others is its own business — its own
// line may say 0.0.0.0, others may name it by a host name, an IP, or an
// address behind a proxy or NAT — and must not make members refuse each
// other. (Data directories of releases before this rule recorded a hash
// that included the addresses; the recorded value is what the handshake
// compares, so they keep working, and members that join them take it from
// the probes.)
func membershipHash(peers []Peer) uint64 {
	sum := sha256.Sum256([]byte("zkgo ensemble ids\n" + strings.Join(membershipLines(peers), "\n")))
	id := binary.BigEndian.Uint64(sum[:8])
	if id == 0 {
		id = 1
	}
	return id
}

// membershipLines describes a Membership as the identity sees it: one
// "server.N=role" line per member, sorted.
func membershipLines(peers []Peer) []string {
	lines := make([]string, 0, len(peers))
	for _, p := range peers {
		role := "participant"
		if p.Observer {
			role = "observer"
		}
		lines = append(lines, fmt.Sprintf("server.%d=%s", p.ID, role))
	}
	slices.Sort(lines)
	return lines
}

// membershipDiff says which lines of two memberships (membershipLines)
// differ: those only in mine and those only in theirs.
func membershipDiff(mine, theirs []string) string {
	var only, other []string
	for _, l := range mine {
		if !slices.Contains(theirs, l) {
			only = append(only, l)
		}
	}
	for _, l := range theirs {
		if !slices.Contains(mine, l) {
			other = append(other, l)
		}
	}
	return fmt.Sprintf("only here: [%s]; only there: [%s]", strings.Join(only, " "), strings.Join(other, " "))
}

// clusterMismatch is the peer transport's ClusterMismatch: peer belongs to
// another ensemble by the handshake's identity. The member that dialed
// knows whom it reached (the address of its own server line): every 10 s
// at most per server, it asks that member (a probe that carries its own
// member list and identity) for its member list and logs which lines
// differ; the asked member logs the same from its side (answerProbe). The
// member that accepted cannot tell the dialer's address (other ensembles
// may use the same server ids), so it waits for that probe.
func (r *Replica) clusterMismatch(peer uint64, dialed bool) {
	p, ok := r.Peer(MemberID(peer))
	if !ok || !dialed {
		return
	}
	r.mismatchMu.Lock()
	if r.mismatchLogged == nil {
		r.mismatchLogged = map[int64]time.Time{}
	}
	if time.Since(r.mismatchLogged[p.ID]) < 10*time.Second {
		r.mismatchMu.Unlock()
		return
	}
	r.mismatchLogged[p.ID] = time.Now()
	r.mismatchMu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		mine := membershipLines(r.CurrentPeers())
		a, err := r.probe(p, probeRequest{Op: "status", MyID: r.opts.ServerID, Servers: mine, Ensemble: r.view.ensembleID()})
		if err != nil {
			r.log.Warn("a member of another ensemble: its handshake names another ensemble identity; asking it for its member list failed",
				"server", p.ID, "addr", p.Addr, "err", err)
			return
		}
		r.logOtherEnsemble(p.ID, p.Addr, mine, a.Servers, a.Ensemble)
	}()
}

// logOtherEnsemble logs which member lines differ between this member
// (mine) and a member of another ensemble (theirs, identity ensemble).
func (r *Replica) logOtherEnsemble(id int64, addr string, mine, theirs []string, ensemble uint64) {
	if slices.Equal(mine, theirs) {
		r.log.Warn("a member of another ensemble: the same member list, but the ensemble identities recorded at first start differ "+
			"(zkgo/ENSEMBLE: members of two different ensembles, or of one formed with different server lists)",
			"server", id, "addr", addr, "mine", fmt.Sprintf("%016x", r.view.ensembleID()), "theirs", fmt.Sprintf("%016x", ensemble))
		return
	}
	r.log.Warn("a member of another ensemble: its configuration lists other members; fix the server.N lines (ids and roles) so that they agree",
		"server", id, "addr", addr, "differ", membershipDiff(mine, theirs))
}

// ensembleID returns the member's ensemble identity (0 before it is known).
func (v *memberView) ensembleID() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.ensemble
}
