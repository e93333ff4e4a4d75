package replica

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zkgo/zkgo/raftnode"
)

// Status probes: a member asks the others, over the peer port, for their
// view of the ensemble (probeRequest, probeAnswer) — who formed it, which
// raft ids and voters it has, whether it is up — before it decides how to
// start (decide) and when it asks to be admitted (admit).

// Probes (raftnode/probe.go) carry these JSON documents. A member that
// starts on an empty data directory asks the others what they hold
// before it decides to bootstrap the ensemble with them or to rejoin it.
type probeRequest struct {
	Op string `json:"op"` // "status" or "join"
	// For "join": who asks to be admitted, under which new raft id, from
	// which peer address (it must be the one this member's configuration
	// gives that server id).
	MyID int64  `json:"myid,omitempty"`
	ID   uint64 `json:"id,omitempty"`
	Addr string `json:"addr,omitempty"`
	// Servers are the asking member's Membership lines
	// (membershipLines), so that a member that refuses it can say which
	// lines differ; with Ensemble, its identity, on a status probe of a
	// member whose handshake refused it (ensemble.go's clusterMismatch).
	Servers  []string `json:"servers,omitempty"`
	Ensemble uint64   `json:"ensemble,omitempty"`
	// Via is set on a join a follower passed on to the leader (admit):
	// the follower's server id, which the leader checks the connection's
	// certificate against, the follower having checked the joiner's.
	Via *int64 `json:"via,omitempty"`
}

