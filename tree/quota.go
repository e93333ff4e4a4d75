package tree

import (
	"sort"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/proto"
)

// Quotas follow ZooKeeper's layout: a quota on /app is described by
// /zookeeper/quota/app/zookeeper_limits (limits) and tracked in
// /zookeeper/quota/app/zookeeper_stats (usage), both holding text such as
// "count=10,bytes=-1,countHardLimit=20". The tree keeps the usage node's
// text current on every create, delete and setData below the quota root
// (without bumping its version, as ZooKeeper does). Soft limits (count,
// bytes) are reported through the QuotaWarning callback; hard limits
// (countHardLimit, byteHardLimit) fail the write with QuotaExceeded when
// Options.EnforceQuota is set.

const (
	quotaLimitNode = "zookeeper_limits"
	quotaStatNode  = "zookeeper_stats"
)

// StatsTrack is ZooKeeper's StatsTrack: the "key=value" pairs of a
// quota's limits and usage nodes. Package zkdata uses it too, when it
// replays quota updates of an imported ZooKeeper log.
type StatsTrack map[string]int64

type statsTrack = StatsTrack

// ParseStats reads "k=v" pairs separated by ',' or ';' as ZooKeeper's
// StatsTrack(String) does: a value is what comes before a further '='
// ("bytes=5=" is 5, as toString writes it before extra keys), and a value
// that is not a number counts as -1.
func ParseStats(b []byte) StatsTrack {
	st := StatsTrack{}
	for _, kv := range strings.FieldsFunc(string(b), func(r rune) bool { return r == ',' || r == ';' }) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		v, _, _ = strings.Cut(v, "=")
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			n = -1
		}
		st[strings.TrimSpace(k)] = n
	}
	return st
}

func parseStats(b []byte) StatsTrack { return ParseStats(b) }

// Get returns the value of key k, -1 when it is absent.
func (s StatsTrack) Get(k string) int64 {
	if v, ok := s[k]; ok {
		return v
	}
	return -1
}

func (s StatsTrack) get(k string) int64 { return s.Get(k) }

