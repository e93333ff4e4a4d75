package server

import (
	"time"

	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/metrics"
	"github.com/zkgo/zkgo/server/stats"
)

// newMetrics builds s's Prometheus metrics (package metrics) over its
// counters and gauges, read at scrape time.
func newMetrics(s *Server) *metrics.Metrics {
	st := &s.stats
	stages := make([]string, stats.NumStages)
	for i, name := range stats.StageNames {
		if stats.Stage(i) != stats.StageFsync { // fsyncs are zkgo_wal_fsync_duration_seconds
			stages[i] = name
		}
	}
	return metrics.New(metrics.Sources{
		Log:    s.log,
		Gauges: s.gauges,
		Counters: map[string]func() int64{
			"looking_count":            st.LookingCount.Load,
			"connection_request_count": st.ConnectRequests.Load,
			"connection_rejected": func() int64 {
				return st.ThrottledConns.Load() + st.RejectedMaxCnxns.Load() + st.RejectedPerIP.Load()
			},
			"bytes_received_count":                  st.BytesReceived.Load,
			"sessionless_connections_expired":       st.SessionlessExpired.Load,
			"throttled_ops":                         st.WatchRefusals.Load,
			"response_bytes":                        st.ResponseBytes.Load,
			"watch_bytes":                           st.WatchBytes.Load,
			"zkgo_raft_leader_changes_total":        st.LeaderChanges.Load,
			"zkgo_raft_proposals_dropped_total":     s.prop.Dropped,
			"zkgo_session_expirations_total":        s.sessions.Expirations.Load,
			"zkgo_watch_notifications_total":        st.WatchNotifications.Load,
			"revalidate_count":                      st.Revalidations.Load,
			"zkgo_connect_requests_abandoned_total": st.AbandonedConnects.Load,
			"zkgo_connection_parks_total":           st.ConnectionParks.Load,
			"zkgo_audit_events_dropped_total": func() int64 {
				a := s.port.Audit()
				if a == nil { // off, or not opened yet (Start)
					return 0
				}
				return a.Dropped()
			},
		},
		Rejected: map[string]func() int64{
			"max_cnxns":        st.RejectedMaxCnxns.Load,
			"max_client_cnxns": st.RejectedPerIP.Load,
			"throttle":         st.ThrottledConns.Load,
		},
		SnapshotBytes: st.SnapshotBytes.Load,
		Stages:        stages,
	})
}

// noteLeaderChange counts a change of raft leader and, on a member of an
// ensemble, the time it spent without one (election_time, looking_count)
// and when it became leader (leader_uptime). leaderChanged calls it on the
// replica's followLeader goroutine, the only user of s.electionStart.
func (s *Server) noteLeaderChange(ch raftnode.LeaderChange) {
	s.stats.LeaderChanges.Add(1)
	clustered := s.clustered()
	if ch.IsSelf && clustered {
		s.stats.LeaderSince.Store(time.Now().UnixNano())
	} else {
		s.stats.LeaderSince.Store(0)
	}
	if !clustered {
		return // standalone: leads its group of one from the start
	}
	if ch.Leader == 0 {
		s.stats.LookingCount.Add(1)
		s.electionStart = time.Now()
		return
	}
	if !s.electionStart.IsZero() {
		s.met.Election(time.Since(s.electionStart))
		s.electionStart = time.Time{}
	}
}
