package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// The pure parts of zkgo top: reading mntr's answer, rates between two
// polls, and the table.

// mntrSample is one member's answer to one poll.
type mntrSample struct {
	addr string
	at   time.Time         // when the answer was read
	vals map[string]string // mntr's keys and values; nil without numbers
	err  error             // why there are no numbers (errNotServing: it answered)
}

var (
	// errNotServing: the member answered but serves no requests (it has no
	// quorum): ZooKeeper's answer to mntr then.
	errNotServing = errors.New("not serving")
	// errNotWhitelisted: the member refuses mntr.
	errNotWhitelisted = errors.New("mntr is not in 4lw.commands.whitelist")
)

// answered reports whether the member answered mntr (with numbers, or
// that it is not serving).
func (s mntrSample) answered() bool { return s.err == nil || s.err == errNotServing }

// maxMntrKey bounds a key of mntr's; longer "keys" are garbage.
const maxMntrKey = 128

// parseMntr reads mntr's answer: "key<TAB>value" lines. Lines that are not
// such (garbage, a key with spaces or none) are skipped; the first value
// of a repeated key stands. ZooKeeper's two refusals (not serving, not
// whitelisted) are errors, as is an answer without a single key.
func parseMntr(text string) (map[string]string, error) {
	switch {
	case strings.Contains(text, "not currently serving requests"):
		return nil, errNotServing
	case strings.Contains(text, "not executed because it is not in the whitelist"):
		return nil, errNotWhitelisted
	}
	vals := make(map[string]string)
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), "\t")
		if !ok || k == "" || len(k) > maxMntrKey || strings.ContainsAny(k, " \x00") {
			continue
		}
		if _, dup := vals[k]; !dup {
			vals[k] = strings.TrimSpace(v)
		}
	}
	if len(vals) == 0 {
		if text == "" {
			return nil, errors.New("closed without answering mntr")
		}
		return nil, errors.New("no mntr keys in the answer")
	}
	return vals, nil
}

// num returns key's value as a number.
func (s mntrSample) num(key string) (float64, bool) {
	v, ok := s.vals[key]
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// rate is how fast the counter key grew per second from prev to cur; not
// ok when either lacks it, no time passed, or it went back (the member
// restarted, or srst reset it).
func rate(prev, cur mntrSample, key string) (float64, bool) {
	a, okA := prev.num(key)
	b, okB := cur.num(key)
	dt := cur.at.Sub(prev.at).Seconds()
	if !okA || !okB || dt <= 0 || b < a {
		return 0, false
	}
	if ua, ok := prev.num("zk_uptime"); ok {
		if ub, ok := cur.num("zk_uptime"); ok && ub < ua {
			return 0, false
		}
	}
	return (b - a) / dt, true
}

// shortError is err in a few words for a table cell.
func shortError(err error) string {
	var op *net.OpError
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return "lookup " + dns.Name + ": " + dns.Err
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "connection lost"
	case errors.As(err, &op):
		err = op.Err
	}
	s := err.Error()
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// topColumns are the table's columns after MEMBER and ROLE.
var topColumns = []string{"ZNODES", "SESS", "CONNS", "WATCHES", "OUTST", "REQ/S", "SENT/S", "LATENCY", "TERM", "APPLIED", "LAG", "DATA"}

// renderTop writes the header line and the table of cur (prev holds the
// previous poll's answers by address, for the rates) and returns how many
// members answered.
func renderTop(w io.Writer, now time.Time, cur []mntrSample, prev map[string]mntrSample) int {
	answered, maxApplied := 0, -1.0
	var leaders []string
	standalone := false
	for _, s := range cur {
		if s.answered() {
			answered++
		}
		if a, ok := s.num("zkgo_raft_applied"); ok && a > maxApplied {
			maxApplied = a
		}
		switch s.vals["zk_server_state"] {
		case "leader":
			leaders = append(leaders, s.addr)
		case "standalone":
			standalone = true
		}
	}
	leader := strings.Join(leaders, ",")
	switch {
	case leader != "":
	case standalone:
		leader = "(standalone)"
	default:
		leader = "none"
	}
	fmt.Fprintf(w, "zkgo top  %s  leader %s  %d/%d members answered\n", now.Format("2006-01-02 15:04:05"), leader, answered, len(cur))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "MEMBER\tROLE\t%s\n", strings.Join(topColumns, "\t"))
	for _, s := range cur {
		fmt.Fprintf(tw, "%s\t%s\n", s.addr, strings.Join(topRow(s, prev, maxApplied), "\t"))
	}
	tw.Flush()
	return answered
}

// topRow returns the cells of s's row after MEMBER: every column has one
// (a missing key is "-"), so that the columns of the rows around it stay
// aligned.
func topRow(s mntrSample, prev map[string]mntrSample, maxApplied float64) []string {
	if s.vals == nil {
		role := "unreachable: " + shortError(s.err)
		switch s.err {
		case errNotServing:
			role = "not serving"
		case errNotWhitelisted:
			role = "refused: mntr not whitelisted"
		}
		row := []string{role}
		for range topColumns {
			row = append(row, "-")
		}
		return row
	}
	get := func(key string) string {
		if v, ok := s.vals[key]; ok && v != "" {
			return v
		}
		return "-"
	}
	p, hasPrev := prev[s.addr]
	perSec := func(key string) string {
		if r, ok := rate(p, s, key); ok && hasPrev {
			return formatRate(r)
		}
		return "-"
	}
	sessions := "-"
	g, okG := s.num("zk_global_sessions")
	l, okL := s.num("zk_local_sessions")
	if okG || okL {
		sessions = strconv.FormatFloat(g+l, 'f', -1, 64)
	}
	lag := "-"
	if a, ok := s.num("zkgo_raft_applied"); ok {
		lag = strconv.FormatFloat(maxApplied-a, 'f', -1, 64)
	}
	latency := "-"
	if avg, ok := s.num("zk_avg_latency"); ok {
		latency = strconv.FormatFloat(avg, 'f', 2, 64) + "/" + get("zk_max_latency")
	}
	dataSize := "-"
	if d, ok := s.num("zk_approximate_data_size"); ok {
		dataSize = formatBytes(d)
	}
	return []string{get("zk_server_state"), get("zk_znode_count"), sessions, get("zk_num_alive_connections"),
		get("zk_watch_count"), get("zk_outstanding_requests"), perSec("zk_packets_received"), perSec("zk_packets_sent"),
		latency, get("zkgo_raft_term"), get("zkgo_raft_applied"), lag, dataSize}
}

// formatRate prints a rate per second: a decimal below 10.
func formatRate(r float64) string {
	if r < 10 {
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strconv.FormatFloat(r, 'f', 0, 64)
}

// formatBytes prints a size in bytes with a binary unit.
func formatBytes(n float64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatFloat(n, 'f', 0, 64) + "B"
	}
	i := -1
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return strconv.FormatFloat(n, 'f', 1, 64) + units[i:i+1] + "iB"
}
