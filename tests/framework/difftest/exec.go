package difftest

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
)

// Bounds of the waits done by steps. A reply is waited for long: under
// CI's load (2 cores, other packages' tests alongside) Apache
// ZooKeeper's JVM once took over 5 s to answer a reconfig.
const (
	callTimeout        = 20 * time.Second
	eventsTimeout      = 5 * time.Second
	noEventsWait       = 300 * time.Millisecond
	waitClosedTimeout  = 3 * time.Second
	waitGoneTimeout    = 5 * time.Second
	defaultSessionTime = 10 * time.Second
	leftoverWait       = 150 * time.Millisecond
)

// errScript reports a mistake in the script itself (not a server
// behaviour): the test fails whatever both servers do.
type errScript struct{ msg string }

func (e *errScript) Error() string { return e.msg }

func scriptErr(format string, args ...any) error {
	return &errScript{fmt.Sprintf(format, args...)}
}

// session is one client connection of a script run.
type session struct {
	name     string
	c        *rawzk.Conn
	id       int64
	passwd   []byte
	closed   bool
	pending  []proto.WatcherEvent
	lastZxid int64
	// config is the version= of the last /zookeeper/config data a reply
	// on the session carried (getData, reconfig); hasConfig tells
	// whether there was one.
	config    int64
	hasConfig bool
}

// run executes one script against one server.
type run struct {
	server   string // "apache" or "zkgo", for messages
	addr     string
	root     string
	sessions map[string]*session
	owners   map[int64]string // session id -> name of the step that created it
	vars     map[string]int64 // marks
	// subst are the target's variables, longest name first (for $NAME in
	// words), and unsubst the same, longest value first (for results).
	subst, unsubst []targetVar
	normalize      func(steps, results []string)
	dataLimit      int // Options.DataLimit
}

type targetVar struct {
	name, value string
	re          *regexp.Regexp // the value as a word of its own
}

func newRun(t Target, root string, o Options) *run {
	r := &run{
		dataLimit: cmp.Or(o.DataLimit, 100),
		server:    t.Name,
		addr:      t.Addr,
		root:      root,
		sessions:  make(map[string]*session),
		owners:    make(map[int64]string),
		vars:      make(map[string]int64),
		normalize: o.Normalize,
	}
	for name, value := range t.Vars {
		r.subst = append(r.subst, targetVar{name: name, value: value, re: regexp.MustCompile(`\b` + regexp.QuoteMeta(value) + `\b`)})
	}
	r.unsubst = slices.Clone(r.subst)
	slices.SortFunc(r.subst, func(a, b targetVar) int { return cmp.Or(len(b.name)-len(a.name), strings.Compare(a.name, b.name)) })
	slices.SortFunc(r.unsubst, func(a, b targetVar) int { return cmp.Or(len(b.value)-len(a.value), strings.Compare(a.name, b.name)) })
	return r
}

// expand substitutes the target's variables ($NAME) in a word.
func (r *run) expand(t token) token {
	for _, v := range r.subst {
		t.val = strings.ReplaceAll(t.val, "$"+v.name, v.value)
	}
	return t
}

func (r *run) expandAll(args []token) []token {
	if len(r.subst) == 0 {
		return args
	}
	out := make([]token, len(args))
	for i, a := range args {
		out[i] = r.expand(a)
	}
	return out
}

// execute runs every step and returns one normalised result per step plus
// a final "leftover events" result.
func (r *run) execute(s *Script) ([]string, error) {
	defer r.closeAll()
	out := make([]string, 0, len(s.steps)+1)
	for _, st := range s.steps {
		res, err := r.step(st)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", s.File, st.line, st.text, err)
		}
		out = append(out, r.unroot(res))
	}
	out = append(out, r.unroot(r.leftovers()))
	if r.normalize != nil {
		texts := make([]string, len(out))
		for i, st := range s.steps {
			texts[i] = st.text
		}
		r.normalize(texts, out)
	}
	normaliseZxids(out)
	return out, nil
}

