// Package javanum parses integers the way Java's Integer.parseInt does, for
// the places where zkgo must accept exactly what ZooKeeper accepts (zoo.cfg
// values, ip ACL ids).
package javanum

// ParseInt is Integer.parseInt(s, radix) for ASCII input: an optional '+'
// or '-' followed by at least one digit of the radix (2..36), within int32.
func ParseInt(s string, radix int) (int32, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		d := digit(s[i])
		if d >= radix {
			return 0, false
		}
		v = v*int64(radix) + int64(d)
		if v > 1<<31 {
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	if v > 1<<31-1 || v < -(1<<31) {
		return 0, false
	}
	return int32(v), true
}

func digit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'Z':
		return int(c-'A') + 10
	}
	return 99
}
