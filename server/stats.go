package server

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/proto"
)

// serverStats are the counters the four-letter words report.
type serverStats struct {
	packetsReceived atomic.Int64
	packetsSent     atomic.Int64
	lat             latencyStats
}

func (st *serverStats) reset() {
	st.packetsReceived.Store(0)
	st.packetsSent.Store(0)
	st.lat.reset()
}

// latencyStats tracks request latencies as ZooKeeper reports them: whole
// milliseconds, the average taken over whole-millisecond samples (so it
// always lies between min and max). The server keeps one, and each
// connection one for cons.
type latencyStats struct {
	mu             sync.Mutex // guards the fields below
	count, totalMs int64
	min, max, last time.Duration
}

func (l *latencyStats) add(d time.Duration) {
	l.mu.Lock()
	if l.count == 0 || d < l.min {
		l.min = d
	}
	if d > l.max {
		l.max = d
	}
	l.count++
	l.totalMs += d.Milliseconds()
	l.last = d
	l.mu.Unlock()
}

// get returns min, average, max and last in milliseconds.
func (l *latencyStats) get() (min int64, avg float64, max, last int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return 0, 0, 0, 0
	}
	return l.min.Milliseconds(), float64(l.totalMs) / float64(l.count), l.max.Milliseconds(), l.last.Milliseconds()
}

func (l *latencyStats) reset() {
	l.mu.Lock()
	l.count, l.totalMs, l.min, l.max, l.last = 0, 0, 0, 0, 0
	l.mu.Unlock()
}

// javaDouble formats f as Java's Double.toString does for ordinary values
// ("0.0", "1.5", "0.3333333333333333").
func javaDouble(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func opName(op proto.OpCode) string {
	switch op {
	case proto.OpPing:
		return "PING"
	case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL:
		return "CREA"
	case proto.OpDelete:
		return "DELE"
	case proto.OpSetData:
		return "SETD"
	case proto.OpGetData:
		return "GETD"
	case proto.OpExists:
		return "EXIS"
	case proto.OpGetChildren, proto.OpGetChildren2:
		return "GETC"
	case proto.OpGetACL:
		return "GETA"
	case proto.OpSetACL:
		return "SETA"
	case proto.OpMulti:
		return "MULT"
	case proto.OpMultiRead:
		return "MLTR"
	case proto.OpSync:
		return "SYNC"
	case proto.OpCheck:
		return "CHEC"
	case proto.OpCloseSession:
		return "CLOS"
	case proto.OpCreateSession:
		return "SESS"
	case proto.OpSetWatches:
		return "SETW"
	case proto.OpSetWatches2:
		return "STW2"
	case proto.OpAddWatch:
		return "ADDW"
	case proto.OpRemoveWatches:
		return "REMW"
	case proto.OpCheckWatches:
		return "CHKW"
	case proto.OpWhoAmI:
		return "HOMI"
	case proto.OpGetEphemerals:
		return "GETE"
	case proto.OpGetAllChildrenNumber:
		return "GETACN"
	}
	return "NA"
}
