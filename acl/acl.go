// Package acl implements ZooKeeper's access-control rules as pure functions:
// digest identities, what an addauth request adds to a connection, the
// validation and expansion of ACL lists at create and setACL, the permission
// check made before every operation on a znode, and the masking getACL
// applies for callers without ADMIN.
//
// The behaviour follows Apache ZooKeeper 3.8 (DigestAuthenticationProvider,
// IPAuthenticationProvider, PrepRequestProcessor.fixupACL,
// ZooKeeperServer.checkACL and FinalRequestProcessor's getACL), with one
// extension: "ip" ACLs may name IPv6 addresses and networks, following the
// IPv6 support that ZooKeeper added after 3.8 (ZOOKEEPER-4240). ZooKeeper 3.8
// itself only understands IPv4 in "ip" ACLs.
//
// The providers known are those of a stock ZooKeeper server, "ip" and
// "digest", plus "sasl" (SASLAuthenticationProvider, which ZooKeeper
// registers only when authProvider.N names it; zkgo always has it, so sasl
// ACLs are valid even on a server without SASL users). Ids of the "x509"
// scheme are matched by equality in Check; FixupWith accepts ACLs naming
// the sasl and x509 schemes only on a server with those providers, as
// ZooKeeper does.
package acl

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/zkgo/zkgo/internal/javanum"
	"github.com/zkgo/zkgo/internal/x500"

	"github.com/zkgo/zkgo/proto"
)

// Schemes of identities and ACLs.
const (
	SchemeWorld  = "world"
	SchemeAuth   = "auth"
	SchemeDigest = "digest"
	SchemeIP     = "ip"
	SchemeSuper  = "super"
	SchemeX509   = "x509"
	SchemeSASL   = "sasl"
)

// Anyone is the only valid id of the "world" scheme.
const Anyone = "anyone"

// Well-known ACL lists (ZooDefs.Ids).
var (
	// OpenACLUnsafe grants every permission to everyone.
	OpenACLUnsafe = []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: SchemeWorld, ID: Anyone}}}
	// ReadACLUnsafe grants read to everyone.
	ReadACLUnsafe = []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: SchemeWorld, ID: Anyone}}}
	// CreatorAllACL grants every permission to the creator's authenticated ids.
	CreatorAllACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: SchemeAuth, ID: ""}}}
)

var (
	// ErrInvalidACL is returned by Fixup; callers reply proto.ErrInvalidACL.
	ErrInvalidACL = errors.New("acl: invalid ACL")
	// ErrAuthFailed is returned by Authenticate; callers reply
	// proto.ErrAuthFailed and then close the connection.
	ErrAuthFailed = errors.New("acl: authentication failed")
)

// DigestID returns the id of the "digest" scheme for user and password:
// "user:" followed by the base64 of SHA-1("user:password"), as computed by
// ZooKeeper's DigestAuthenticationProvider.generateDigest. The user should
// not contain ':' (ZooKeeper takes everything before the first ':' as the
// user name).
func DigestID(user, password string) string {
	return digestOf(user + ":" + password)
}

