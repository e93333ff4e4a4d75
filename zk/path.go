package zk

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// validatePath applies ZooKeeper's PathUtils.validatePath: absolute, no
// trailing slash (except "/"), no empty, "." or ".." elements, no NUL or
// control characters. sequential allows a trailing slash (the server appends
// the sequence number).
func validatePath(p string, sequential bool) error {
	if p == "" {
		return errors.New("path is empty")
	}
	if sequential {
		p += "1" // as ZooKeeper does: the server appends the sequence number
	}
	if p[0] != '/' {
		return errors.New("path must start with /")
	}
	if len(p) == 1 {
		return nil
	}
	if p[len(p)-1] == '/' {
		return errors.New("path must not end with /")
	}
	if !utf8.ValidString(p) {
		return errors.New("path is not valid UTF-8")
	}
	last := rune('/')
	for i, r := range p {
		if i == 0 {
			continue
		}
		switch {
		case r == 0:
			return errors.New("path contains NUL")
		case r == '/' && last == '/':
			return errors.New("path contains an empty element")
		case r == '.' && last == '.':
			if p[i-2] == '/' && (i+1 == len(p) || p[i+1] == '/') {
				return errors.New("path contains a relative element ..")
			}
		case r == '.':
			if p[i-1] == '/' && (i+1 == len(p) || p[i+1] == '/') {
				return errors.New("path contains a relative element .")
			}
		case r > 0 && r <= 0x1f, r >= 0x7f && r <= 0x9f,
			r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0 && r <= 0xffff:
			return errors.New("path contains an invalid character")
		}
		last = r
	}
	return nil
}

// addRoot turns a caller's path into the server's.
func (c *Conn) addRoot(p string) string {
	if c.chroot == "" {
		return p
	}
	if p == "/" {
		return c.chroot
	}
	return c.chroot + p
}

// stripRoot turns a server path into the caller's. Paths outside the chroot
// are returned unchanged.
func (c *Conn) stripRoot(p string) string {
	if q, ok := c.clientPath(p); ok {
		return q
	}
	return p
}

// clientPath turns a server path into the caller's; ok is false for a path
// outside the chroot.
func (c *Conn) clientPath(p string) (string, bool) {
	if c.chroot == "" {
		return p, true
	}
	if p == c.chroot {
		return "/", true
	}
	if strings.HasPrefix(p, c.chroot) && len(p) > len(c.chroot) && p[len(c.chroot)] == '/' {
		return p[len(c.chroot):], true
	}
	return "", false
}

// checkPath validates p and returns the server path, or an *Error.
func (c *Conn) checkPath(op, p string, sequential bool) (string, error) {
	if err := validatePath(p, sequential); err != nil {
		return "", &Error{Op: op, Path: p, Err: ErrInvalidPath, Detail: err.Error()}
	}
	return c.addRoot(p), nil
}

// parentOf returns the parent of an absolute, valid path ("/" for "/a").
func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// joinPath joins a parent and a child name.
func joinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
