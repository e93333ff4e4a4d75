package console

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/zk"
)

// serveWrite performs one create, set or delete with the logged-in user's
// session, and redirects to the node's page with the outcome as a flash
// message. Sets and deletes carry the version the user saw (a stale
// version fails with BadVersion); -1 must be typed on purpose.
func (c *Console) serveWrite(w http.ResponseWriter, r *http.Request) {
	if c.cfg.ReadOnly {
		c.errReadOnly(w, r)
		return
	}
	l := c.identity(r)
	if l == nil {
		c.fail(w, r, http.StatusUnauthorized, "act as a digest identity (or present a client certificate over HTTPS) to change the tree")
		return
	}
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusRequestEntityTooLarge, "form too large: "+err.Error())
		return
	}
	if !sameOrigin(r) || !checkCSRF(r, l) {
		c.log.Warn("console: write refused: CSRF", "user", l.user)
		c.fail(w, r, http.StatusForbidden, "missing or wrong form token (CSRF); reload the page and try again")
		return
	}
	ctx, cancel := c.reqCtx(r)
	defer cancel()
	conn, err := l.session(ctx)
	if err != nil {
		c.logins.remove(l)
		c.certs.remove(l)
		c.fail(w, r, http.StatusUnauthorized, err.Error())
		return
	}
	action, p := r.PostFormValue("action"), r.PostFormValue("path")
	back := p
	var msg string
	switch action {
	case "set":
		var data []byte
		var version int32
		if data, err = formData(r); err == nil {
			version, err = formVersion(r)
		}
		if err == nil && validPath(p) {
			var st *zk.Stat
			if st, err = conn.Set(ctx, p, data, version); err == nil {
				msg = fmt.Sprintf("set %s: now version %d, %d bytes", p, st.Version, len(data))
			}
		} else if err == nil {
			err = errors.New("not a valid path")
		}
	case "create":
		name := r.PostFormValue("name")
		if !strings.HasPrefix(name, "/") {
			name = joinPath(p, name)
		}
		back = p
		var data []byte
		if data, err = formData(r); err != nil {
			break
		}
		mode := zk.ModePersistent
		if r.PostFormValue("sequential") != "" {
			mode = zk.ModePersistentSequential
		}
		acl := zk.OpenACLUnsafe
		if r.PostFormValue("acl") == "creator" {
			acl = zk.CreatorAllACL
		}
		if !validPath(name) || name == "/" {
			err = errors.New("not a valid path: " + name)
			break
		}
		var created string
		if created, err = conn.Create(ctx, name, data, acl, mode); err == nil {
			msg, back = "created "+created, created
		}
	case "delete":
		var version int32
		if version, err = formVersion(r); err != nil {
			break
		}
		if !validPath(p) || p == "/" {
			err = errors.New("not a valid path")
			break
		}
		if err = conn.Delete(ctx, p, version); err == nil {
			msg, back = "deleted "+p, parentPath(p)
		}
	default:
		c.fail(w, r, http.StatusBadRequest, "unknown action")
		return
	}
	if err != nil {
		msg = action + " " + p + " failed: " + explain(err)
	}
	c.log.Info("console: write", "user", l.user, "action", action, "path", p, "ok", err == nil)
	c.logins.setFlash(l, msg)
	if !validPath(back) {
		back = "/"
	}
	http.Redirect(w, r, c.cfg.BasePath+"/tree?path="+url.QueryEscape(back), http.StatusSeeOther)
}

// formData decodes the "data" field as text or, with encoding=hex, as hex
// digits (spaces and newlines ignored).
func formData(r *http.Request) ([]byte, error) {
	s := r.PostFormValue("data")
	if r.PostFormValue("encoding") == "hex" {
		s = strings.Join(strings.Fields(s), "")
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("data is not hex: %w", err)
		}
		return checkSize(b)
	}
	return checkSize([]byte(strings.ReplaceAll(s, "\r\n", "\n")))
}

func checkSize(b []byte) ([]byte, error) {
	if len(b) > maxDataWrite {
		return nil, fmt.Errorf("data too large (%d bytes, at most %d)", len(b), maxDataWrite)
	}
	return b, nil
}

func formVersion(r *http.Request) (int32, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(r.PostFormValue("version")), 10, 32)
	if err != nil || v < -1 {
		return 0, errors.New("version must be a number (-1: any version)")
	}
	return int32(v), nil
}

// explain says what a failed write's error means to a user.
func explain(err error) string {
	switch {
	case errors.Is(err, zk.ErrNoAuth):
		return "not allowed by the node's ACL for your identity (NoAuth)"
	case errors.Is(err, zk.ErrBadVersion):
		return "the node changed since you read it (BadVersion); reload and try again"
	case errors.Is(err, zk.ErrNodeExists):
		return "the node exists already (NodeExists)"
	case errors.Is(err, zk.ErrNoNode):
		return "no such node, or no parent (NoNode)"
	case errors.Is(err, zk.ErrNotEmpty):
		return "the node has children (NotEmpty)"
	}
	return err.Error()
}
