package difftest

import (
	"cmp"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
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

	"github.com/zkgo/zkgo/internal/rawzk"
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
)

// Bounds of the waits done by steps.
const (
	callTimeout        = 5 * time.Second
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

var createOps = map[string]proto.OpCode{
	"create": proto.OpCreate, "create2": proto.OpCreate2,
	"createContainer": proto.OpCreateContainer, "createTTL": proto.OpCreateTTL,
}

func (r *run) buildRequest(verb string, args []token, subs []subOp) (proto.OpCode, proto.Record, error) {
	pos := positional(args)
	path := func() (string, error) {
		if len(pos) == 0 {
			return "", scriptErr("%s needs a path", verb)
		}
		return r.path(pos[0]), nil
	}
	version := func(key string) (int32, error) {
		v, ok := option(args, key)
		if !ok {
			return -1, nil
		}
		n, err := strconv.ParseInt(v, 0, 32)
		if err != nil {
			return 0, scriptErr("bad %s %q", key, v)
		}
		return int32(n), nil
	}
	switch verb {
	case "create", "create2", "createContainer", "createTTL":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		data := dataOpt(args, "data")
		acl, err := r.aclOpt(args)
		if err != nil {
			return 0, nil, err
		}
		mode := proto.ModePersistent
		switch verb {
		case "createContainer":
			mode = proto.ModeContainer
		case "createTTL":
			mode = proto.ModePersistentWithTTL
		}
		if v, ok := option(args, "mode"); ok {
			if mode, err = parseMode(v); err != nil {
				return 0, nil, err
			}
		}
		op := createOps[verb]
		if v, ok := option(args, "ttl"); ok || verb == "createTTL" {
			ttl, err := strconv.ParseInt(v, 0, 64)
			if err != nil {
				return 0, nil, scriptErr("bad ttl %q", v)
			}
			if verb != "createTTL" {
				return 0, nil, scriptErr("ttl only with createTTL")
			}
			return op, &proto.CreateTTLRequest{Path: p, Data: data, ACL: acl, Flags: mode, TTL: ttl}, nil
		}
		return op, &proto.CreateRequest{Path: p, Data: data, ACL: acl, Flags: mode}, nil

	case "delete":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		v, err := version("v")
		return proto.OpDelete, &proto.DeleteRequest{Path: p, Version: v}, err

	case "check":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		v, err := version("v")
		return proto.OpCheck, &proto.CheckVersionRequest{Path: p, Version: v}, err

	case "exists", "getData", "getChildren", "getChildren2":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		w := hasWord(args, "watch")
		switch verb {
		case "exists":
			return proto.OpExists, &proto.ExistsRequest{Path: p, Watch: w}, nil
		case "getData":
			return proto.OpGetData, &proto.GetDataRequest{Path: p, Watch: w}, nil
		case "getChildren":
			return proto.OpGetChildren, &proto.GetChildrenRequest{Path: p, Watch: w}, nil
		default:
			return proto.OpGetChildren2, &proto.GetChildren2Request{Path: p, Watch: w}, nil
		}

	case "setData":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		var data []byte
		if len(pos) > 1 {
			data = tokenData(pos[1])
		}
		v, err := version("v")
		return proto.OpSetData, &proto.SetDataRequest{Path: p, Data: data, Version: v}, err

	case "getACL":
		p, err := path()
		return proto.OpGetACL, &proto.GetACLRequest{Path: p}, err

	case "setACL":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		acl, err := r.aclOpt(args)
		if err != nil {
			return 0, nil, err
		}
		v, err := version("v")
		return proto.OpSetACL, &proto.SetACLRequest{Path: p, ACL: acl, Version: v}, err

	case "sync":
		p, err := path()
		return proto.OpSync, &proto.SyncRequest{Path: p}, err

	case "multi", "multiRead":
		m := &proto.MultiRequest{}
		for _, sub := range subs {
			op, req, err := r.buildRequest(sub.verb, sub.args, nil)
			if err != nil {
				return 0, nil, err
			}
			m.Ops = append(m.Ops, proto.MultiOp{Type: op, Req: req})
		}
		if verb == "multiRead" {
			return proto.OpMultiRead, m, nil
		}
		return proto.OpMulti, m, nil

	case "reconfig":
		req := &proto.ReconfigRequest{CurConfigID: -1}
		req.JoiningServers, _ = option(args, "joining")
		req.LeavingServers, _ = option(args, "leaving")
		req.NewMembers, _ = option(args, "members")
		if v, ok := option(args, "from"); ok {
			n, err := r.number(v)
			if err != nil {
				return 0, nil, err
			}
			req.CurConfigID = n
		}
		return proto.OpReconfig, req, nil

	case "checkWatches", "removeWatches":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		if len(pos) < 2 {
			return 0, nil, scriptErr("%s needs a watcher type", verb)
		}
		var wt proto.WatcherType
		switch pos[1].val {
		case "data":
			wt = proto.WatcherData
		case "children":
			wt = proto.WatcherChildren
		case "any":
			wt = proto.WatcherAny
		default:
			n, err := strconv.Atoi(pos[1].val)
			if err != nil {
				return 0, nil, scriptErr("bad watcher type %q", pos[1].val)
			}
			wt = proto.WatcherType(n)
		}
		if verb == "checkWatches" {
			return proto.OpCheckWatches, &proto.CheckWatchesRequest{Path: p, Type: wt}, nil
		}
		return proto.OpRemoveWatches, &proto.RemoveWatchesRequest{Path: p, Type: wt}, nil

	case "addauth":
		if len(pos) < 2 {
			return 0, nil, scriptErr("addauth needs a scheme and an id")
		}
		return proto.OpAuth, &proto.AuthPacket{Scheme: pos[0].val, Auth: []byte(pos[1].val)}, nil

	case "setWatches", "setWatches2":
		rel := int64(0)
		if v, ok := option(args, "rel"); ok {
			var err error
			if rel, err = r.number(v); err != nil {
				return 0, nil, err
			}
		}
		list := func(key string) []string {
			out := []string{}
			if v, ok := option(args, key); ok && v != "" {
				for _, p := range strings.Split(v, ",") {
					out = append(out, strings.ReplaceAll(p, "$R", r.root))
				}
			}
			return out
		}
		if verb == "setWatches" {
			return proto.OpSetWatches, &proto.SetWatches{RelativeZxid: rel,
				DataWatches: list("data"), ExistWatches: list("exist"), ChildWatches: list("child")}, nil
		}
		return proto.OpSetWatches2, &proto.SetWatches2{RelativeZxid: rel,
			DataWatches: list("data"), ExistWatches: list("exist"), ChildWatches: list("child"),
			PersistentWatches: list("persistent"), PersistentRecursiveWatches: list("recursive")}, nil

	case "addWatch":
		p, err := path()
		if err != nil {
			return 0, nil, err
		}
		if len(pos) < 2 {
			return 0, nil, scriptErr("addWatch needs a mode")
		}
		var m proto.AddWatchMode
		switch pos[1].val {
		case "persistent":
			m = proto.AddWatchPersistent
		case "recursive":
			m = proto.AddWatchPersistentRecursive
		default:
			n, err := strconv.Atoi(pos[1].val)
			if err != nil {
				return 0, nil, scriptErr("bad addWatch mode %q", pos[1].val)
			}
			m = proto.AddWatchMode(n)
		}
		return proto.OpAddWatch, &proto.AddWatchRequest{Path: p, Mode: m}, nil

	case "getEphemerals":
		p := ""
		if len(pos) > 0 {
			p = r.path(pos[0])
		}
		return proto.OpGetEphemerals, &proto.GetEphemeralsRequest{PrefixPath: p}, nil

	case "getAllChildrenNumber":
		p, err := path()
		return proto.OpGetAllChildrenNumber, &proto.GetAllChildrenNumberRequest{Path: p}, err

	case "whoAmI":
		return proto.OpWhoAmI, nil, nil
	case "ping":
		return proto.OpPing, nil, nil
	case "closeSession":
		return proto.OpCloseSession, nil, nil

	case "op":
		// op CODE [body=HEX]: a request of any type with any body.
		if len(pos) == 0 {
			return 0, nil, scriptErr("op needs an opcode")
		}
		code, err := strconv.ParseInt(pos[0].val, 0, 32)
		if err != nil {
			return 0, nil, scriptErr("bad opcode %q", pos[0].val)
		}
		var body []byte
		if v, ok := option(args, "body"); ok {
			if body, err = r.buildBody(v); err != nil {
				return 0, nil, err
			}
		}
		return proto.OpCode(code), rawBody(body), nil
	}
	return 0, nil, scriptErr("unknown request %q", verb)
}

// number reads a number option: $MARK or a Go integer literal.
func (r *run) number(v string) (int64, error) {
	if name, ok := strings.CutPrefix(v, "$"); ok {
		z, ok := r.vars[name]
		if !ok {
			return 0, scriptErr("no mark %q", name)
		}
		return z, nil
	}
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		return 0, scriptErr("bad number %q", v)
	}
	return n, nil
}

