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
	connections     atomic.Int64 // accepted since start
	watchEvents     atomic.Int64

	latMu      sync.Mutex // guards the latency fields
	latCount   int64
	latTotal   time.Duration
	latTotalMs int64
	latMin     time.Duration
	latMax     time.Duration

	opsMu sync.Mutex // guards ops
	ops   map[proto.OpCode]int64
}

func (st *serverStats) count(op proto.OpCode) {
	st.opsMu.Lock()
	if st.ops == nil {
		st.ops = make(map[proto.OpCode]int64)
	}
	st.ops[op]++
	st.opsMu.Unlock()
}

func (st *serverStats) latency(d time.Duration) {
	st.latMu.Lock()
	if st.latCount == 0 || d < st.latMin {
		st.latMin = d
	}
	if d > st.latMax {
		st.latMax = d
	}
	st.latCount++
	st.latTotal += d
	st.latTotalMs += d.Milliseconds()
	st.latMu.Unlock()
}

// latencies returns min/avg/max in whole milliseconds, the average over
// whole-millisecond samples, as ZooKeeper computes them.
func (st *serverStats) latencies() (min int64, avg float64, max int64) {
	st.latMu.Lock()
	defer st.latMu.Unlock()
	if st.latCount == 0 {
		return 0, 0, 0
	}
	return st.latMin.Milliseconds(), float64(st.latTotalMs) / float64(st.latCount), st.latMax.Milliseconds()
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

func (st *serverStats) reset() {
	st.packetsReceived.Store(0)
	st.packetsSent.Store(0)
	st.latMu.Lock()
	st.latCount, st.latTotal, st.latTotalMs, st.latMin, st.latMax = 0, 0, 0, 0, 0
	st.latMu.Unlock()
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
