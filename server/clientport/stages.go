package clientport

import (
	"time"

	"github.com/zkgo/zkgo/server/stats"
)

// StampApply implements statemachine.ApplyStamper: the state machine got
// the batch that holds r's entry (stats.StageApply begins).
func (r *request) StampApply(at time.Time) { r.applyAt = at }

// noteStage records that one request spent d in st.
func (s *Port) noteStage(st stats.Stage, d time.Duration) {
	s.stats.Stages.Note(st, d)
	s.met.Stage(int(st), d)
}