// configVersionRE finds the version line of /zookeeper/config's data.
var configVersionRE = regexp.MustCompile(`(?m)^version=([0-9a-fA-F]+)$`)

// buildBody encodes a request body written as comma-separated fields:
// s:STRING (a jute string, $R substituted), i:INT32, l:INT64, b:BYTE,
// x:HEX (raw bytes), t:TEXT (raw bytes of the text, $R substituted).
func (r *run) buildBody(spec string) ([]byte, error) {
	var e jute.Encoder
	for _, f := range strings.Split(spec, ",") {
		kind, v, ok := strings.Cut(f, ":")
		if !ok {
			return nil, scriptErr("bad body field %q", f)
		}
		switch kind {
		case "s":
			e.WriteString(strings.ReplaceAll(v, "$R", r.root))
		case "t":
			rawBody(strings.ReplaceAll(v, "$R", r.root)).Encode(&e)
		case "i", "l", "b":
			n, err := strconv.ParseInt(v, 0, 64)
			if err != nil {
				return nil, scriptErr("bad body field %q", f)
			}
			switch kind {
			case "i":
				e.WriteInt(int32(n))
			case "l":
				e.WriteLong(n)
			default:
				rawBody{byte(n)}.Encode(&e)
			}
		case "x":
			b, err := hex.DecodeString(v)
			if err != nil {
				return nil, scriptErr("bad body field %q", f)
			}
			rawBody(b).Encode(&e)
		default:
			return nil, scriptErr("bad body field %q", f)
		}
	}
	return e.Bytes(), nil
}

