package zkdata

import (
	"slices"
	"strings"

	"github.com/zkgo/zkgo/tree"
)

// Quotas, as ZooKeeper's DataTree keeps them: a quota on /app is the node
// /zookeeper/quota/app/zookeeper_limits; its usage is the text of
// /zookeeper/quota/app/zookeeper_stats ("count=N,bytes=B"), which ZooKeeper
// rewrites outside transactions: recomputed from the subtree when a
// snapshot is loaded and when the stats node is created, adjusted on every
// create, delete and setData under the deepest quota above the node. The
// image does the same, so the stats come out as ZooKeeper would show them
// after recovery.

const (
	quotaLimitNode = "zookeeper_limits"
	quotaStatNode  = "zookeeper_stats"
)

// maxQuotaPrefix returns the deepest path among p and its ancestors that
// has a quota, or "" (DataTree.getMaxPrefixWithQuota).
func (im *Image) maxQuotaPrefix(p string) string {
	if len(im.quotas) == 0 {
		return ""
	}
	for q := p; q != "" && q != "/"; {
		if _, ok := im.quotas[q]; ok {
			return q
		}
		i := strings.LastIndexByte(q, '/')
		if i < 0 {
			break
		}
		q = q[:i]
	}
	return ""
}

// deleteQuota forgets the quota on target and those below it (ZooKeeper's
// PathTrie drops the whole branch).
func (im *Image) deleteQuota(target string) {
	for q := range im.quotas {
		if q == target || strings.HasPrefix(q, target+"/") {
			delete(im.quotas, q)
		}
	}
}

// setupQuota rebuilds the quota set and recomputes every quota's usage
// after a snapshot is loaded (DataTree.setupQuota): every childless
// zookeeper_limits node under /zookeeper/quota names a quota.
func (im *Image) setupQuota() {
	im.quotas = make(map[string]struct{})
	var limits []string
	for p, n := range im.nodes {
		if strings.HasPrefix(p, tree.QuotaPath+"/") && len(n.kids) == 0 && strings.HasSuffix(p, "/"+quotaLimitNode) {
			limits = append(limits, p)
		}
	}
	slices.Sort(limits)
	for _, p := range limits {
		target := p[len(tree.QuotaPath):strings.Index(p, "/"+quotaLimitNode)]
		if target == "" {
			continue
		}
		im.updateQuotaForPath(target)
		im.quotas[target] = struct{}{}
	}
}

// updateQuotaForPath sets the usage of the quota on target to the size of
// its subtree.
func (im *Image) updateQuotaForPath(target string) {
	var count, bytes int64
	im.subtree(target, func(n *znode) {
		count++
		bytes += int64(len(n.data))
	})
	sp := tree.QuotaPath + target + "/" + quotaStatNode
	if n := im.nodes[sp]; n != nil {
		st := tree.StatsTrack{"count": count, "bytes": bytes}
		im.change(sp, n, func() { n.data = st.Format() })
	}
}

func (im *Image) subtree(p string, fn func(*znode)) {
	n := im.nodes[p]
	if n == nil {
		return
	}
	fn(n)
	for k := range n.kids {
		im.subtree(p+"/"+k, fn)
	}
}

// updateQuotaStat adds to the usage of the quota on prefix.
func (im *Image) updateQuotaStat(prefix string, bytesDiff, countDiff int64) {
	sp := tree.QuotaPath + prefix + "/" + quotaStatNode
	n := im.nodes[sp]
	if n == nil {
		return
	}
	st := tree.ParseStats(n.data)
	st["count"] = st.Get("count") + countDiff
	st["bytes"] = st.Get("bytes") + bytesDiff
	im.change(sp, n, func() { n.data = st.Format() })
}