// Format writes the stats as ZooKeeper's StatsTrack.toString: count and
// bytes first; other keys, if any, after a '=' (so that 3.4's parser
// ignores them) as ";key=value" in sorted order:
// "count=4,bytes=5=;countHardLimit=10".
func (s StatsTrack) Format() []byte {
	var b strings.Builder
	b.WriteString("count=" + strconv.FormatInt(s.Get("count"), 10) + ",bytes=" + strconv.FormatInt(s.Get("bytes"), 10))
	keys := make([]string, 0, len(s))
	for k := range s {
		if k != "count" && k != "bytes" {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		sort.Strings(keys)
		b.WriteByte('=')
		for _, k := range keys {
			b.WriteString(";" + k + "=" + strconv.FormatInt(s[k], 10))
		}
	}
	return []byte(b.String())
}

func (s StatsTrack) format() []byte { return s.Format() }

// setQuotaData replaces a quota node's data without a version change,
// recording the undo step inside a multi.
func (t *Tree) setQuotaData(n *Node, data []byte) {
	t.preserve(n)
	oldBuf, oldMeta := n.bytes(), n.meta
	delta := int64(len(data) - n.dataLen())
	t.record(func() { n.setBytes(oldBuf); n.meta = oldMeta; t.dataSize -= delta })
	n.setData(data)
	t.dataSize += delta
}

// maxQuotaPrefix returns the longest path among p and its ancestors that
// has a quota, or "".
func (t *Tree) maxQuotaPrefix(p string) string {
	if len(t.quotas) == 0 {
		return ""
	}
	for q := p; q != "" && q != "/"; {
		if _, ok := t.quotas[q]; ok {
			return q
		}
		parent, _, ok := parentOf(q)
		if !ok {
			break
		}
		q = parent
	}
	return ""
}

// checkQuota decides whether a create (isCreate) or setData growing a node
// from oldLen to newLen bytes stays within the hard limits of its quota.
func (t *Tree) checkQuota(p string, oldLen, newLen int, isCreate bool) proto.ErrCode {
	prefix := t.maxQuotaPrefix(p)
	if prefix == "" {
		return proto.ErrOk
	}
	limitNode := t.Get(QuotaPath + prefix + "/" + quotaLimitNode)
	statNode := t.Get(QuotaPath + prefix + "/" + quotaStatNode)
	if limitNode == nil || statNode == nil {
		return proto.ErrOk
	}
	limits := parseStats(limitNode.Data())
	cur := parseStats(statNode.Data())
	var countDiff int64
	if isCreate {
		countDiff = 1
	}
	bytesDiff := int64(newLen - oldLen)
	if countDiff != 0 {
		hard := limits.get("countHardLimit")
		soft := limits.get("count")
		newCount := cur.get("count") + countDiff
		if hard > -1 && newCount > hard && t.opts.EnforceQuota {
			return proto.ErrQuotaExceeded
		}
		if soft > -1 && newCount > soft && t.QuotaWarning != nil {
			t.QuotaWarning(prefix, "count", newCount, soft)
		}
	}
	if bytesDiff != 0 {
		hard := limits.get("byteHardLimit")
		soft := limits.get("bytes")
		newBytes := cur.get("bytes") + bytesDiff
		if hard > -1 && newBytes > hard && t.opts.EnforceQuota {
			return proto.ErrQuotaExceeded
		}
		if soft > -1 && newBytes > soft && t.QuotaWarning != nil {
			t.QuotaWarning(prefix, "bytes", newBytes, soft)
		}
	}
	return proto.ErrOk
}

// updateQuotaStats applies a usage change for p and, when p itself is a
// quota limit or stat node, maintains the quota index.
func (t *Tree) updateQuotaStats(p string, countDiff, bytesDiff int64) {
	if underQuota(p) {
		t.quotaNodeChanged(p, countDiff)
	}
	prefix := t.maxQuotaPrefix(p)
	if prefix == "" || (countDiff == 0 && bytesDiff == 0) {
		return
	}
	statNode := t.Get(QuotaPath + prefix + "/" + quotaStatNode)
	if statNode == nil {
		return
	}
	cur := parseStats(statNode.Data())
	cur["count"] = cur.get("count") + countDiff
	cur["bytes"] = cur.get("bytes") + bytesDiff
	t.setQuotaData(statNode, cur.format())
}

// quotaNodeChanged handles the creation (countDiff > 0) or deletion
// (countDiff < 0) of a node inside /zookeeper/quota.
func (t *Tree) quotaNodeChanged(p string, countDiff int64) {
	if countDiff == 0 {
		return
	}
	parent, name, _ := parentOf(p)
	target := strings.TrimPrefix(parent, QuotaPath)
	if target == "" || target == parent {
		return
	}
	switch name {
	case quotaLimitNode:
		if t.quotas == nil {
			t.quotas = make(map[string]struct{})
		}
		if countDiff > 0 {
			t.quotas[target] = struct{}{}
			t.record(func() { delete(t.quotas, target) })
		} else {
			delete(t.quotas, target)
			t.record(func() { t.quotas[target] = struct{}{} })
		}
	case quotaStatNode:
		if countDiff > 0 {
			if n := t.Get(p); n != nil {
				count, bytes := t.usage(target)
				st := parseStats(n.Data())
				st["count"], st["bytes"] = count, bytes
				t.setQuotaData(n, st.format())
			}
		}
	}
}

// usage counts the nodes and data bytes of the subtree at p, p included.
func (t *Tree) usage(p string) (count, bytes int64) {
	n := t.Get(p)
	if n == nil {
		return 0, 0
	}
	return subtreeUsage(n)
}

func subtreeUsage(n *Node) (count, bytes int64) {
	forSubtree(n, func(m *Node) {
		count++
		bytes += int64(m.dataLen())
	})
	return count, bytes
}