// rawBody is a request body given as bytes.
type rawBody []byte

func (b rawBody) Encode(e *jute.Encoder) {
	for _, c := range b {
		e.WriteBool(false) // grow by one byte, then overwrite it
		e.Bytes()[e.Len()-1] = c
	}
}

func (b rawBody) Decode(*jute.Decoder) {}

// dataOpt returns the bytes of option key: absent or the bare word null
// mean a null buffer.
func dataOpt(args []token, key string) []byte {
	for _, a := range args {
		if a.key == key {
			return tokenData(a)
		}
	}
	return nil
}

func tokenData(t token) []byte {
	if !t.quoted && t.val == "null" {
		return nil
	}
	// "@N" stands for N bytes of filler.
	if n, ok := strings.CutPrefix(t.val, "@"); ok && !t.quoted {
		if k, err := strconv.Atoi(n); err == nil && k >= 0 {
			b := make([]byte, k)
			for i := range b {
				b[i] = byte('a' + i%26)
			}
			return b
		}
	}
	return []byte(t.val)
}

func parseMode(v string) (proto.CreateMode, error) {
	switch v {
	case "persistent":
		return proto.ModePersistent, nil
	case "ephemeral":
		return proto.ModeEphemeral, nil
	case "psequential":
		return proto.ModePersistentSequential, nil
	case "esequential":
		return proto.ModeEphemeralSequential, nil
	case "container":
		return proto.ModeContainer, nil
	case "ttl":
		return proto.ModePersistentWithTTL, nil
	case "sttl":
		return proto.ModePersistentSequentialWithTTL, nil
	}
	n, err := strconv.ParseInt(v, 0, 32)
	if err != nil {
		return 0, scriptErr("bad mode %q", v)
	}
	return proto.CreateMode(n), nil
}

