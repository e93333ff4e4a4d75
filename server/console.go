package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zkgo/zkgo/console/status"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/clientport"
	"github.com/zkgo/zkgo/server/replica"
	"github.com/zkgo/zkgo/tree"
)

// The web console (package console) on the AdminServer's port, at "/":
// it reads the tree as a ZooKeeper client of this member, over
// in-process connections that the client connection handler serves like
// any other (dialConsole), and asks consoleStatus for what a client
// cannot see (this member's raft state, the ensemble, the sessions'
// connections). Options.AdminConsole turns it on (zkgo.admin.console; on
// by default with the AdminServer).
//
// The console's sessions never carry this server's own identity: a
// connection it dials is, for the ip scheme, the HTTP client it serves
// (a logged-in user's session) or an address that no ip ACL matches (the
// shared anonymous session), never loopback.

// ConsoleDialer opens an in-process client connection for the console.
// client is the address of the HTTP client the session acts for
// ("ip:port", http.Request.RemoteAddr), or "" for the console's shared
// anonymous session; the server sees it as the connection's remote
// address, which is what the ip scheme matches. cert, if not nil, is the
// certificate that HTTP client presented over HTTPS and the admin port
// verified (the first of http.Request.TLS.VerifiedChains): the session
// gets its x509 identity, as a client presenting it on a TLS client port
// does. Only a client address may carry one.
type ConsoleDialer = func(ctx context.Context, client string, cert *x509.Certificate) (net.Conn, error)

// ConsoleFactory builds the web console the AdminServer serves at "/"
// (package console; cmd/zkgo passes one that calls console.New): servers
// is this member's client address (for display; the console's sessions
// are opened with dial), src answers about the member. The Closer is
// closed with the AdminServer. Called once, by listenAdmin, after the
// client port listens. package server does not import the console: the
// console is a client of the server, and its tests start servers.
type ConsoleFactory func(servers string, dial ConsoleDialer, src status.Source, log *slog.Logger) (http.Handler, io.Closer, error)

// consoleAnonymous is the remote address of the console's shared
// anonymous session: not an IP address, so no ip ACL matches it.
const consoleAnonymous = "zkgo-console:0"

// newConsole builds the console for this server. A member without a
// plain client port (TLS only) gets none: its clients must present TLS,
// and the console's in-process sessions would not.
func (s *Server) newConsole() (http.Handler, io.Closer, error) {
	if s.port.Addr() == nil {
		return nil, nil, errors.New("no plain client port (a TLS-only member): the console's sessions would bypass TLS")
	}
	return s.opts.AdminConsole(s.port.Addr().String(), s.dialConsole, consoleStatus{s}, s.log.With("part", "console"))
}

