package server

import (
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/metrics"
	"github.com/zkgo/zkgo/server/report"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/watch"
)

// reports is the server as package report sees it (report.Source): the
// four-letter words and the AdminServer's commands print what these
// methods read (report.go) and call the actions below.
type reports struct{ s *Server }

var _ report.Source = reports{}

func (r reports) Running() bool                            { return r.s.running() }
func (r reports) HasQuorum() bool                          { return r.s.hasQuorum() }
func (r reports) ReadOnly() bool                           { return r.s.port.ReadOnly() }
func (r reports) Clustered() bool                          { return r.s.clustered() }
func (r reports) IsLeader() bool                           { return r.s.isLeader() }
func (r reports) WaitingFor() string                       { return r.s.raft.WaitingFor() }
func (r reports) ServerStats() report.ServerStats          { return r.s.serverStatsView() }
func (r reports) Gauges() metrics.Gauges                   { return r.s.gauges() }
func (r reports) Conf() report.Conf                        { return r.s.confView() }
func (r reports) InitialConfig() string                    { return r.s.opts.InitialConfig }
func (r reports) Environment() []report.EnvEntry           { return r.s.environment() }
func (r reports) Monitor() []report.MonitorValue           { return r.s.monitorValues() }
func (r reports) Watches() *watch.Manager                  { return r.s.watches }
func (r reports) SessionDump() report.SessionDump          { return r.s.sessionDump() }
func (r reports) DirSizes() (int64, int64)                 { return r.s.dirSizes() }
func (r reports) DigestLog() []tree.ZxidDigest             { return r.s.digestLog() }
func (r reports) LastSnapshot() (int64, int64)             { return r.s.lastSnapshot() }
func (r reports) Leader() report.LeaderView                { return r.s.leaderView() }
func (r reports) Observers() []report.ObserverInfo         { return r.s.observers() }
func (r reports) VotingMembers() []config.Server           { return r.s.votingMembers() }
func (r reports) ResetConnectionStats()                    { r.s.resetConnectionStats() }
func (r reports) ResetServerStats()                        { r.s.resetServerStats() }
func (r reports) TraceMask() int64                         { return r.s.trace.v.Load() }
func (r reports) SetTraceMask(mask int64)                  { r.s.trace.v.Store(mask) }
func (r reports) LogInfo() ([]report.KV, error)            { return r.s.logInfo() }
func (r reports) Heavy(key string, f func() string) string { return r.s.heavyOutput(key, f) }

// ConfigDump is what conf prints instead of the settings: the zoo.cfg
// the server was started from (Options.ConfigDump), nil without one.
func (r reports) ConfigDump() []string {
	if r.s.opts.ConfigDump == nil {
		return nil
	}
	return r.s.opts.ConfigDump()
}

// Conns are the handshaken client connections, oldest first.
func (r reports) Conns() []report.ConnInfo {
	conns := r.s.port.Conns()
	out := make([]report.ConnInfo, len(conns))
	for i, c := range conns {
		out[i] = c.Info()
	}
	return out
}

// ZabState reads zabstate's fields (report.ZabState).
func (r reports) ZabState() report.ZabState {
	s := r.s
	if !s.clustered() {
		return report.ZabState{}
	}
	me, _ := s.currentMembership().Server(s.opts.ServerID)
	z := report.ZabState{Clustered: true, MyID: s.opts.ServerID, IsLeader: s.isLeader(),
		ClientAddress: report.ClientAddress(me), Broadcast: s.hasQuorum(), LastZxid: s.lastZxid()}
	if me.Host != "" {
		z.QuorumAddress = net.JoinHostPort(me.Host, strconv.Itoa(me.PeerPort))
		z.ElectionAddr = net.JoinHostPort(me.Host, strconv.Itoa(me.ElectionPort))
	}
	st, _, _, _, _ := s.raft.Status()
	z.Voting = st.Role != raftnode.RoleLearner && me.Role == config.Participant
	return z
}

// YieldLeadership hands leadership to the most caught-up voter (ydld).
func (r reports) YieldLeadership() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.s.raft.HandOverWait())
	defer cancel()
	return r.s.TransferLeadership(ctx, -1)
}

// RequestLeadership asks the leader to hand leadership to this member
// (rqld).
func (r reports) RequestLeadership() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.s.raft.HandOverWait())
	defer cancel()
	if err := r.s.RequestLeadership(ctx); err != nil {
		return 0, err
	}
	return r.s.opts.ServerID, nil
}

// CreateSnapshot schedules a snapshot (csnp).
func (r reports) CreateSnapshot() (uint64, error) {
	node := r.s.raft.Raft()
	if node == nil {
		return 0, errors.New("raft is not running")
	}
	return node.RequestSnapshot(), nil
}

// AdminCommand returns the JSON the AdminServer answers for the command
// called name (args are its query parameters); for tools and tests.
func (s *Server) AdminCommand(name string, args map[string]string) []byte {
	return report.Run(reports{s}, name, args)
}

// FourLetterWord returns the output of a four-letter word, ignoring the
// whitelist; for tools and tests.
func (s *Server) FourLetterWord(cmd string) string {
	return report.FourLetterText(reports{s}, cmd)
}