// aclOpt parses the acl= option. Default: world:anyone with all
// permissions. Forms: open, read (world:anyone:r), creator (auth::cdrwa),
// empty (no entry), null (a null vector), or a comma-separated list of
// scheme:id:perms where perms are letters of "rwcda" or a number, and the
// pseudo scheme dpw (dpw:user:password:perms) is a digest ACL for that
// password.
func (r *run) aclOpt(args []token) ([]proto.ACL, error) {
	v, ok := option(args, "acl")
	if !ok {
		v = "open"
	}
	switch v {
	case "open":
		return []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}, nil
	case "read":
		return []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "world", ID: "anyone"}}}, nil
	case "creator":
		return []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "auth", ID: ""}}}, nil
	case "empty":
		return []proto.ACL{}, nil
	case "null":
		return nil, nil
	}
	var out []proto.ACL
	for _, e := range strings.Split(v, ",") {
		if e == "creator" {
			e = "auth::cdrwa"
		}
		i, j := strings.Index(e, ":"), strings.LastIndex(e, ":")
		if i < 0 || i == j {
			return nil, scriptErr("bad acl entry %q", e)
		}
		scheme, id, ps := e[:i], e[i+1:j], e[j+1:]
		perms, err := parsePerms(ps)
		if err != nil {
			return nil, err
		}
		if scheme == "dpw" {
			scheme, id = "digest", digestID(id)
		}
		out = append(out, proto.ACL{Perms: perms, ID: proto.Id{Scheme: scheme, ID: id}})
	}
	return out, nil
}

