package zkcli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/zk"
)

// Quotas use ZooKeeper's layout (org.apache.zookeeper.Quotas): the quota of
// /app lives in /zookeeper/quota/app/zookeeper_limits, its usage in
// /zookeeper/quota/app/zookeeper_stats, both as StatsTrack text.
const (
	quotaRoot = "/zookeeper/quota"
	limitNode = "zookeeper_limits"
	statNode  = "zookeeper_stats"
)

func quotaPath(p string) string {
	if p == "/" {
		return quotaRoot
	}
	return quotaRoot + p
}

func limitPath(p string) string { return quotaPath(p) + "/" + limitNode }
func statPath(p string) string  { return quotaPath(p) + "/" + statNode }

// StatsTrack keys.
const (
	keyCount          = "count"
	keyBytes          = "bytes"
	keyCountHardLimit = "countHardLimit"
	keyByteHardLimit  = "byteHardLimit"
)

// statsTrack is ZooKeeper's StatsTrack: key=value pairs where a missing
// key reads -1.
type statsTrack map[string]int64

var pairSep = regexp.MustCompile(`[,;]+`)

// parseStatsTrack reads "count=1,bytes=2=;byteHardLimit=3;countHardLimit=4"
// (',' or ';' separate pairs; the stray '=' after bytes is for parsers
// older than ZooKeeper 3.7).
func parseStatsTrack(text string) (statsTrack, error) {
	t := statsTrack{}
	if text == "" {
		return t, nil
	}
	for _, kv := range pairSep.Split(text, -1) {
		if kv == "" {
			continue
		}
		parts := strings.Split(kv, "=")
		for len(parts) > 1 && parts[len(parts)-1] == "" { // Java's split drops trailing empties
			parts = parts[:len(parts)-1]
		}
		v := int64(-1)
		if len(parts) > 1 {
			n, err := strconv.ParseInt(parts[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("invalid quota data %q", text)
			}
			v = n
		}
		t[parts[0]] = v
	}
	return t, nil
}

func (t statsTrack) get(k string) int64 {
	if v, ok := t[k]; ok {
		return v
	}
	return -1
}

// String is StatsTrack.toString: count and bytes first, then, after an
// extra '=', the other keys sorted and separated by ';'.
func (t statsTrack) String() string {
	s := fmt.Sprintf("count=%d,bytes=%d", t.get(keyCount), t.get(keyBytes))
	var keys []string
	for k := range t {
		if k != keyCount && k != keyBytes {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		sort.Strings(keys)
		s += "="
		for _, k := range keys {
			s += fmt.Sprintf(";%s=%d", k, t[k])
		}
	}
	return s
}

var quotaOpts = []string{"n", "b", "N", "B"}

func cmdSetQuota(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{
		{"n", true, "num soft quota"}, {"b", true, "bytes soft quota"},
		{"N", true, "num hard quota"}, {"B", true, "bytes hard quota"},
	}, quotaOpts)
	if err != nil {
		return parseFail(err)
	}
	if cl.selected(quotaOpts...) == "" {
		return fail("Missing required option: [-n num soft quota, -b bytes soft quota, -N num hard quota, -B bytes hard quota]")
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	path := cl.arg(1)
	if strings.HasPrefix(path, quotaRoot) {
		return fail("cannot set a quota under the path: %s", quotaRoot)
	}
	quota := statsTrack{keyCount: -1, keyBytes: -1, keyCountHardLimit: -1, keyByteHardLimit: -1}
	for _, o := range []struct{ opt, key string }{{"n", keyCount}, {"b", keyBytes}, {"N", keyCountHardLimit}, {"B", keyByteHardLimit}} {
		if !cl.has(o.opt) {
			continue
		}
		count := o.opt == "n" || o.opt == "N"
		var v int64
		var ok bool
		if count {
			var n int32
			n, ok = parseJavaInt(cl.val(o.opt))
			v = int64(n)
		} else {
			v, ok = parseJavaLong(cl.val(o.opt))
		}
		switch {
		case !ok:
			return fail("NumberFormatException happens when parsing the option value")
		case count && v <= 0:
			return fail("the num quota must be greater than zero")
		case !count && v < 0:
			return fail("the bytes quota must be greater than or equal to zero")
		}
		quota[o.key] = v
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	if path == "/" {
		// zkCli fails here too, on the invalid path "/zookeeper/quota/".
		return fail("cannot set a quota on /")
	}
	return s.createQuota(ctx, s.live(), path, quota)
}

// createQuota is SetQuotaCommand.createQuota.
func (s *Shell) createQuota(ctx context.Context, conn *zk.Conn, path string, quota statsTrack) error {
	st, err := conn.Exists(ctx, path)
	if err != nil {
		return zkFail(err, path)
	}
	if st == nil {
		return fail("%s does not exist.", path)
	}
	if err := checkChildQuota(ctx, conn, path); err != nil {
		return err
	}
	if err := checkParentQuota(ctx, conn, path); err != nil {
		return err
	}
	create := func(p string, data []byte) error {
		_, err := conn.Create(ctx, p, data, zk.OpenACLUnsafe, zk.ModePersistent)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return zkFail(err, p)
		}
		return nil
	}
	exists := func(p string) (bool, error) {
		st, err := conn.Exists(ctx, p)
		if err != nil {
			return false, zkFail(err, p)
		}
		return st != nil, nil
	}
	if ok, err := exists(quotaRoot); err != nil {
		return err
	} else if !ok {
		for _, p := range []string{"/zookeeper", quotaRoot} {
			if err := create(p, nil); err != nil {
				return err
			}
		}
	}
	qp := quotaRoot
	for _, part := range strings.Split(path, "/")[1:] {
		qp += "/" + part
		if ok, err := exists(qp); err != nil {
			return err
		} else if !ok {
			if err := create(qp, nil); err != nil {
				return err
			}
		}
	}
	limits, stats := qp+"/"+limitNode, qp+"/"+statNode
	read := func(p string) (statsTrack, error) {
		data, _, err := conn.Get(ctx, p)
		if err != nil {
			return nil, zkFail(err, p)
		}
		t, err := parseStatsTrack(string(data))
		if err != nil {
			return nil, fail("%s: %v", p, err)
		}
		return t, nil
	}
	lst, err := conn.Exists(ctx, limits)
	if err != nil {
		return zkFail(err, limits)
	}
	if lst == nil {
		if _, err := conn.Create(ctx, limits, []byte(quota.String()), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			return zkFail(err, limits)
		}
		if _, err := conn.Create(ctx, stats, []byte(statsTrack{keyCount: 0, keyBytes: 0}.String()), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			return zkFail(err, stats)
		}
		q, err := read(limits)
		if err != nil {
			return err
		}
		u, err := read(stats)
		if err != nil {
			return err
		}
		s.quotaWarnings(q, u)
		return nil
	}
	q, err := read(limits)
	if err != nil {
		return err
	}
	for k, v := range quota {
		if v > -1 {
			q[k] = v
		}
	}
	u, err := read(stats)
	if err != nil {
		return err
	}
	s.quotaWarnings(q, u)
	if _, err := conn.Set(ctx, limits, []byte(q.String()), zk.AnyVersion); err != nil {
		return zkFail(err, limits)
	}
	return nil
}

// quotaWarnings is SetQuotaCommand.checkQuota.
func (s *Shell) quotaWarnings(q, u statsTrack) {
	if c := q.get(keyCount); c > -1 && c < u.get(keyCount) || q.get(keyCountHardLimit) > -1 && q.get(keyCountHardLimit) < u.get(keyCount) {
		s.outf("[Warning]: the count quota you create is less than the existing count:%d\n", u.get(keyCount))
	}
	if b := q.get(keyBytes); b > -1 && b < u.get(keyBytes) || q.get(keyByteHardLimit) > -1 && q.get(keyByteHardLimit) < u.get(keyBytes) {
		s.outf("[Warning]: the bytes quota you create is less than the existing bytes:%d\n", u.get(keyBytes))
	}
}

// checkChildQuota refuses a quota on path when a node below it has one,
// walking the quota tree as zkCli does (ZKUtil.visitSubTreeDFS order).
func checkChildQuota(ctx context.Context, conn *zk.Conn, path string) error {
	root := quotaPath(path)
	if _, _, err := conn.Get(ctx, root); errors.Is(err, zk.ErrNoNode) {
		return nil
	} else if err != nil {
		return zkFail(err, root)
	}
	children := func(p string) ([]string, error) {
		ch, _, err := conn.Children(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		if err != nil {
			return nil, zkFail(err, p)
		}
		sort.Strings(ch)
		return ch, nil
	}
	visit := func(qp string) error {
		ch, err := children(qp)
		if err != nil {
			return err
		}
		for _, c := range ch {
			if qp != root && c == limitNode {
				return fail("%s has a child %s which has a quota", path, strings.TrimPrefix(qp, quotaRoot))
			}
		}
		return nil
	}
	var walk func(p string) error
	walk = func(p string) error {
		ch, err := children(p)
		if err != nil {
			return err
		}
		for _, c := range ch {
			if err := visit(joinPath(p, c)); err != nil {
				return err
			}
		}
		for _, c := range ch {
			if err := walk(joinPath(p, c)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(root); err != nil {
		return err
	}
	return walk(root)
}

// checkParentQuota refuses a quota on path when an ancestor has one.
func checkParentQuota(ctx context.Context, conn *zk.Conn, path string) error {
	parts := strings.Split(path, "/")
	qp := quotaRoot
	for i := 1; i < len(parts)-1; i++ {
		qp += "/" + parts[i]
		ch, _, err := conn.Children(ctx, qp)
		if errors.Is(err, zk.ErrNoNode) || err == nil && len(ch) == 0 {
			return nil
		}
		if err != nil {
			return zkFail(err, qp)
		}
		for _, c := range ch {
			if c == limitNode {
				return fail("%s has a parent %s which has a quota", path, strings.TrimPrefix(qp, quotaRoot))
			}
		}
	}
	return nil
}

func cmdListQuota(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, nil, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	path := cl.arg(1)
	if err := checkPath(path, false); err != nil {
		return err
	}
	s.errf("absolute path is %s\n", limitPath(path))
	conn := s.live()
	var tracks []statsTrack
	for _, p := range []string{limitPath(path), statPath(path)} {
		data, _, err := conn.Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return fail("quota for %s does not exist.", path)
		}
		if err != nil {
			return zkFail(err, p)
		}
		t, err := parseStatsTrack(string(data))
		if err != nil {
			return fail("%s: %v", p, err)
		}
		tracks = append(tracks, t)
	}
	s.outf("Output quota for %s %s\nOutput stat for %s %s\n", path, tracks[0], path, tracks[1])
	return nil
}

func cmdDelQuota(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{
		{"n", false, "num soft quota"}, {"b", false, "bytes soft quota"},
		{"N", false, "num hard quota"}, {"B", false, "bytes hard quota"},
	}, quotaOpts)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	path := cl.arg(1)
	if err := checkPath(path, false); err != nil {
		return err
	}
	conn := s.live()
	noQuota := func(err error, p string) error {
		if errors.Is(err, zk.ErrNoNode) {
			return fail("quota for %s does not exist.", path)
		}
		return zkFail(err, p)
	}
	limits := limitPath(path)
	st, err := conn.Exists(ctx, limits)
	if err != nil {
		return zkFail(err, limits)
	}
	if st == nil {
		s.outf("Quota does not exist for %s\n", path)
		return nil
	}
	data, _, err := conn.Get(ctx, limits)
	if err != nil {
		return noQuota(err, limits)
	}
	q, err := parseStatsTrack(string(data))
	if err != nil {
		return fail("%s: %v", limits, err)
	}
	if opt := cl.selected(quotaOpts...); opt != "" {
		key := map[string]string{"n": keyCount, "b": keyBytes, "N": keyCountHardLimit, "B": keyByteHardLimit}[opt]
		q[key] = -1
		if _, err := conn.Set(ctx, limits, []byte(q.String()), zk.AnyVersion); err != nil {
			return noQuota(err, limits)
		}
		return nil
	}
	parent := quotaPath(path)
	children, _, err := conn.Children(ctx, parent)
	if err != nil {
		return noQuota(err, parent)
	}
	for _, ch := range children {
		if err := conn.Delete(ctx, parent+"/"+ch, zk.AnyVersion); err != nil {
			return noQuota(err, parent+"/"+ch)
		}
	}
	// Remove the quota tree's nodes left without children, up to the root.
	for p := parent; p != quotaRoot && strings.HasPrefix(p, quotaRoot+"/"); p = p[:strings.LastIndexByte(p, '/')] {
		ch, _, err := conn.Children(ctx, p)
		if err != nil {
			return noQuota(err, p)
		}
		if len(ch) > 0 {
			break
		}
		if err := conn.Delete(ctx, p, zk.AnyVersion); err != nil {
			return noQuota(err, p)
		}
	}
	return nil
}