// dialConsole implements ConsoleDialer: the connection is served by
// newConn like an accepted one (limits, maxClientCnxns per address,
// cons, the ip identity), over net.Pipe.
func (s *Server) dialConsole(ctx context.Context, client string, cert *x509.Certificate) (net.Conn, error) {
	remote := consoleAnonymous
	if client == "" && cert != nil {
		return nil, errors.New("console: the anonymous session cannot carry a certificate")
	}
	if client != "" {
		host, _, err := net.SplitHostPort(client)
		if err != nil || net.ParseIP(host) == nil {
			return nil, fmt.Errorf("console: client address %q is not ip:port", client)
		}
		remote = client
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.port.Closing() {
		return nil, errors.New("the server is closing")
	}
	mine, theirs := net.Pipe()
	s.port.ServeConsoleConn(theirs, remote, cert)
	return mine, nil
}

// consoleStatus implements status.Source from the server's own
// state. The console's handlers and its overview feed call it from
// several goroutines; every answer is read from memory under the locks
// the four-letter words take.
type consoleStatus struct{ s *Server }

func (cs consoleStatus) Member(ctx context.Context) (status.Member, error) {
	s := cs.s
	m := status.Member{
		ID:      s.opts.ServerID,
		Role:    roleOf(s.Mode()),
		Version: Version(),
		Zxid:    s.lastZxid(),
		Started: s.started,
	}
	m.Connections = len(s.port.Conns())
	m.Waiting = s.raft.WaitingFor()
	s.sm.View(func(t *tree.Tree) {
		m.Sessions = t.SessionCount()
		m.Znodes = int64(t.NodeCount())
	})
	if zxid, at := s.lastSnapshot(); zxid >= 0 {
		m.LastSnapshot = status.Snapshot{Zxid: zxid, Index: uint64(zxid), Size: s.stats.SnapshotBytes.Load()}
		if at >= 0 {
			m.LastSnapshot.Time = time.Unix(at, 0)
		}
	}
	st, _, _, _, ok := s.raft.Status()
	if ok {
		m.RaftTerm, m.CommitIndex, m.AppliedIndex = st.Term, st.Commit, st.Applied
	}
	if s.clustered() {
		if ok && st.Leader == 0 && m.Role != status.RoleObserver {
			m.Role = status.RoleCandidate
		}
		// lead is the leader's server id, -1 while none is known (server
		// id 0 is a member like any other).
		lead := int64(-1)
		if l := s.raft.Leader(); l != 0 {
			lead = replica.MemberID(uint64(l))
		}
		for _, p := range s.raft.CurrentPeers() {
			peer := status.Peer{ID: p.ID, PeerAddr: p.Addr, Voting: !p.Observer, Role: status.RoleUnknown}
			if ms := s.currentMembership(); ms != nil {
				if sv, ok := ms.Server(p.ID); ok && sv.ClientPort > 0 {
					host := sv.ClientAddr
					if host == "" || host == "0.0.0.0" {
						host = sv.Host
					}
					peer.ClientAddr = net.JoinHostPort(host, strconv.Itoa(sv.ClientPort))
				}
			}
			switch {
			case p.Observer:
				peer.Role = status.RoleObserver
			case p.ID == lead:
				peer.Role = status.RoleLeader
			case lead >= 0:
				peer.Role = status.RoleFollower
			}
			self := p.ID == s.opts.ServerID
			// What this member knows of the others: on the leader, how
			// far each has acknowledged the log and whether it answered
			// within an election timeout (a member that did not is down
			// or cut off: unknown, however close its match index);
			// elsewhere, only that the leader it follows answers.
			if ok && st.Role == raftnode.RoleLeader {
				for id, match := range st.Match {
					if replica.MemberID(id) == p.ID {
						peer.Match = match
						if st.Commit > match {
							peer.Lag = st.Commit - match
						}
					}
				}
				for _, id := range st.Heard {
					if replica.MemberID(id) == p.ID {
						peer.Reachable = true
					}
				}
				if !peer.Reachable {
					peer.Role = status.RoleUnknown
				}
			} else {
				peer.Reachable = self || p.ID == lead
			}
			if self {
				peer.Reachable = true
				peer.Role = m.Role
			}
			m.Ensemble = append(m.Ensemble, peer)
		}
		sort.Slice(m.Ensemble, func(i, j int) bool { return m.Ensemble[i].ID < m.Ensemble[j].ID })
	}
	return m, ctx.Err()
}

func roleOf(mode string) status.Role {
	switch mode {
	case "standalone":
		return status.RoleStandalone
	case "leader":
		return status.RoleLeader
	case "follower", "read-only":
		return status.RoleFollower
	case "observer":
		return status.RoleObserver
	}
	return status.RoleUnknown
}

func (cs consoleStatus) Sessions(ctx context.Context, after int64, limit int) ([]status.SessionInfo, int, error) {
	ids := cs.sessionIDs()
	i := sort.Search(len(ids), func(i int) bool { return ids[i] > after })
	page := ids[i:]
	if limit > 0 && len(page) > limit {
		page = page[:limit]
	}
	conns := cs.connsBySession()
	out := make([]status.SessionInfo, 0, len(page))
	for _, id := range page {
		out = append(out, cs.info(id, conns[id], 0))
	}
	return out, len(ids), ctx.Err()
}

func (cs consoleStatus) Session(ctx context.Context, id int64, limit int) (status.SessionInfo, error) {
	found := false
	cs.s.sm.View(func(t *tree.Tree) { found = t.Session(id) != nil })
	if !found {
		return status.SessionInfo{}, status.ErrNoSession
	}
	info := cs.info(id, cs.connsBySession()[id], max(limit, 1))
	return info, ctx.Err()
}

// sessionIDs returns every session's id, sorted.
func (cs consoleStatus) sessionIDs() []int64 {
	var ids []int64
	cs.s.sm.View(func(t *tree.Tree) {
		for _, ss := range t.Sessions() {
			ids = append(ids, ss.ID)
		}
	})
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// connsBySession returns this member's connections by session.
func (cs consoleStatus) connsBySession() map[int64]*clientport.Conn {
	out := make(map[int64]*clientport.Conn)
	for _, c := range cs.s.port.Conns() {
		if c.SessionID() != 0 {
			out[c.SessionID()] = c
		}
	}
	return out
}

// info describes session id; with lists > 0 it includes its ephemerals'
// paths and its watches, at most lists of each.
func (cs consoleStatus) info(id int64, c *clientport.Conn, lists int) status.SessionInfo {
	s := cs.s
	si := status.SessionInfo{ID: id}
	var eph []string
	s.sm.View(func(t *tree.Tree) {
		if ss := t.Session(id); ss != nil {
			si.Timeout = time.Duration(ss.Timeout) * time.Millisecond
		}
		eph = t.Ephemerals(id)
	})
	si.EphemeralCount = len(eph)
	if c != nil {
		ci := c.Info()
		si.ClientAddr = ci.Remote
		if ci.LastResp > 0 {
			si.LastSeen = time.UnixMilli(ci.LastResp)
		}
		for _, a := range c.AuthIDs() {
			si.AuthIDs = append(si.AuthIDs, shownID(a.Scheme, a.ID))
		}
		si.WatchCount = s.watches.WatchesOf(c)
	}
	if lists > 0 {
		sort.Strings(eph)
		si.Ephemerals = eph[:min(len(eph), lists)]
		if c != nil {
			paths := s.watches.BySession()[id]
			sort.Strings(paths)
			for _, p := range paths[:min(len(paths), lists)] {
				si.Watches = append(si.Watches, status.Watch{Path: p})
			}
		}
	}
	return si
}

// shownID is an identity as the console shows it: a digest identity's
// hash is left out ("digest:alice", not "digest:alice:<hash>"). The hash
// is what a digest ACL entry holds, and a weak password is found from it
// offline; the console shows sessions to anyone who can reach the port.
func shownID(scheme, id string) string {
	if scheme == "digest" {
		id, _, _ = strings.Cut(id, ":")
	}
	return scheme + ":" + id
}
