// Package sasl implements the SASL DIGEST-MD5 mechanism (RFC 2831) the way
// Apache ZooKeeper 3.8 uses it to authenticate clients: both the server side
// (what ZooKeeperSaslServer gets from the JDK's DigestMD5Server) and the
// client side (the JDK's DigestMD5Client as ZooKeeperSaslClient drives it).
//
// # The exchange
//
// ZooKeeper carries the tokens in OpSasl requests (GetSASLRequest) and their
// replies (SetSASLResponse). With DIGEST-MD5 it takes two round trips:
//
//	client: ""                      (DIGEST-MD5 has no initial response)
//	server: realm="zk-sasl-md5",nonce="…",qop="auth",charset=utf-8,algorithm=md5-sess
//	client: charset=utf-8,username="bob",realm="zk-sasl-md5",nonce="…",nc=00000001,
//	        cnonce="…",digest-uri="zookeeper/zk-sasl-md5",response=<32 hex>,qop=auth
//	server: rspauth=<32 hex>        (the server proves it knows the password too)
//
// ZooKeeper hard-wires the protocol ("zookeeper") and the server name
// ("zk-sasl-md5"), which is also the realm; see DefaultService and
// DefaultHost.
//
// Only the quality of protection "auth" is implemented: after the exchange
// nothing is wrapped, which is all ZooKeeper ever negotiates. A peer that
// offers or asks for only "auth-int" or "auth-conf" is refused with
// ErrUnsupported.
//
// Neither Server nor Client is safe for concurrent use: one exchange belongs
// to one connection, driven by one goroutine.
package sasl

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Mechanism is the SASL mechanism name.
const Mechanism = "DIGEST-MD5"

// ZooKeeper's fixed names (ZooKeeperSaslServer, ZooKeeperSaslClient).
const (
	// DefaultService is the protocol, the serv-type of digest-uri.
	DefaultService = "zookeeper"
	// DefaultHost is the server name, the host of digest-uri, and the realm
	// the server offers.
	DefaultHost = "zk-sasl-md5"
)

// Size limits from RFC 2831: a digest-challenge is at most 2048 bytes and a
// digest-response at most 4096. Longer tokens are refused before parsing.
const (
	MaxChallengeSize = 2048
	MaxResponseSize  = 4096
)

// maxDirectives bounds the directives of one token. RFC 2831 defines a
// dozen; the rest are extensions that must be ignored.
const maxDirectives = 64

// Errors. Every error Server.Next and Client.Next return wraps one of these;
// after any error the exchange has failed and further calls return
// ErrFinished.
var (
	// ErrMalformed: the token is not a valid DIGEST-MD5 challenge or
	// response (syntax, a missing or repeated directive, a wrong nonce,
	// nonce count or digest-uri).
	ErrMalformed = errors.New("sasl: malformed DIGEST-MD5 token")
	// ErrTooLarge: the token is longer than MaxChallengeSize or
	// MaxResponseSize.
	ErrTooLarge = errors.New("sasl: DIGEST-MD5 token too large")
	// ErrUnsupported: the peer needs something this implementation does not
	// do: a quality of protection other than "auth", an algorithm other
	// than md5-sess, a charset other than utf-8, or a name that cannot be
	// encoded.
	ErrUnsupported = errors.New("sasl: unsupported DIGEST-MD5 option")
	// ErrBadCredentials (server side): unknown user or wrong password. The
	// two are not told apart.
	ErrBadCredentials = errors.New("sasl: DIGEST-MD5 authentication failed: bad user name or password")
	// ErrServerProof (client side): the server's rspauth is wrong, so the
	// server does not know the password.
	ErrServerProof = errors.New("sasl: server's DIGEST-MD5 rspauth does not match")
	// ErrFinished: a token arrived after the exchange completed or failed.
	ErrFinished = errors.New("sasl: DIGEST-MD5 exchange already finished")
)

// nonceFunc returns a fresh nonce; tests replace it.
type nonceFunc func() (string, error)