// digestID turns "user:password" into ZooKeeper's "user:base64(sha1)".
func digestID(userPass string) string {
	user, _, _ := strings.Cut(userPass, ":")
	sum := sha1.Sum([]byte(userPass))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

func parsePerms(s string) (proto.Perm, error) {
	if n, err := strconv.ParseInt(s, 0, 32); err == nil {
		return proto.Perm(n), nil
	}
	var p proto.Perm
	for _, c := range s {
		switch c {
		case 'r':
			p |= proto.PermRead
		case 'w':
			p |= proto.PermWrite
		case 'c':
			p |= proto.PermCreate
		case 'd':
			p |= proto.PermDelete
		case 'a':
			p |= proto.PermAdmin
		default:
			return 0, scriptErr("bad permissions %q", s)
		}
	}
	return p, nil
}

// ---- formatting ----

func (r *run) format(rec proto.Record) string {
	switch v := rec.(type) {
	case *proto.CreateResponse:
		return "path=" + quotePath(v.Path)
	case *proto.Create2Response:
		return "path=" + quotePath(v.Path) + " " + r.stat(&v.Stat)
	case *proto.ExistsResponse:
		return r.stat(&v.Stat)
	case *proto.GetDataResponse:
		return "data=" + r.formatData(v.Data) + " " + r.stat(&v.Stat)
	case *proto.SetDataResponse:
		return r.stat(&v.Stat)
	case *proto.GetACLResponse:
		return "acl=" + formatACL(v.ACL) + " " + r.stat(&v.Stat)
	case *proto.SetACLResponse:
		return r.stat(&v.Stat)
	case *proto.GetChildrenResponse:
		return "children=" + formatList(v.Children)
	case *proto.GetChildren2Response:
		return "children=" + formatList(v.Children) + " " + r.stat(&v.Stat)
	case *proto.SyncResponse:
		return "path=" + quotePath(v.Path)
	case *proto.GetEphemeralsResponse:
		return "ephemerals=" + formatList(v.Ephemerals)
	case *proto.GetAllChildrenNumberResponse:
		return fmt.Sprintf("number=%d", v.TotalNumber)
	case *proto.ErrorResponse:
		return "err=" + errName(v.Err)
	case *proto.WhoAmIResponse:
		if v.ClientInfo == nil {
			return "clientInfo=null"
		}
		// Apache keeps a session's identities in a hash set: the order
		// means nothing.
		var parts []string
		for _, ci := range v.ClientInfo {
			parts = append(parts, ci.AuthScheme+":"+ci.User)
		}
		slices.Sort(parts)
		return "clientInfo=[" + strings.Join(parts, " ") + "]"
	case *proto.MultiResponse:
		var parts []string
		for i := range v.Results {
			parts = append(parts, r.multiResult(&v.Results[i]))
		}
		return "results=[" + strings.Join(parts, " | ") + "]"
	case *proto.SetSASLResponse:
		return "token=" + r.formatData(v.Token)
	}
	return fmt.Sprintf("%T %+v", rec, rec)
}

func (r *run) multiResult(m *proto.MultiResult) string {
	switch m.Type {
	case proto.OpCreate:
		return "create path=" + quotePath(m.Path)
	case proto.OpCreate2:
		return "create2 path=" + quotePath(m.Path) + " " + r.stat(&m.Stat)
	case proto.OpDelete:
		return "delete"
	case proto.OpCheck:
		return "check"
	case proto.OpSetData:
		return "setData " + r.stat(&m.Stat)
	case proto.OpGetData:
		return "getData data=" + r.formatData(m.Data) + " " + r.stat(&m.Stat)
	case proto.OpGetChildren:
		return "getChildren children=" + formatList(m.Children)
	case proto.OpError:
		return "error " + errName(m.Err)
	}
	return fmt.Sprintf("type %d", m.Type)
}

func (r *run) stat(s *proto.Stat) string {
	return fmt.Sprintf("stat{cz={z:%d} mz={z:%d} pz={z:%d} v=%d cv=%d av=%d owner=%s len=%d nc=%d}",
		s.Czxid, s.Mzxid, s.Pzxid, s.Version, s.Cversion, s.Aversion,
		r.owner(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

// owner classifies an ephemeralOwner value.
func (r *run) owner(o int64) string {
	switch {
	case o == 0:
		return "0"
	case o == math.MinInt64:
		return "container"
	case uint64(o)>>56 == 0xff:
		ttl := o & 0xffffffffff
		if rest := uint64(o) >> 40 & 0xffff; rest != 0 {
			return fmt.Sprintf("extended(%#x)", uint64(o))
		}
		return fmt.Sprintf("ttl(%d)", ttl)
	}
	if n, ok := r.owners[o]; ok {
		return "session(" + n + ")"
	}
	return "session(other)"
}

func quotePath(p string) string {
	if strconv.CanBackquote(p) && !strings.ContainsAny(p, " \"") && p != "" {
		return p
	}
	return strconv.Quote(p)
}

func (r *run) formatData(b []byte) string {
	if b == nil {
		return "null"
	}
	if len(b) > r.dataLimit {
		return fmt.Sprintf("%d bytes sha1:%x", len(b), sha1.Sum(b))
	}
	return strconv.Quote(string(b))
}

func formatList(l []string) string {
	if l == nil {
		return "null"
	}
	s := slices.Clone(l)
	slices.Sort(s)
	for i := range s {
		s[i] = quotePath(s[i])
	}
	return "[" + strings.Join(s, " ") + "]"
}

func formatACL(acl []proto.ACL) string {
	if acl == nil {
		return "null"
	}
	// Sorted: the entries an "auth" ACL expands to come from a hash set
	// in Apache, in no meaningful order.
	var parts []string
	for _, a := range acl {
		parts = append(parts, a.ID.Scheme+":"+a.ID.ID+":"+formatPerms(a.Perms))
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

func formatPerms(p proto.Perm) string {
	var b strings.Builder
	for _, x := range []struct {
		bit proto.Perm
		c   byte
	}{{proto.PermRead, 'r'}, {proto.PermWrite, 'w'}, {proto.PermCreate, 'c'}, {proto.PermDelete, 'd'}, {proto.PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b.WriteByte(x.c)
		}
	}
	if rest := p &^ proto.PermAll; rest != 0 {
		fmt.Fprintf(&b, "+%#x", int32(rest))
	}
	if b.Len() == 0 {
		return "0"
	}
	return b.String()
}

func formatEvents(evs []proto.WatcherEvent) string {
	var parts []string
	for _, e := range evs {
		parts = append(parts, fmt.Sprintf("%s/%s %s",
			strings.TrimPrefix(e.Type.String(), "Event"),
			strings.TrimPrefix(e.State.String(), "State"), quotePath(e.Path)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
