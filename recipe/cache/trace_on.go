//go:build cachetrace

package cache

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

const tracing = true

type traceRec struct {
	at     time.Duration
	e      *engine
	format string
	args   []any
}

var (
	traceMu    sync.Mutex // guards traceRecs
	traceRecs  []traceRec
	traceStart = time.Now()
)

// trace records an event of e (formatted only when dumped).
func trace(e *engine, format string, a ...any) {
	traceMu.Lock()
	traceRecs = append(traceRecs, traceRec{time.Since(traceStart), e, format, a})
	traceMu.Unlock()
}

// traceDump returns what e recorded.
func traceDump(e *engine) string {
	traceMu.Lock()
	defer traceMu.Unlock()
	var b strings.Builder
	for _, r := range traceRecs {
		if r.e == e {
			fmt.Fprintf(&b, "%8.4f "+r.format+"\n", append([]any{r.at.Seconds()}, r.args...)...)
		}
	}
	return b.String()
}