// randomNonce returns 24 random bytes in base64: 32 characters, none of
// which needs quoting.
func randomNonce(r io.Reader) nonceFunc {
	return func() (string, error) {
		if r == nil {
			r = rand.Reader
		}
		var b [24]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", fmt.Errorf("sasl: nonce: %w", err)
		}
		return base64.StdEncoding.EncodeToString(b[:]), nil
	}
}

// digestParams are the inputs of the response and rspauth values.
type digestParams struct {
	user, realm, password string // before charset conversion
	utf8                  bool   // charset=utf-8 was negotiated
	nonce, cnonce, nc     string
	authzid               string
	hasAuthzid            bool
	qop                   string
	digestURI             string
}

// digest computes response-value (method "AUTHENTICATE") or the rspauth
// value (method "") of RFC 2831 section 2.1.2.1 for qop "auth":
//
//	A1 = { H( { username, ":", realm, ":", passwd } ), ":", nonce, ":", cnonce [":" authzid] }
//	A2 = { method, ":", digest-uri }
//	HEX( KD( HEX(H(A1)), { nonce, ":", nc, ":", cnonce, ":", qop, ":", HEX(H(A2)) } ) )
func digest(p *digestParams, method string) (string, error) {
	user, err := hashBytes(p.user, p.utf8)
	if err != nil {
		return "", err
	}
	realm, err := hashBytes(p.realm, p.utf8)
	if err != nil {
		return "", err
	}
	pass, err := hashBytes(p.password, p.utf8)
	if err != nil {
		return "", err
	}
	h := md5.New()
	h.Write(user)
	h.Write([]byte{':'})
	h.Write(realm)
	h.Write([]byte{':'})
	h.Write(pass)
	a1 := h.Sum(nil)
	a1 = append(a1, ':')
	a1 = append(a1, p.nonce...)
	a1 = append(a1, ':')
	a1 = append(a1, p.cnonce...)
	if p.hasAuthzid {
		a1 = append(a1, ':')
		a1 = append(a1, p.authzid...)
	}
	ha1 := md5.Sum(a1)
	ha2 := md5.Sum([]byte(method + ":" + p.digestURI))
	kd := hex.EncodeToString(ha1[:]) + ":" + p.nonce + ":" + p.nc + ":" + p.cnonce + ":" + p.qop + ":" + hex.EncodeToString(ha2[:])
	sum := md5.Sum([]byte(kd))
	return hex.EncodeToString(sum[:]), nil
}

// hashBytes encodes s for hashing as RFC 2831 and the JDK do: ISO 8859-1 if
// every character fits, otherwise UTF-8, which is allowed only when
// charset=utf-8 was negotiated.
func hashBytes(s string, utf8OK bool) ([]byte, error) {
	latin1 := true
	for _, r := range s {
		if r > 0xFF {
			latin1 = false
			break
		}
	}
	if !latin1 {
		if !utf8OK {
			return nil, fmt.Errorf("%w: name or password outside ISO 8859-1 without charset=utf-8", ErrUnsupported)
		}
		return []byte(s), nil
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return b, nil
}

// decodeText turns a directive value into text: UTF-8 with charset=utf-8
// (it must be valid), ISO 8859-1 otherwise.
func decodeText(v string, utf8Charset bool) (string, bool) {
	if utf8Charset {
		return v, utf8.ValidString(v)
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		b.WriteRune(rune(v[i]))
	}
	return b.String(), true
}

// encodeText is decodeText's inverse for the client's username and realm.
func encodeText(s string, utf8Charset bool) (string, error) {
	if utf8Charset {
		return s, nil
	}
	b, err := hashBytes(s, false)
	return string(b), err
}

// equalHex compares two hex digests in constant time, ignoring case.
func equalHex(got, want string) bool {
	return len(got) == len(want) && subtle.ConstantTimeCompare([]byte(strings.ToLower(got)), []byte(want)) == 1
}
