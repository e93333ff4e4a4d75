package tree

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// ErrBadPath is returned by ValidatePath for a path ZooKeeper rejects.
var ErrBadPath = errors.New("invalid path")

// ValidatePath checks a znode path with ZooKeeper's rules (PathUtils): it must
// be absolute, must not end with "/" (except the root), must not contain an
// empty segment, a "." or ".." segment, NUL, control characters, or
// characters that Java represents as surrogates, private-use characters or
// the U+FFF0–U+FFFF specials. Invalid UTF-8 counts as invalid (Java decodes
// it to U+FFFD).
func ValidatePath(p string) error {
	if p == "" || p[0] != '/' {
		return ErrBadPath
	}
	if len(p) == 1 {
		return nil
	}
	if p[len(p)-1] == '/' {
		return ErrBadPath
	}
	// Walk the segments.
	rest := p[1:]
	for {
		i := strings.IndexByte(rest, '/')
		seg := rest
		if i >= 0 {
			seg = rest[:i]
		}
		if seg == "" || seg == "." || seg == ".." {
			return ErrBadPath
		}
		if !validSegment(seg) {
			return ErrBadPath
		}
		if i < 0 {
			return nil
		}
		rest = rest[i+1:]
	}
}

func validSegment(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= 0x1f || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return false
		case r >= 0x7f && r <= 0x9f:
			return false
		case r >= 0xd800 && r <= 0xf8ff:
			return false
		case r >= 0xfff0 && r <= 0xffff:
			return false
		case r > 0xffff: // a surrogate pair in Java
			return false
		}
		i += size
	}
	return true
}

// parentOf splits p at its last slash. ok is false when p has no slash.
// The parent of "/a" is "/" and the parent of "/" is "" (ZooKeeper keeps
// the root under both "" and "/").
func parentOf(p string) (parent, name string, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", "", false
	}
	if i == 0 {
		if len(p) == 1 {
			return "", "", true
		}
		return "/", p[1:], true
	}
	return p[:i], p[i+1:], true
}