func (r *run) closeAll() {
	for _, s := range r.sessions {
		if !s.closed {
			// Close the session too, so its ephemerals and watches go away
			// now rather than after the session timeout.
			s.c.NetConn().SetDeadline(time.Now().Add(time.Second))
			s.c.CloseSession()
			s.closed = true
		}
	}
}

// leftovers collects the notifications nobody waited for.
func (r *run) leftovers() string {
	time.Sleep(leftoverWait)
	names := make([]string, 0, len(r.sessions))
	for n := range r.sessions {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		s := r.sessions[n]
		r.readEvents(s, 0, time.Millisecond)
		if len(s.pending) > 0 {
			parts = append(parts, n+": "+formatEvents(s.pending))
			s.pending = nil
		}
	}
	if len(parts) == 0 {
		return "leftover events: none"
	}
	return "leftover events: " + strings.Join(parts, "; ")
}

// unroot replaces the script's root path with $R, and the values of the
// target's variables, where they stand as words of their own, with $NAME.
func (r *run) unroot(s string) string {
	s = strings.ReplaceAll(s, r.root, "$R")
	for _, v := range r.unsubst {
		s = v.re.ReplaceAllLiteralString(s, "$"+v.name)
	}
	return s
}

// path substitutes $R in a path argument.
func (r *run) path(t token) string { return strings.ReplaceAll(t.val, "$R", r.root) }

var zxidRE = regexp.MustCompile(`\{z:(-?\d+)\}`)

// normaliseZxids replaces each zxid placeholder by its rank among all the
// zxids of the run (#1 is the smallest), so that equal zxids stay equal and
// order is preserved. Zero stays 0.
func normaliseZxids(results []string) {
	seen := map[int64]bool{}
	for _, s := range results {
		for _, m := range zxidRE.FindAllStringSubmatch(s, -1) {
			v, _ := strconv.ParseInt(m[1], 10, 64)
			seen[v] = true
		}
	}
	vals := make([]int64, 0, len(seen))
	for v := range seen {
		if v != 0 {
			vals = append(vals, v)
		}
	}
	slices.Sort(vals)
	rank := make(map[int64]int, len(vals))
	for i, v := range vals {
		rank[v] = i + 1
	}
	for i, s := range results {
		results[i] = zxidRE.ReplaceAllStringFunc(s, func(m string) string {
			v, _ := strconv.ParseInt(zxidRE.FindStringSubmatch(m)[1], 10, 64)
			if v == 0 {
				return "0"
			}
			return "#" + strconv.Itoa(rank[v])
		})
	}
}

func (r *run) sess(name string) (*session, error) {
	s, ok := r.sessions[name]
	if !ok {
		return nil, scriptErr("no session %q", name)
	}
	return s, nil
}

func (r *run) step(st *step) (string, error) {
	if st.sess == "" {
		return r.control(st)
	}
	s, err := r.sess(st.sess)
	if err != nil {
		return "", err
	}
	args, subs := r.expandAll(st.args), st.subs
	if len(r.subst) > 0 && len(subs) > 0 {
		subs = make([]subOp, len(st.subs))
		for i, sub := range st.subs {
			subs[i] = subOp{verb: sub.verb, args: r.expandAll(sub.args)}
		}
	}
	op, req, err := r.buildRequest(st.verb, args, subs)
	if err != nil {
		return "", err
	}
	wait, err := durationOpt(args, "wait", callTimeout)
	if err != nil {
		return "", err
	}
	res := r.callWait(s, op, req, wait)
	if v, ok := option(args, "only"); ok {
		if v != "err" {
			return "", scriptErr("bad only=%s", v)
		}
		// Compare the error code only (e.g. replies about shared nodes).
		res = firstWord(res)
	}
	return res, nil
}

