package tlsdiff

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
)

// A target is one of the two servers.
type target struct {
	plain  string // plaintext client port
	secure string // TLS client port
}

func targets() (a, z target) {
	return target{apache.Addr(), apache.SecureAddr()}, target{zkgo.Addr(), zkgo.SecureAddr().String()}
}

// A runner runs one case against one target and writes its transcript: one
// line per step, the step and its normalised result. The two transcripts
// of a case are compared line by line.
type runner struct {
	tgt   target
	root  string
	lines []line
	sess  map[string]*session
	// deliberate, if set, marks the next line as a documented deliberate
	// difference (docs/COMPATIBILITY.md): compared, and logged when it
	// differs, without failing the test.
	deliberate string
}

// A line is one step of a transcript.
type line struct {
	text       string
	deliberate string // why it may differ (expectDiff), or ""
}

type session struct {
	cert   string // the client certificate ("anon": none; "" for plaintext)
	c      *rawzk.Conn
	zxid   int64 // of the last reply
	closed bool
}

var rootSeq atomic.Int64

func newRunner(tgt target, root string) *runner {
	return &runner{tgt: tgt, root: root, sess: map[string]*session{}}
}

// p replaces $R by the case's root.
func (r *runner) p(path string) string { return strings.ReplaceAll(path, "$R", r.root) }

// unroot replaces the case's root by $R.
func (r *runner) unroot(s string) string { return strings.ReplaceAll(s, r.root, "$R") }

func (r *runner) log(format string, args ...any) {
	r.lines = append(r.lines, line{text: r.unroot(fmt.Sprintf(format, args...)), deliberate: r.deliberate})
	r.deliberate = ""
}

// expectDiff marks the next step as a deliberate difference.
func (r *runner) expectDiff(why string) { r.deliberate = why }

// ---- connections ----

// connect opens a session named name over TLS with the certificate cert
// ("anon": a TLS client without one).
func (r *runner) connect(name, cert string) {
	r.open(name, cert, r.tgt.secure, "")
}

// connectPlain opens a plaintext session on the plaintext port.
func (r *runner) connectPlain(name string) {
	r.open(name, "", r.tgt.plain, "")
}

// connectAt opens a session named name on the plaintext or the TLS port
// ("plain", "secure"), over TLS with certificate cert or, with cert "",
// in plaintext: a client on the wrong port.
func (r *runner) connectAt(name, cert, port string) {
	addr := r.tgt.plain
	if port == "secure" {
		addr = r.tgt.secure
	}
	r.open(name, cert, addr, " to the "+port+" port")
}

// open dials addr, over TLS unless cert is "", and records the outcome.
func (r *runner) open(name, cert, addr, where string) {
	var o rawzk.Options
	if cert != "" {
		o.TLS = certs.tlsConfig(cert)
	}
	c, err := rawzk.Dial(addr, o)
	if err != nil {
		r.log("connect %s %s%s: %s", name, describe(cert), where, outcome(err))
		return
	}
	r.sess[name] = &session{cert: cert, c: c}
	r.log("connect %s %s%s: connected", name, describe(cert), where)
}

func describe(cert string) string {
	if cert == "" {
		return "plaintext"
	}
	return "tls(" + cert + ")"
}

// outcome is the class of a failed connection attempt: the exact errors
// (a TLS alert, a reset, an EOF) depend on timing and on the TLS stack.
func outcome(err error) string {
	if errors.Is(err, rawzk.ErrSessionExpired) {
		return "expired"
	}
	return "refused"
}

// reconnect replaces the connection of session name by a new one with the
// same certificate, resuming the session, and sends setWatches2 with the
// zxid remembered by mark (the notifications the server sends for changes
// since then are recorded).
func (r *runner) reconnect(name string, rel int64, sw proto.SetWatches2) {
	s := r.sess[name]
	if s == nil || s.closed {
		r.log("reconnect %s: no session", name)
		return
	}
	s.c.Close()
	o := rawzk.Options{SessionID: s.c.Session.SessionID, Passwd: s.c.Session.Passwd, LastZxid: s.zxid}
	addr := r.tgt.plain
	if s.cert != "" {
		addr, o.TLS = r.tgt.secure, certs.tlsConfig(s.cert)
	}
	c, err := rawzk.Dial(addr, o)
	if err != nil {
		s.closed = true
		r.log("reconnect %s: %s", name, outcome(err))
		return
	}
	s.c = c
	sw.RelativeZxid = rel
	for _, l := range []*[]string{&sw.DataWatches, &sw.ExistWatches, &sw.ChildWatches, &sw.PersistentWatches, &sw.PersistentRecursiveWatches} {
		if *l == nil {
			*l = []string{} // Apache's setWatches2 fails on a null list
		}
		for i := range *l {
			(*l)[i] = r.p((*l)[i])
		}
	}
	res := r.call(s, proto.OpSetWatches2, &sw, nil)
	r.log("reconnect %s setWatches2 data=%v exist=%v child=%v persistent=%v recursive=%v: %s", name,
		sw.DataWatches, sw.ExistWatches, sw.ChildWatches, sw.PersistentWatches, sw.PersistentRecursiveWatches, res)
}

