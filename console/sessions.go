package console

import (
	"errors"
	"net/http"
	"strings"
	"time"
)

// Session list and detail bounds.
const (
	sessionsPerPage = 200
	sessionDetail   = 1000 // ephemerals and watches listed per session
)

type sessionsData struct {
	Err       string
	Sessions  []SessionInfo
	Total     int
	After     int64
	NextAfter int64
	HasNext   bool
	Now       time.Time
}

type sessionData struct {
	Err     string
	Session SessionInfo
	Now     time.Time
}

func (c *Console) serveSessions(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.reqCtx(r)
	defer cancel()
	q := r.URL.Query()
	if ids := q.Get("id"); ids != "" {
		id, ok := parseHexID(ids)
		if !ok {
			c.fail(w, r, http.StatusBadRequest, "not a session id: "+ids)
			return
		}
		d := sessionData{Now: time.Now()}
		status := http.StatusOK
		if c.cfg.Status == nil {
			d.Err = "no status source configured"
		} else if s, err := c.cfg.Status.Session(ctx, id, sessionDetail); errors.Is(err, ErrNoSession) {
			d.Err, status = "no session "+hexID(id)+" (it may have ended)", http.StatusNotFound
		} else if err != nil {
			d.Err = err.Error()
		} else {
			s.AuthIDs = maskAuthIDs(s.AuthIDs)
			d.Session = s
		}
		d.Session.ID = id
		c.render(w, r, status, "session", page{Title: "Session " + hexID(id), Nav: "sessions", Data: d})
		return
	}
	d := sessionsData{Now: time.Now()}
	if a := q.Get("after"); a != "" {
		d.After, _ = parseHexID(a)
	}
	if c.cfg.Status == nil {
		d.Err = "no status source configured"
	} else if ss, total, err := c.cfg.Status.Sessions(ctx, d.After, sessionsPerPage); err != nil {
		d.Err = err.Error()
	} else {
		for i := range ss {
			ss[i].AuthIDs = maskAuthIDs(ss[i].AuthIDs)
		}
		d.Sessions, d.Total = ss, total
		if len(ss) == sessionsPerPage {
			d.HasNext, d.NextAfter = true, ss[len(ss)-1].ID
		}
	}
	c.render(w, r, http.StatusOK, "sessions", page{Title: "Sessions", Nav: "sessions", Data: d})
}

// maskAuthIDs returns ids with each digest identity's hash left out
// ("digest:alice", not "digest:alice:<hash>"): sessions are shown to
// anyone who reaches the console, and a weak password is found from its
// hash offline. (The server's StatusSource leaves them out already.)
func maskAuthIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if rest, ok := strings.CutPrefix(id, "digest:"); ok {
			user, _, _ := strings.Cut(rest, ":")
			id = "digest:" + user
		}
		out[i] = id
	}
	return out
}