// control runs the verbs that are not requests.
func (r *run) control(st *step) (string, error) {
	pos := positional(st.args)
	need := func(n int) error {
		if len(pos) < n {
			return scriptErr("%s needs %d arguments", st.verb, n)
		}
		return nil
	}
	switch st.verb {
	case "session":
		name := pos[0].val
		if _, ok := r.sessions[name]; ok {
			return "", scriptErr("session %q exists", name)
		}
		o, err := dialOptions(st.args)
		if err != nil {
			return "", err
		}
		return r.dial(name, o), nil

	case "attach":
		if err := need(2); err != nil {
			return "", err
		}
		name, from := pos[0].val, pos[1].val
		f, err := r.sess(from)
		if err != nil {
			return "", err
		}
		o, err := dialOptions(st.args)
		if err != nil {
			return "", err
		}
		o.SessionID = f.id
		o.Passwd = append([]byte(nil), f.passwd...)
		switch v, _ := option(st.args, "passwd"); v {
		case "bad":
			o.Passwd[0] ^= 0xff
		case "short":
			o.Passwd = o.Passwd[:8]
		case "empty":
			o.Passwd = []byte{}
		case "":
		default:
			return "", scriptErr("bad passwd=%s", v)
		}
		if old, ok := r.sessions[name]; ok {
			if name != from {
				return "", scriptErr("session %q exists", name)
			}
			old.c.Close()
			old.closed = true
		}
		res := r.dial(name, o)
		if hasWord(st.args, "retry") {
			// Apache ZooKeeper closes every connection of a session when
			// it applies the session's closeSession txn, which can happen
			// just after the expiry's watch events were sent: a connection
			// opened in that window is closed without a reply. A real
			// client sees a connection loss and tries again; so does this.
			for i := 0; i < 5 && strings.HasPrefix(res, "refused"); i++ {
				time.Sleep(100 * time.Millisecond)
				res = r.dial(name, o)
			}
		}
		return res, nil

	case "disconnect":
		s, err := r.sess(pos[0].val)
		if err != nil {
			return "", err
		}
		s.c.Close()
		s.closed = true
		return "ok", nil

	case "expect-events":
		if err := need(2); err != nil {
			return "", err
		}
		s, err := r.sess(pos[0].val)
		if err != nil {
			return "", err
		}
		n, err := strconv.Atoi(pos[1].val)
		if err != nil {
			return "", scriptErr("bad count %q", pos[1].val)
		}
		within, err := durationOpt(st.args, "within", eventsTimeout)
		if err != nil {
			return "", err
		}
		r.readEvents(s, n, within)
		k := min(n, len(s.pending))
		got := s.pending[:k]
		s.pending = s.pending[k:]
		if hasWord(st.args, "unordered") {
			got = slices.Clone(got)
			slices.SortFunc(got, func(a, b proto.WatcherEvent) int {
				return strings.Compare(formatEvents([]proto.WatcherEvent{a}), formatEvents([]proto.WatcherEvent{b}))
			})
		}
		res := "events " + formatEvents(got)
		if k < n {
			res += fmt.Sprintf(" (only %d of %d after %v)", k, n, within)
		}
		return res, nil

	case "no-events":
		s, err := r.sess(pos[0].val)
		if err != nil {
			return "", err
		}
		within, err := durationOpt(st.args, "within", noEventsWait)
		if err != nil {
			return "", err
		}
		r.readEvents(s, math.MaxInt, within)
		got := s.pending
		s.pending = nil
		if len(got) == 0 {
			return "no events", nil
		}
		return "unexpected events " + formatEvents(got), nil

	case "wait-closed":
		s, err := r.sess(pos[0].val)
		if err != nil {
			return "", err
		}
		within, err := durationOpt(st.args, "within", waitClosedTimeout)
		if err != nil {
			return "", err
		}
		if r.readEvents(s, math.MaxInt, within) {
			return "closed", nil
		}
		return "open", nil

	case "wait-gone":
		if err := need(2); err != nil {
			return "", err
		}
		s, err := r.sess(pos[0].val)
		if err != nil {
			return "", err
		}
		within, err := durationOpt(st.args, "within", waitGoneTimeout)
		if err != nil {
			return "", err
		}
		p := r.path(pos[1])
		deadline := time.Now().Add(within)
		for {
			res := r.call(s, proto.OpExists, &proto.ExistsRequest{Path: p})
			if strings.HasPrefix(res, "NoNode") {
				return "gone", nil
			}
			if !strings.HasPrefix(res, "Ok") {
				return "exists failed: " + res, nil
			}
			if time.Now().After(deadline) {
				return "still there", nil
			}
			time.Sleep(50 * time.Millisecond)
		}

	case "mark":
		if err := need(2); err != nil {
			return "", err
		}
		s, err := r.sess(pos[1].val)
		if err != nil {
			return "", err
		}
		switch {
		case len(pos) == 2:
			r.vars[pos[0].val] = s.lastZxid
		case len(pos) == 3 && pos[2].val == "config":
			if !s.hasConfig {
				return "no configuration seen", nil
			}
			r.vars[pos[0].val] = s.config
		default:
			return "", scriptErr("mark VAR NAME [config]")
		}
		return "ok", nil

	case "sleep":
		d, err := time.ParseDuration(pos[0].val)
		if err != nil {
			return "", scriptErr("bad duration %q", pos[0].val)
		}
		time.Sleep(d)
		return "ok", nil
	}
	return "", scriptErr("unknown verb %q", st.verb)
}

