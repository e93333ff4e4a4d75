package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/server/report"
	"github.com/zkgo/zkgo/tree"
)

func (s *Server) fourLetterAllowed(cmd string) bool {
	for _, w := range s.opts.FourLetterWords {
		if w == "*" || w == cmd {
			return true
		}
	}
	return false
}

// heavyTTL: heavy outputs (report.Source.Heavy) walk every connection,
// session or watch. Polled, they could keep the tree or the watch
// manager locked and starve writes (CVE-2017-5637): each is computed one
// at a time and reused for heavyTTL, so polling costs at most one
// computation per word and second.
const heavyTTL = time.Second

// heavyCache holds the last output of each heavy word.
type heavyCache struct {
	mu   sync.Mutex // guards out; held while one is computed (one at a time)
	out  map[string]heavyOutput
	runs atomic.Int64 // computations, for tests
}

// clear drops the outputs kept, after crst or srst changed what they
// print.
func (h *heavyCache) clear() {
	h.mu.Lock()
	clear(h.out)
	h.mu.Unlock()
}

type heavyOutput struct {
	at   time.Time
	text string
}

// fourLetterWord is the answer to a four-letter word on the client port
// (clientport.Parts.FourLetterWord). stmk is followed by the new trace
// mask, 8 bytes big-endian, which it reads from r (as ZooKeeper, after
// the whitelist check); without them there is no answer (ok false).
func (s *Server) fourLetterWord(cmd string, r io.Reader) (text string, ok bool) {
	switch {
	case !s.fourLetterAllowed(cmd):
		return fmt.Sprintf("%s is not executed because it is not in the whitelist.\n", cmd), true
	case cmd == "stmk":
		var mask [8]byte
		if _, err := io.ReadFull(r, mask[:]); err != nil {
			return "", false
		}
		s.trace.v.Store(int64(binary.BigEndian.Uint64(mask[:])))
	}
	return report.Word(reports{s}, cmd), true
}

// heavyOutput returns the output computed by compute under key (a
// four-letter word, or an AdminServer command), at most heavyTTL old:
// compute runs at most once per key and heavyTTL, one at a time.
func (s *Server) heavyOutput(key string, compute func() string) string {
	h := &s.heavy
	h.mu.Lock()
	defer h.mu.Unlock()
	if o, ok := h.out[key]; ok && time.Since(o.at) < heavyTTL {
		return o.text
	}
	text := compute()
	h.runs.Add(1)
	if h.out == nil {
		h.out = make(map[string]heavyOutput)
	}
	h.out[key] = heavyOutput{at: time.Now(), text: text}
	return text
}

func (s *Server) lastZxid() int64 {
	return s.sm.LastZxid()
}

func portOf(a interface{ String() string }) string {
	if a == nil {
		return ""
	}
	s := a.String()
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// digestLog returns the tree's logged digests, oldest first (hash).
func (s *Server) digestLog() []tree.ZxidDigest {
	var log []tree.ZxidDigest
	s.sm.View(func(t *tree.Tree) { log = t.DigestLog() })
	return log
}
