package sasl

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// User and Password are the credentials (the username and password
	// options of a JAAS "Client" section with DigestLoginModule).
	User, Password string
	// Service and Host make the digest-uri "Service/Host". Defaults
	// DefaultService and DefaultHost, which every ZooKeeper server expects.
	Service, Host string
	// Rand is the source of the client nonce. Default crypto/rand.
	Rand io.Reader
}

// client exchange steps.
const (
	cliChallenge = iota // expecting the server's challenge
	cliRspauth          // response sent, expecting rspauth
	cliDone
	cliFailed
)

// Client is the client side of one DIGEST-MD5 exchange.
type Client struct {
	cfg       ClientConfig
	newNonce  nonceFunc
	step      int
	wantProof string
}

// NewClient returns a client exchange. Send Start's token first, then feed
// each server token to Next until Done.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Service == "" {
		cfg.Service = DefaultService
	}
	if cfg.Host == "" {
		cfg.Host = DefaultHost
	}
	return &Client{cfg: cfg, newNonce: randomNonce(cfg.Rand)}
}

// Start returns the first token to send. DIGEST-MD5 has no initial
// response, so it is empty (as ZooKeeper's client sends).
func (c *Client) Start() []byte { return []byte{} }

// Done reports whether the server has proved that it knows the password;
// only then is the exchange complete.
func (c *Client) Done() bool { return c.step == cliDone }

// Next takes the server's token and returns the next token to send, or nil
// when there is nothing more to send (after the server's rspauth, when Done
// reports true). Any error ends the exchange; a token after the end returns
// ErrFinished and leaves Done as it was.
func (c *Client) Next(token []byte) ([]byte, error) {
	var out []byte
	var err error
	switch c.step {
	case cliChallenge:
		out, err = c.respond(token)
		if err == nil {
			c.step = cliRspauth
			return out, nil
		}
	case cliRspauth:
		err = c.checkProof(token)
		if err == nil {
			c.step = cliDone
			return nil, nil
		}
	default:
		return nil, ErrFinished // a finished exchange stays as it ended
	}
	c.step = cliFailed
	return nil, err
}

// respond answers the digest-challenge.
func (c *Client) respond(token []byte) ([]byte, error) {
	if len(token) == 0 {
		return nil, fmt.Errorf("%w: empty challenge (is SASL configured on the server?)", ErrMalformed)
	}
	if len(token) > MaxChallengeSize {
		return nil, fmt.Errorf("%w: challenge of %d bytes (limit %d)", ErrTooLarge, len(token), MaxChallengeSize)
	}
	list, err := parseDirectives(token)
	if err != nil {
		return nil, err
	}
	ds := directiveSet(list)
	if _, ok, err := ds.one("rspauth"); err != nil || ok {
		return nil, fmt.Errorf("%w: expected a challenge, got rspauth", ErrMalformed)
	}
	var p digestParams
	nonce, ok, err := ds.one("nonce")
	if err != nil {
		return nil, err
	}
	if !ok || nonce == "" {
		return nil, fmt.Errorf("%w: challenge has no nonce", ErrMalformed)
	}
	p.nonce = nonce
	alg, ok, err := ds.one("algorithm")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: challenge has no algorithm", ErrMalformed)
	}
	if !strings.EqualFold(alg, "md5-sess") {
		return nil, fmt.Errorf("%w: algorithm %q", ErrUnsupported, alg)
	}
	charset, hasCharset, err := ds.one("charset")
	if err != nil {
		return nil, err
	}
	if hasCharset && !strings.EqualFold(charset, "utf-8") {
		return nil, fmt.Errorf("%w: charset %q", ErrUnsupported, charset)
	}
	p.utf8 = hasCharset
	qops := []string{"auth"}
	if v, ok, err := ds.one("qop"); err != nil {
		return nil, err
	} else if ok {
		qops = splitList(v)
	}
	if !slices.ContainsFunc(qops, func(q string) bool { return strings.EqualFold(q, "auth") }) {
		return nil, fmt.Errorf("%w: the server offers qop %q; only auth is supported", ErrUnsupported, strings.Join(qops, ","))
	}
	if _, _, err := ds.one("maxbuf"); err != nil {
		return nil, err
	}
	if _, _, err := ds.one("stale"); err != nil {
		return nil, err
	}
	// The realm: ZooKeeper offers exactly one, its server name. With several,
	// prefer Host, else the first; with none, send none (A1 uses "").
	realms := ds.all("realm")
	hasRealm := len(realms) > 0
	if hasRealm {
		realm := realms[0]
		for _, r := range realms {
			if r == c.cfg.Host {
				realm = r
			}
		}
		if p.realm, ok = decodeText(realm, p.utf8); !ok {
			return nil, fmt.Errorf("%w: realm is not UTF-8", ErrMalformed)
		}
	}
	cnonce, err := c.newNonce()
	if err != nil {
		return nil, err
	}
	p.user, p.password, p.cnonce, p.nc, p.qop = c.cfg.User, c.cfg.Password, cnonce, "00000001", "auth"
	p.digestURI = c.cfg.Service + "/" + c.cfg.Host
	resp, err := digest(&p, "AUTHENTICATE")
	if err != nil {
		return nil, err
	}
	if c.wantProof, err = digest(&p, ""); err != nil {
		return nil, err
	}
	wireUser, err := encodeText(p.user, p.utf8)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if p.utf8 {
		writeToken(&b, "charset", "utf-8")
	}
	writeQuoted(&b, "username", wireUser)
	if hasRealm {
		wireRealm, err := encodeText(p.realm, p.utf8)
		if err != nil {
			return nil, err
		}
		writeQuoted(&b, "realm", wireRealm)
	}
	writeQuoted(&b, "nonce", p.nonce)
	writeToken(&b, "nc", p.nc)
	writeQuoted(&b, "cnonce", p.cnonce)
	writeQuoted(&b, "digest-uri", p.digestURI)
	writeToken(&b, "response", resp)
	writeToken(&b, "qop", p.qop)
	if b.Len() > MaxResponseSize {
		return nil, fmt.Errorf("%w: response of %d bytes (limit %d)", ErrTooLarge, b.Len(), MaxResponseSize)
	}
	return []byte(b.String()), nil
}

// checkProof verifies the server's "rspauth=…".
func (c *Client) checkProof(token []byte) error {
	if len(token) > MaxChallengeSize {
		return fmt.Errorf("%w: server token of %d bytes (limit %d)", ErrTooLarge, len(token), MaxChallengeSize)
	}
	list, err := parseDirectives(token)
	if err != nil {
		return err
	}
	v, ok, err := directiveSet(list).one("rspauth")
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: server's final token has no rspauth", ErrMalformed)
	}
	if !equalHex(v, c.wantProof) {
		return ErrServerProof
	}
	return nil
}