func durationOpt(args []token, key string, def time.Duration) (time.Duration, error) {
	v, ok := option(args, key)
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, scriptErr("bad %s %q", key, v)
	}
	return d, nil
}

func dialOptions(args []token) (rawzk.Options, error) {
	o := rawzk.Options{Timeout: defaultSessionTime}
	if v, ok := option(args, "timeout"); ok {
		ms, err := strconv.Atoi(v)
		if err != nil {
			return o, scriptErr("bad timeout %q", v)
		}
		o.Timeout = time.Duration(ms) * time.Millisecond
	}
	if v, ok := option(args, "lastzxid"); ok {
		z, err := strconv.ParseInt(v, 0, 64)
		if err != nil {
			return o, scriptErr("bad lastzxid %q", v)
		}
		o.LastZxid = z
	}
	if v, ok := option(args, "sessionid"); ok {
		id, err := strconv.ParseInt(v, 0, 64)
		if err != nil {
			return o, scriptErr("bad sessionid %q", v)
		}
		o.SessionID = id
	}
	o.ReadOnly = hasWord(args, "readonly")
	return o, nil
}

// dial opens a connection and records the outcome of the handshake.
func (r *run) dial(name string, o rawzk.Options) string {
	c, err := rawzk.Dial(r.addr, o)
	if err != nil {
		if errors.Is(err, rawzk.ErrSessionExpired) {
			return "expired (timeOut 0)"
		}
		return "refused (" + ioClass(err) + ")"
	}
	s := &session{name: name, c: c, id: c.Session.SessionID, passwd: c.Session.Passwd}
	r.sessions[name] = s
	if _, ok := r.owners[s.id]; !ok {
		r.owners[s.id] = name
	}
	same := ""
	if o.SessionID != 0 {
		same = fmt.Sprintf(" sameSession=%v", s.id == o.SessionID)
	}
	return fmt.Sprintf("connected timeOut=%d readOnly=%v passwdLen=%d%s", c.Session.TimeOut, c.Session.ReadOnly, len(c.Session.Passwd), same)
}

// ioClass names a connection error independently of the platform's words.
func ioClass(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed):
		return "closed"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "error " + err.Error()
}