// mark returns the zxid of the last reply session name received.
func (r *runner) mark(name string) int64 {
	if s := r.sess[name]; s != nil {
		return s.zxid
	}
	return 0
}

// ---- requests ----

// call sends one request and returns the error code's name ("closed" when
// the connection is gone).
func (r *runner) call(s *session, op proto.OpCode, req, resp proto.Record) string {
	if s == nil || s.closed {
		return "no session"
	}
	h, err := s.c.Call(op, req, resp)
	if err != nil {
		s.closed = true
		s.c.Close()
		if errors.Is(err, io.EOF) || isNetErr(err) {
			return "closed"
		}
		return "closed (" + err.Error() + ")"
	}
	if h.Zxid > 0 {
		s.zxid = h.Zxid
	}
	return errName(h.Err)
}

func isNetErr(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe) || strings.Contains(err.Error(), "tls:")
}

func errName(e proto.ErrCode) string { return strings.TrimPrefix(e.String(), "Err") }

func (r *runner) s(name string) *session { return r.sess[name] }

func (r *runner) create(name, path, data string, acl ...proto.ACL) {
	req := &proto.CreateRequest{Path: r.p(path), Data: []byte(data), ACL: acl, Flags: proto.ModePersistent}
	var resp proto.CreateResponse
	res := r.call(r.s(name), proto.OpCreate, req, &resp)
	r.log("%s create %s acl=%s: %s", name, path, formatACL(acl), res)
}

func (r *runner) delete(name, path string) {
	res := r.call(r.s(name), proto.OpDelete, &proto.DeleteRequest{Path: r.p(path), Version: -1}, nil)
	r.log("%s delete %s: %s", name, path, res)
}

func (r *runner) getData(name, path string, watch bool) {
	var resp proto.GetDataResponse
	res := r.call(r.s(name), proto.OpGetData, &proto.GetDataRequest{Path: r.p(path), Watch: watch}, &resp)
	if res == "Ok" {
		res += fmt.Sprintf(" %q", resp.Data)
	}
	r.log("%s getData %s watch=%v: %s", name, path, watch, res)
}

func (r *runner) exists(name, path string, watch bool) {
	var resp proto.ExistsResponse
	res := r.call(r.s(name), proto.OpExists, &proto.ExistsRequest{Path: r.p(path), Watch: watch}, &resp)
	r.log("%s exists %s watch=%v: %s", name, path, watch, res)
}

func (r *runner) getChildren(name, path string, watch bool) {
	var resp proto.GetChildrenResponse
	res := r.call(r.s(name), proto.OpGetChildren, &proto.GetChildrenRequest{Path: r.p(path), Watch: watch}, &resp)
	if res == "Ok" {
		kids := slices.Clone(resp.Children)
		slices.Sort(kids)
		res += fmt.Sprintf(" %v", kids)
	}
	r.log("%s getChildren %s watch=%v: %s", name, path, watch, res)
}

func (r *runner) setData(name, path, data string) {
	var resp proto.SetDataResponse
	res := r.call(r.s(name), proto.OpSetData, &proto.SetDataRequest{Path: r.p(path), Data: []byte(data), Version: -1}, &resp)
	r.log("%s setData %s %q: %s", name, path, data, res)
}

func (r *runner) getACL(name, path string) {
	var resp proto.GetACLResponse
	res := r.call(r.s(name), proto.OpGetACL, &proto.GetACLRequest{Path: r.p(path)}, &resp)
	if res == "Ok" {
		res += " " + formatACL(resp.ACL)
	}
	r.log("%s getACL %s: %s", name, path, res)
}

func (r *runner) setACL(name, path string, acl ...proto.ACL) {
	var resp proto.SetACLResponse
	res := r.call(r.s(name), proto.OpSetACL, &proto.SetACLRequest{Path: r.p(path), ACL: acl, Version: -1}, &resp)
	r.log("%s setACL %s acl=%s: %s", name, path, formatACL(acl), res)
}

func (r *runner) addWatch(name, path string, mode proto.AddWatchMode) {
	res := r.call(r.s(name), proto.OpAddWatch, &proto.AddWatchRequest{Path: r.p(path), Mode: mode}, nil)
	r.log("%s addWatch %s %s: %s", name, path, strings.TrimPrefix(mode.String(), "AddWatch"), res)
}

func (r *runner) addAuth(name, scheme, auth string) {
	res := r.call(r.s(name), proto.OpAuth, &proto.AuthPacket{Scheme: scheme, Auth: []byte(auth)}, nil)
	r.log("%s addauth %s %q: %s", name, scheme, auth, res)
}