type probeAnswer struct {
	// Fresh: no raft state yet (deciding how to start). Joining: waiting
	// to be admitted under a new raft id.
	Fresh   bool   `json:"fresh,omitempty"`
	Joining bool   `json:"joining,omitempty"`
	ID      uint64 `json:"id,omitempty"` // the answering member's raft id
	// Ensemble and Formation are the ensemble identity (ensemble.go).
	Ensemble  uint64 `json:"ensemble,omitempty"`
	Formation uint64 `json:"formation,omitempty"`
	// Term and Last are raft's term and last committed (or stored) index.
	Term   uint64 `json:"term,omitempty"`
	Last   uint64 `json:"last,omitempty"`
	Leader uint64 `json:"leader,omitempty"`
	// Voters and Learners are the raft configuration as the member knows
	// it (running members only).
	Voters   []uint64 `json:"voters,omitempty"`
	Learners []uint64 `json:"learners,omitempty"`
	// Synced, from the leader only, are the members in sync with it
	// (itself included): syncedIDs.
	Synced []uint64 `json:"synced,omitempty"`
	// Members is the hash of the Membership the answering member's
	// configuration lists (ensemble.go's membershipHash): members bootstrap
	// together only with the same list, so a server started from a
	// configuration that adds it to an ensemble forming at that moment
	// does not bootstrap a different one.
	Members uint64 `json:"members,omitempty"`
	// Instance is the answering member's peer transport instance token
	// (formation.go's verifyPending).
	Instance uint64 `json:"instance,omitempty"`
	// Servers are the lines Members hashes (membershipLines), so that a
	// member whose list differs can say which lines do.
	Servers []string `json:"servers,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// formed reports whether the answering member belongs to an ensemble
// that exists: one that elected a leader (term above the bootstrap's 1)
// or committed past the bootstrap entry. Members bootstrapped from the
// same zoo.cfg that have not elected yet are not formed: a fresh member
// may still bootstrap with them.
func (a *probeAnswer) formed() bool {
	return a.Error == "" && !a.Fresh && !a.Joining && (a.Term > 1 || a.Last > 1)
}

func (a *probeAnswer) has(id uint64) bool {
	return slices.Contains(a.Voters, id) || slices.Contains(a.Learners, id)
}

// logLimiter allows a log line at most every 10 seconds.
type logLimiter struct {
	mu   sync.Mutex // guards last
	last time.Time
}

func (l *logLimiter) Allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.last) < 10*time.Second {
		return false
	}
	l.last = time.Now()
	return true
}

// answerProbe is the peer transport's ProbeHandler.
func (r *Replica) answerProbe(req []byte, cs *tls.ConnectionState) []byte {
	var q probeRequest
	var a probeAnswer
	if err := json.Unmarshal(req, &q); err != nil {
		a.Error = "bad probe: " + err.Error()
	} else {
		a = r.probeStatus()
		if q.Op == "join" && a.Error == "" {
			who := q.MyID
			if q.Via != nil {
				who = *q.Via
			}
			err := r.verifyPeer(raftID(who, 0), cs)
			if err == nil {
				err = r.admit(q)
			} else {
				err = fmt.Errorf("%w: %w", errNotAdmitted, err)
			}
			if err != nil {
				a.Error = err.Error()
				if errors.Is(err, errNotAdmitted) && r.view.refusalLog.Allow() {
					args := []any{"server", q.MyID, "addr", q.Addr, "err", err}
					if mine := membershipLines(r.CurrentPeers()); q.Servers != nil && !slices.Equal(mine, q.Servers) {
						args = append(args, "differ", membershipDiff(mine, q.Servers))
					}
					r.log.Warn("refused a member that asked to rejoin the ensemble", args...)
				}
			}
		} else if q.Op != "status" && q.Op != "join" {
			a.Error = fmt.Sprintf("unknown probe %q", q.Op)
		} else if q.Ensemble != 0 && a.Ensemble != 0 && q.Ensemble != a.Ensemble && q.Servers != nil && r.view.otherEnsembleLog.Allow() {
			// A member of another ensemble whose connection this one
			// refused asks for the member list: say which lines differ
			// from this side too.
			r.logOtherEnsemble(q.MyID, "", membershipLines(r.CurrentPeers()), q.Servers, q.Ensemble)
		}
	}
	b, _ := json.Marshal(&a)
	return b
}

// probeStatus describes this member for a probe.
func (r *Replica) probeStatus() probeAnswer {
	v := &r.view
	v.mu.Lock()
	node, a := r.node, probeAnswer{Ensemble: v.ensemble, Formation: v.formation, Joining: v.joining,
		Members: membershipHash(r.opts.Peers), Servers: membershipLines(r.opts.Peers)}
	has, hs := v.hasState, v.hardState
	v.mu.Unlock()
	if t, ok := r.tr.(*raftnode.TCPTransport); ok {
		a.Instance = t.Instance()
	}
	if a.Joining {
		return a
	}
	if node == nil {
		if !has {
			a.Fresh = true
		} else {
			a.Term, a.Last = hs.Term, hs.Commit
		}
		return a
	}
	s := node.Status()
	a.ID, a.Term, a.Last, a.Leader, a.Voters, a.Learners = s.ID, s.Term, s.Commit, s.Leader, s.Voters, s.Learners
	if s.Role == raftnode.RoleLeader {
		a.Synced = syncedIDs(s)
	}
	return a
}

// probeAll probes every other member of peers at once; answers[i] is nil
// for a member that could not be reached, and errs[i] says why.
func (r *Replica) probeAll(peers []Peer, q probeRequest) (answers []*probeAnswer, errs []error) {
	answers, errs = make([]*probeAnswer, len(peers)), make([]error, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		if p.ID == r.opts.ServerID {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = r.probe(p, q)
		}()
	}
	wg.Wait()
	return answers, errs
}

// probe asks member p (at its peer address, or where Config.PeerDialAddr
// says to dial it; each address of a multiAddress line in turn until one
// answers).
func (r *Replica) probe(p Peer, q probeRequest) (*probeAnswer, error) {
	req, _ := json.Marshal(&q)
	cfg := r.opts.PeerClientTLS
	if r.opts.PeerClientTLSFunc != nil {
		cfg = r.opts.PeerClientTLSFunc()
	}
	var b []byte
	var errs []error
	for _, addr := range p.addrs() {
		dial := addr
		if r.opts.PeerDialAddr != nil {
			dial = r.opts.PeerDialAddr(p.ID, addr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ans, err := raftnode.ProbeAuth(ctx, dial, addr, cfg, r.auth, req)
		cancel()
		if err == nil {
			b = ans
			break
		}
		errs = append(errs, err)
	}
	if b == nil {
		return nil, errors.Join(errs...)
	}
	addr := p.Addr
	var a probeAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("probe answer from %s: %w", addr, err)
	}
	return &a, nil
}