// readEvents reads notifications into s.pending until it holds n of them,
// the connection closes (then it returns true) or the wait ends.
func (r *run) readEvents(s *session, n int, within time.Duration) (closed bool) {
	if s.closed {
		return true
	}
	deadline := time.Now().Add(within)
	for len(s.pending) < n {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		ev, err := s.c.RecvEvent(left)
		if err != nil {
			if ioClass(err) == "timeout" {
				return false
			}
			s.closed = true
			s.c.Close()
			return true
		}
		s.pending = append(s.pending, ev)
	}
	return false
}

// capture decodes a reply body into resp (if any) and counts the bytes
// left over, so that Recv never fails on trailing bytes.
type capture struct {
	resp    proto.Record
	present bool
	extra   int
	decErr  error
}

func (c *capture) Encode(*jute.Encoder) {}

func (c *capture) Decode(d *jute.Decoder) {
	c.present = true
	if c.resp != nil {
		c.resp.Decode(d)
		c.decErr = d.Err()
	}
	if c.decErr != nil {
		return
	}
	c.extra = d.Remaining()
	for d.Remaining() > 0 {
		d.ReadBool()
	}
}

// call sends one request on s and formats the reply.
func (r *run) call(s *session, op proto.OpCode, req proto.Record) string {
	return r.callWait(s, op, req, callTimeout)
}

// callWait is call with a bound on the wait for the reply.
func (r *run) callWait(s *session, op proto.OpCode, req proto.Record, wait time.Duration) string {
	if s.closed {
		return "closed (not sent)"
	}
	var xid int32
	var err error
	switch op {
	case proto.OpPing:
		xid = proto.XidPing
	case proto.OpAuth:
		xid = proto.XidAuth
	case proto.OpSetWatches, proto.OpSetWatches2:
		xid = proto.XidSetWatches
	}
	if xid != 0 {
		err = s.c.SendXid(xid, op, req)
	} else {
		xid, err = s.c.Send(op, req)
	}
	if err != nil {
		s.closed = true
		s.c.Close()
		// Whether the write or the read notices that the server closed
		// the connection is a matter of timing.
		return ioClass(err)
	}
	s.c.NetConn().SetReadDeadline(time.Now().Add(wait))
	body := &capture{resp: proto.NewResponse(op)}
	h, err := s.c.Recv(body)
	s.c.NetConn().SetReadDeadline(time.Time{})
	s.pending = append(s.pending, s.c.Events...)
	s.c.Events = nil
	if err != nil {
		s.closed = true
		s.c.Close()
		if c := ioClass(err); c != "closed" {
			return "no reply: " + c
		}
		return "closed"
	}
	if h.Zxid > 0 {
		s.lastZxid = h.Zxid
	}
	if gd, ok := body.resp.(*proto.GetDataResponse); ok && h.Err == proto.ErrOk && body.decErr == nil {
		if m := configVersionRE.FindSubmatch(gd.Data); m != nil {
			s.config, _ = strconv.ParseInt(string(m[1]), 16, 64)
			s.hasConfig = true
		}
	}
	var b strings.Builder
	b.WriteString(errName(h.Err))
	if h.Xid != xid {
		fmt.Fprintf(&b, " (reply xid %d, want %d)", h.Xid, xid)
	}
	if h.Err == proto.ErrOk {
		switch {
		case body.decErr != nil:
			fmt.Fprintf(&b, " undecodable body: %v", body.decErr)
		case body.present && body.resp != nil:
			b.WriteString(" ")
			b.WriteString(r.format(body.resp))
		case !body.present && body.resp != nil:
			b.WriteString(" (no body)")
		}
		if body.extra > 0 {
			fmt.Fprintf(&b, " (+%d bytes)", body.extra)
		}
	}
	if op == proto.OpCloseSession {
		s.closed = true
		s.c.Close()
	}
	return b.String()
}

func errName(e proto.ErrCode) string {
	return strings.TrimPrefix(e.String(), "Err")
}

// ---- requests ----
