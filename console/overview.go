package console

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// scanCache shares recipe scans: a result younger than ScanMaxAge is
// reused, and concurrent askers wait for the one scan under way.
type scanCache struct {
	// mu guards last and running.
	mu      sync.Mutex
	last    *ScanResult
	running chan struct{} // closed when the scan under way ends; nil if none
}

// scan returns a scan no older than maxAge (0: a new one), starting one if
// needed. The scan runs in its own goroutine, bounded by the console's
// lifetime and 30 s, not by the asker's ctx: an asker that gives up does
// not waste it, and the next asker takes its result.
func (c *Console) scan(ctx context.Context, maxAge time.Duration) (*ScanResult, error) {
	sc := c.scans
	for {
		sc.mu.Lock()
		if sc.last != nil && maxAge > 0 && time.Since(sc.last.At) <= maxAge {
			res := sc.last
			sc.mu.Unlock()
			return res, nil
		}
		if sc.running == nil {
			if c.ctx.Err() != nil {
				sc.mu.Unlock()
				return nil, context.Canceled
			}
			done := make(chan struct{})
			sc.running = done
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				res := c.runScan()
				sc.mu.Lock()
				if res != nil {
					sc.last = res
				}
				sc.running = nil
				sc.mu.Unlock()
				close(done)
			}()
		}
		wait := sc.running
		sc.mu.Unlock()
		select {
		case <-wait:
			maxAge = time.Hour // take what the scan we waited for found
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.ctx.Done():
			return nil, context.Canceled
		}
	}
}

// runScan scans the recipe roots through the shared session.
func (c *Console) runScan() *ScanResult {
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	conn, err := c.shared.get(ctx)
	if err != nil {
		return &ScanResult{At: time.Now(), Errors: []string{err.Error()}}
	}
	res := Scan(ctx, zkReader{conn}, ScanOptions{Roots: c.cfg.RecipeRoots, Budget: c.cfg.ScanBudget}, time.Now())
	if c.ctx.Err() != nil {
		return nil
	}
	return &res
}

// statusView is Status's answer for a page, or why there is none.
type statusView struct {
	Have   bool
	Member Member
	Err    string
}

func (c *Console) member(ctx context.Context) statusView {
	if c.cfg.Status == nil {
		return statusView{Err: "no status source configured"}
	}
	m, err := c.cfg.Status.Member(ctx)
	if err != nil {
		return statusView{Err: err.Error()}
	}
	return statusView{Have: true, Member: m}
}

// overviewData is the overview's and the recipes page's content.
type overviewData struct {
	Status  statusView
	Scan    *ScanResult
	ScanErr string
	Locks   []Recipe // mutexes, read-write locks, semaphores
	Elects  []Recipe // latches and elections
	Roots   []string
	Budget  int
	Now     time.Time
}

func (c *Console) overview(r *http.Request) overviewData {
	ctx, cancel := c.reqCtx(r)
	defer cancel()
	d := overviewData{Status: c.member(ctx), Roots: c.cfg.RecipeRoots, Budget: c.cfg.ScanBudget, Now: time.Now()}
	res, err := c.scan(ctx, c.cfg.ScanMaxAge)
	if err != nil {
		d.ScanErr = err.Error()
		return d
	}
	d.Scan = res
	for _, rc := range res.Recipes {
		if rc.Kind.IsElection() {
			d.Elects = append(d.Elects, rc)
		} else {
			d.Locks = append(d.Locks, rc)
		}
	}
	return d
}

func (c *Console) serveOverview(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Events: c.eventsURL("overview", ""), Data: c.overview(r)})
}

func (c *Console) serveRecipes(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "recipes", page{Title: "Recipes", Nav: "recipes", Events: c.eventsURL("overview", ""), Data: c.overview(r)})
}