func (r *runner) whoAmI(name string) {
	var resp proto.WhoAmIResponse
	res := r.call(r.s(name), proto.OpWhoAmI, nil, &resp)
	if res == "Ok" {
		var ids []string
		for _, ci := range resp.ClientInfo {
			ids = append(ids, ci.AuthScheme+":"+ci.User)
		}
		// Apache keeps a connection's identities in a hash set.
		slices.Sort(ids)
		res += fmt.Sprintf(" %q", ids)
	}
	r.log("%s whoAmI: %s", name, res)
}

// probe reports whether the connection of name still works (after a
// refused addauth the server closes it).
func (r *runner) probe(name string) {
	s := r.s(name)
	if s == nil || s.closed {
		r.log("%s probe: closed", name)
		return
	}
	s.c.NetConn().SetDeadline(time.Now().Add(5 * time.Second))
	res := r.call(s, proto.OpExists, &proto.ExistsRequest{Path: "/"}, &proto.ExistsResponse{})
	if !s.closed {
		s.c.NetConn().SetDeadline(time.Time{})
	}
	if strings.HasPrefix(res, "closed") {
		res = "closed"
	}
	r.log("%s probe: %s", name, res)
}

// events records the notifications session name has received: first a
// read on the same connection, whose reply comes after every notification
// for the writes other sessions were answered for.
func (r *runner) events(name string) {
	s := r.s(name)
	if s == nil || s.closed {
		r.log("%s events: no session", name)
		return
	}
	res := r.call(s, proto.OpExists, &proto.ExistsRequest{Path: "/"}, &proto.ExistsResponse{})
	var parts []string
	for _, e := range s.c.Events {
		parts = append(parts, fmt.Sprintf("%s %s", strings.TrimPrefix(e.Type.String(), "Event"), e.Path))
	}
	s.c.Events = nil
	r.log("%s events: [%s] (%s)", name, strings.Join(parts, ", "), res)
}

// closeAll ends the case's sessions.
func (r *runner) closeAll() {
	for _, s := range r.sess {
		if !s.closed {
			s.c.NetConn().SetDeadline(time.Now().Add(5 * time.Second))
			s.c.CloseSession()
			s.closed = true
		}
	}
}

// ---- ACLs ----

func acl(perms proto.Perm, scheme, id string) proto.ACL {
	return proto.ACL{Perms: perms, ID: proto.Id{Scheme: scheme, ID: id}}
}

// x509 is an ACL entry for the identity of the named client certificate.
func x509ACL(perms proto.Perm, cert string) proto.ACL {
	return acl(perms, "x509", clientByName(cert).javaName)
}

// digestACL is an ACL entry for user with password.
func digestACL(perms proto.Perm, user, password string) proto.ACL {
	sum := sha1.Sum([]byte(user + ":" + password))
	return acl(perms, "digest", user+":"+base64.StdEncoding.EncodeToString(sum[:]))
}

var open = acl(proto.PermAll, "world", "anyone")

func formatACL(acl []proto.ACL) string {
	var parts []string
	for _, a := range acl {
		parts = append(parts, a.ID.Scheme+":"+a.ID.ID+":"+formatPerms(a.Perms))
	}
	// The entries an "auth" ACL expands to come from a hash set in Apache.
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
	if b.Len() == 0 {
		return "0"
	}
	return b.String()
}

// ---- comparing ----

// A tcase is one comparison: run is called once per server, each with its
// own root.
type tcase struct {
	name string
	run  func(r *runner)
}

// compare runs c against both servers at once and compares the
// transcripts.
func compare(t *testing.T, c tcase) {
	seq := rootSeq.Add(1)
	a, z := targets()
	ar := newRunner(a, fmt.Sprintf("/tls-%s-%d", c.name, seq))
	zr := newRunner(z, fmt.Sprintf("/tls-%s-%d", c.name, seq))
	var wg sync.WaitGroup
	for _, r := range []*runner{ar, zr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.closeAll()
			c.run(r)
		}()
	}
	wg.Wait()
	if len(ar.lines) != len(zr.lines) {
		t.Errorf("transcripts differ in length: apache %d lines, zkgo %d", len(ar.lines), len(zr.lines))
	}
	var b strings.Builder
	for i := range max(len(ar.lines), len(zr.lines)) {
		var al, zl line
		if i < len(ar.lines) {
			al = ar.lines[i]
		}
		if i < len(zr.lines) {
			zl = zr.lines[i]
		}
		switch {
		case al.text == zl.text:
			fmt.Fprintf(&b, "  %s\n", al.text)
		case al.deliberate != "":
			fmt.Fprintf(&b, "~ apache: %s\n~ zkgo:   %s\n~ (deliberate: %s)\n", al.text, zl.text, al.deliberate)
		default:
			fmt.Fprintf(&b, "! apache: %s\n! zkgo:   %s\n", al.text, zl.text)
			t.Errorf("step %d differs:\n  apache: %s\n  zkgo:   %s", i+1, al.text, zl.text)
		}
	}
	t.Logf("transcript (%s):\n%s", c.name, b.String())
}