// digestOf is generateDigest applied to an addauth payload "user:password":
// the user is everything before the first ':' (the whole payload when there
// is none) and the hash covers the whole payload.
func digestOf(idPassword string) string {
	user, _, _ := strings.Cut(idPassword, ":")
	sum := sha1.Sum([]byte(idPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// Authenticate returns the identities an addauth request (AuthPacket) adds to
// the connection. superDigest is the configured
// DigestAuthenticationProvider.superDigest ("super:<base64 sha1>"), or "" for
// none.
//
//   - "digest": the payload is decoded as text and hashed whole; everything
//     before the first ':' is the user. ZooKeeper never fails a digest
//     addauth, not even for a payload without ':' (that yields
//     "payload:"+base64(sha1(payload))), so neither does this. When the
//     generated id equals superDigest the result is [super:"" digest:id],
//     otherwise [digest:id].
//   - "ip": ZooKeeper answers OK and adds "ip:<remote address>" to the
//     connection, which every connection already holds from the moment it
//     was accepted (the server adds it then), so this returns no ids and no
//     error.
//   - any other scheme, including "world", "auth", "super", and "sasl" and
//     "x509" (SASL is negotiated with a separate packet; the server answers
//     an x509 addauth from the connection's client certificate itself):
//     ErrAuthFailed.
//
// On ErrAuthFailed ZooKeeper replies to the auth packet (xid -4) with
// AUTHFAILED (-115) and then closes the connection; the client sees the
// AuthFailed state. Identities belong to the connection, not to the session:
// a client that reconnects sends its addauth packets again.
func Authenticate(scheme string, auth []byte, superDigest string) ([]proto.Id, error) {
	switch scheme {
	case SchemeDigest:
		// ZooKeeper decodes the payload with the JVM's default charset
		// (UTF-8 on current JVMs) and hashes it as UTF-8, so malformed
		// bytes turn into U+FFFD (Java may use one U+FFFD where this
		// uses several for a truncated sequence).
		text := string(auth)
		if !utf8.ValidString(text) {
			text = string([]rune(text))
		}
		id := digestOf(text)
		if superDigest != "" && id == superDigest {
			return []proto.Id{{Scheme: SchemeSuper, ID: ""}, {Scheme: SchemeDigest, ID: id}}, nil
		}
		return []proto.Id{{Scheme: SchemeDigest, ID: id}}, nil
	case SchemeIP:
		return nil, nil
	default:
		return nil, ErrAuthFailed
	}
}

// isAuthenticatedScheme reports whether ids of scheme name an authenticated
// user, so that an "auth" ACL expands to them (AuthenticationProvider.
// isAuthenticated). "ip" is not authenticated, and "super" has no provider,
// so neither is ever the target of an "auth" ACL.
func isAuthenticatedScheme(scheme string) bool {
	switch scheme {
	case SchemeDigest, SchemeX509, SchemeSASL:
		return true
	}
	return false
}

// Fixup validates the ACL list of a create or setACL request and expands
// "auth" entries, as ZooKeeper's PrepRequestProcessor.fixupACL does. authIDs
// are the identities of the requesting connection.
//
//   - Exact duplicates are dropped first, keeping the first occurrence.
//     (Duplicates that only appear after expansion are kept, as in ZooKeeper.)
//   - A nil or empty list is invalid.
//   - world:anyone is kept. Any other "world" id is invalid.
//   - An "auth" entry (whatever its id) becomes one entry with its perms for
//     each authenticated identity of the connection ("digest", and "x509" or
//     "sasl" were such ids ever present); "ip" and "super" identities are
//     skipped. It is invalid if there is none.
//   - A "digest" id must be "user:hash": exactly two fields around ':', where
//     Java's String.split drops trailing empty fields (so "u:" and "u:h:c"
//     are invalid while ":h" and "u:h:" are valid). Nothing checks the hash.
//   - An "ip" id must be an address or address/bits (see IPMatches).
//   - A "sasl" id must be a valid Kerberos name (SASLAuthenticationProvider.
//     isValid): without '@', or of the form name[/host]@realm.
//   - Any other scheme is invalid.
//   - Perms are not checked: ZooKeeper accepts 0 and bits above ADMIN.
//
// The result is a new slice; on any problem it returns ErrInvalidACL.
func Fixup(acls []proto.ACL, authIDs []proto.Id) ([]proto.ACL, error) {
	return FixupWith(acls, authIDs, Providers{SASL: true})
}

// Providers are the optional authentication providers of a server. ACLs
// of a scheme whose provider is missing are invalid, as on a ZooKeeper
// server without it (authProvider.N registers them there).
type Providers struct {
	// SASL: "sasl" ids must be valid Kerberos names.
	SASL bool
	// X509: "x509" ids must be distinguished names Java's X500Principal
	// accepts (X509AuthenticationProvider.isValid; see x500.Valid). The
	// empty string is one.
	X509 bool
}

// FixupWith is Fixup on a server with the providers p.
func FixupWith(acls []proto.ACL, authIDs []proto.Id, p Providers) ([]proto.ACL, error) {
	uniq := dedup(acls)
	if len(uniq) == 0 {
		return nil, ErrInvalidACL
	}
	out := make([]proto.ACL, 0, len(uniq))
	for _, a := range uniq {
		switch {
		case a.ID.Scheme == SchemeWorld && a.ID.ID == Anyone:
			out = append(out, a)
		case a.ID.Scheme == SchemeAuth:
			found := false
			for _, id := range authIDs {
				if isAuthenticatedScheme(id.Scheme) {
					found = true
					out = append(out, proto.ACL{Perms: a.Perms, ID: id})
				}
			}
			if !found {
				return nil, ErrInvalidACL
			}
		case a.ID.Scheme == SchemeDigest:
			if !validDigestID(a.ID.ID) {
				return nil, ErrInvalidACL
			}
			out = append(out, a)
		case a.ID.Scheme == SchemeIP:
			// ZooKeeper 3.8's IPAuthenticationProvider.isValid knows IPv4
			// only: IPv6 ACLs are invalid there, and so here.
			if addr, _, ok := parseIPExpr(a.ID.ID); !ok || len(addr) != 4 {
				return nil, ErrInvalidACL
			}
			out = append(out, a)
		case a.ID.Scheme == SchemeSASL && p.SASL:
			if !validKerberosName(a.ID.ID) {
				return nil, ErrInvalidACL
			}
			out = append(out, a)
		case a.ID.Scheme == SchemeX509 && p.X509:
			if !x500.Valid(a.ID.ID) {
				return nil, ErrInvalidACL
			}
			out = append(out, a)
		default:
			return nil, ErrInvalidACL
		}
	}
	return out, nil
}

// dedup returns acls without exact duplicates, keeping the first of each
// in order. It runs on every member for each create and setACL, so it is
// linear: a request may carry tens of thousands of entries.
func dedup(acls []proto.ACL) []proto.ACL {
	uniq := make([]proto.ACL, 0, len(acls))
	if len(acls) <= 8 {
		// The common lists are short: comparing pairs costs less than
		// a map.
		for i, a := range acls {
			if !slices.Contains(acls[:i], a) {
				uniq = append(uniq, a)
			}
		}
		return uniq
	}
	seen := make(map[proto.ACL]struct{}, len(acls))
	for _, a := range acls {
		if _, dup := seen[a]; !dup {
			seen[a] = struct{}{}
			uniq = append(uniq, a)
		}
	}
	return uniq
}

// validDigestID is DigestAuthenticationProvider.isValid: id.split(":") must
// have exactly two elements, where Java drops trailing empty strings.
func validDigestID(id string) bool {
	if !strings.Contains(id, ":") {
		return false // split returns the whole string: one element
	}
	parts := strings.Split(id, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return len(parts) == 2
}

// validKerberosName is KerberosName's constructor not throwing: a name
// without '@' is a plain service name; one with '@' must match
// ([^/@]*)(/([^/@]*))?@([^/@]*) as a whole.
func validKerberosName(id string) bool {
	at := strings.IndexByte(id, '@')
	if at < 0 {
		return true
	}
	name, realm := id[:at], id[at+1:]
	if strings.ContainsAny(realm, "/@") {
		return false
	}
	return strings.Count(name, "/") <= 1
}

// Check reports whether a connection holding ids may perform an operation
// needing perm on a znode whose ACL is acls (ZooKeeperServer.checkACL):
//
//   - an empty ACL allows everything;
//   - a "super" identity allows everything;
//   - otherwise some entry must share a bit with perm (perm may hold several
//     bits, e.g. READ|ADMIN for getACL, and any one of them suffices) and be
//     world:anyone, or match an identity of the same scheme: "ip" by
//     address or network (IPMatches), "digest", "x509" and "sasl" by equal
//     ids, where the sasl identity "super" also matches every sasl entry
//     (SASLAuthenticationProvider.matches). Entries of other schemes never
//     match.
func Check(acls []proto.ACL, perm proto.Perm, ids []proto.Id) bool {
	if len(acls) == 0 {
		return true
	}
	for _, id := range ids {
		if id.Scheme == SchemeSuper {
			return true
		}
	}
	for _, a := range acls {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID.Scheme == SchemeWorld && a.ID.ID == Anyone {
			return true
		}
		for _, id := range ids {
			if id.Scheme != a.ID.Scheme {
				continue
			}
			switch a.ID.Scheme {
			case SchemeIP:
				if IPMatches(a.ID.ID, id.ID) {
					return true
				}
			case SchemeDigest, SchemeX509:
				if id.ID == a.ID.ID {
					return true
				}
			case SchemeSASL:
				if id.ID == a.ID.ID || id.ID == "super" {
					return true
				}
			}
		}
	}
	return false
}

// Masked returns a copy of acls as ZooKeeper's getACL returns it to a caller
// that lacks ADMIN on the znode (but has READ): the password hash of every
// "digest" id is hidden, "user:hash" becoming "user:x" (Java's
// id.replaceAll(":.*", ":x")). Other entries are unchanged. A nil list
// stays nil.
func Masked(acls []proto.ACL) []proto.ACL {
	if acls == nil {
		return nil
	}
	out := make([]proto.ACL, len(acls))
	for i, a := range acls {
		if a.ID.Scheme == SchemeDigest {
			a.ID.ID = maskDigest(a.ID.ID)
		}
		out[i] = a
	}
	return out
}

// maskDigest applies Java's s.replaceAll(":.*", ":x"): '.' does not match
// line terminators, so within each line everything from the first ':' on is
// replaced.
func maskDigest(s string) string {
	if !strings.Contains(s, ":") {
		return s
	}
	var b strings.Builder
	inTail := false // inside a ".*" run that is being replaced
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\u0085' || r == '\u2028' || r == '\u2029':
			inTail = false
			b.WriteRune(r)
		case inTail:
		case r == ':':
			inTail = true
			b.WriteString(":x")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// IPMatches reports whether a client at clientAddr matches the "ip" ACL id
// aclID, which is an address or address/bits: "10.1.2.3", "10.0.0.0/8",
// "2001:db8::1", "2001:db8::/32". The comparison is bytewise after masking
// both addresses to bits; an IPv4 expression never matches an IPv6 client
// nor the reverse. clientAddr is the connection's remote address as text
// (an IPv4-mapped IPv6 address counts as IPv4, and an IPv6 zone is ignored).
//
// aclID is parsed as ZooKeeper parses it: IPv4 as four dot-separated
// decimal numbers 0-255 (Java's Integer.parseInt, so "+1" and "010" are
// accepted); IPv6 as up to eight ':'-separated groups of at most four hex
// digits with at most one "::" and no embedded dotted IPv4; bits a decimal
// number from 0 to 32 (IPv4) or 128 (IPv6). Host names are not accepted.
func IPMatches(aclID, clientAddr string) bool {
	aclAddr, bits, ok := parseIPExpr(aclID)
	if !ok {
		return false
	}
	remote, ok := clientBytes(clientAddr)
	if !ok || len(remote) != len(aclAddr) {
		return false
	}
	maskBytes(aclAddr, bits)
	maskBytes(remote, bits)
	for i := range remote {
		if remote[i] != aclAddr[i] {
			return false
		}
	}
	return true
}

// parseIPExpr parses an "ip" ACL id (IPAuthenticationProvider.isValid): an
// address, optionally followed by "/bits".
func parseIPExpr(expr string) (addr []byte, bits int, ok bool) {
	host, bitsStr, hasBits := strings.Cut(expr, "/")
	addr = addrBytes(host)
	if addr == nil {
		return nil, 0, false
	}
	bits = len(addr) * 8
	if hasBits {
		n, ok := javanum.ParseInt(bitsStr, 10)
		if !ok || n < 0 || int(n) > len(addr)*8 {
			return nil, 0, false
		}
		bits = int(n)
	}
	return addr, bits, true
}

// clientBytes converts a connection's remote address to bytes. The address
// is produced by the server, not by a user, so the standard parser is used.
func clientBytes(s string) ([]byte, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return nil, false
	}
	a = a.Unmap().WithZone("")
	return a.AsSlice(), true
}

// addrBytes parses an address the way IPAuthenticationProvider.addr2Bytes
// does: with a ':' it is IPv6, else with a '.' it is IPv4. It returns nil
// for anything else.
func addrBytes(s string) []byte {
	switch {
	case strings.Contains(s, ":"):
		return v6Bytes(s)
	case strings.Contains(s, "."):
		return v4Bytes(s)
	}
	return nil
}

func v4Bytes(s string) []byte {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return nil
	}
	b := make([]byte, 4)
	for i, p := range parts {
		v, ok := javanum.ParseInt(p, 10)
		if !ok || v < 0 || v > 255 {
			return nil
		}
		b[i] = byte(v)
	}
	return b
}

func v6Bytes(s string) []byte {
	halves := strings.Split(s, "::")
	var head, tail []string
	switch len(halves) {
	case 1:
		head = strings.Split(halves[0], ":")
		if len(head) != 8 {
			return nil
		}
	case 2:
		if halves[0] != "" {
			head = strings.Split(halves[0], ":")
		}
		if halves[1] != "" {
			tail = strings.Split(halves[1], ":")
		}
		if len(head)+len(tail) >= 8 {
			return nil
		}
	default:
		return nil
	}
	b := make([]byte, 16)
	if !v6Groups(b[:2*len(head)], head) || !v6Groups(b[16-2*len(tail):], tail) {
		return nil
	}
	return b
}

func v6Groups(dst []byte, groups []string) bool {
	for i, g := range groups {
		if g == "" || len(g) > 4 {
			return false
		}
		v, ok := javanum.ParseInt(g, 16)
		if !ok {
			return false
		}
		dst[2*i] = byte(v >> 8)
		dst[2*i+1] = byte(v)
	}
	return true
}

// maskBytes clears every bit of b after the first bits.
func maskBytes(b []byte, bits int) {
	for i := range b {
		switch {
		case (i+1)*8 <= bits:
		case i*8 >= bits:
			b[i] = 0
		default:
			b[i] &= ^byte(0xff >> (bits - i*8))
		}
	}
}
