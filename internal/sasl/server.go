package sasl

import (
	"fmt"
	"io"
	"strings"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// Password returns the password of user, or false if there is no such
	// user. It is called once per exchange, from the goroutine calling
	// Next, and must not block for long.
	Password func(user string) (password string, ok bool)
	// Service and Host are the digest-uri the client must name
	// ("Service/Host"); Host is also the one realm offered. Defaults
	// DefaultService and DefaultHost, as ZooKeeper.
	Service, Host string
	// Rand is the source of nonces. Default crypto/rand.
	Rand io.Reader
}

// server exchange steps.
const (
	srvStart    = iota // expecting the client's empty initial token
	srvResponse        // challenge sent, expecting the digest-response
	srvDone            // authenticated
	srvFailed
)

// Server is the server side of one DIGEST-MD5 exchange.
type Server struct {
	cfg      ServerConfig
	newNonce nonceFunc
	step     int
	nonce    string
	user     string
}

// NewServer returns a server exchange waiting for the client's first
// token.
func NewServer(cfg ServerConfig) *Server {
	if cfg.Service == "" {
		cfg.Service = DefaultService
	}
	if cfg.Host == "" {
		cfg.Host = DefaultHost
	}
	return &Server{cfg: cfg, newNonce: randomNonce(cfg.Rand)}
}

// Done reports whether the client has authenticated.
func (s *Server) Done() bool { return s.step == srvDone }

// User returns the authenticated user name (the DIGEST-MD5 username), or ""
// before Done. An authzid the client may have sent is not used: ZooKeeper
// authorizes the authentication id.
func (s *Server) User() string {
	if s.step != srvDone {
		return ""
	}
	return s.user
}

// Next takes the client's next token and returns the token to send back:
// the challenge after the (empty) first token, "rspauth=…" once the client
// has authenticated. Any error but ErrFinished ends the exchange; the
// caller refuses the client (ZooKeeper answers AuthFailed and closes the
// connection). A token after the end returns ErrFinished and leaves Done
// and User as they were.
func (s *Server) Next(token []byte) ([]byte, error) {
	switch s.step {
	case srvStart:
		if len(token) != 0 {
			s.step = srvFailed
			return nil, fmt.Errorf("%w: DIGEST-MD5 has no initial response, got %d bytes", ErrMalformed, len(token))
		}
		nonce, err := s.newNonce()
		if err != nil {
			s.step = srvFailed
			return nil, err
		}
		s.nonce = nonce
		var b strings.Builder
		writeQuoted(&b, "realm", s.cfg.Host)
		writeQuoted(&b, "nonce", nonce)
		writeQuoted(&b, "qop", "auth")
		writeToken(&b, "charset", "utf-8")
		writeToken(&b, "algorithm", "md5-sess")
		s.step = srvResponse
		return []byte(b.String()), nil
	case srvResponse:
		out, err := s.response(token)
		if err != nil {
			s.step = srvFailed
			return nil, err
		}
		s.step = srvDone
		return out, nil
	default:
		// A finished exchange stays as it ended.
		return nil, ErrFinished
	}
}

// response checks a digest-response and returns "rspauth=…".
func (s *Server) response(token []byte) ([]byte, error) {
	if len(token) > MaxResponseSize {
		return nil, fmt.Errorf("%w: response of %d bytes (limit %d)", ErrTooLarge, len(token), MaxResponseSize)
	}
	list, err := parseDirectives(token)
	if err != nil {
		return nil, err
	}
	ds := directiveSet(list)
	var p digestParams
	get := func(name string, required bool) (string, bool, error) {
		v, ok, err := ds.one(name)
		if err == nil && required && !ok {
			err = fmt.Errorf("%w: response has no %s", ErrMalformed, name)
		}
		return v, ok, err
	}
	charset, hasCharset, err := get("charset", false)
	if err != nil {
		return nil, err
	}
	if hasCharset && !strings.EqualFold(charset, "utf-8") {
		return nil, fmt.Errorf("%w: charset %q", ErrUnsupported, charset)
	}
	p.utf8 = hasCharset
	user, _, err := get("username", true)
	if err != nil {
		return nil, err
	}
	var ok bool
	if p.user, ok = decodeText(user, p.utf8); !ok || p.user == "" {
		return nil, fmt.Errorf("%w: bad username", ErrMalformed)
	}
	realm, hasRealm, err := get("realm", false)
	if err != nil {
		return nil, err
	}
	if hasRealm {
		if p.realm, ok = decodeText(realm, p.utf8); !ok || p.realm != s.cfg.Host {
			return nil, fmt.Errorf("%w: realm %q was not offered", ErrMalformed, realm)
		}
	}
	if p.nonce, _, err = get("nonce", true); err != nil {
		return nil, err
	}
	if p.nonce != s.nonce {
		return nil, fmt.Errorf("%w: nonce does not match the challenge", ErrMalformed)
	}
	if p.cnonce, _, err = get("cnonce", true); err != nil {
		return nil, err
	}
	if p.cnonce == "" {
		return nil, fmt.Errorf("%w: empty cnonce", ErrMalformed)
	}
	if p.nc, _, err = get("nc", true); err != nil {
		return nil, err
	}
	if !validNonceCount(p.nc) {
		// One exchange, one response: the count is always 1.
		return nil, fmt.Errorf("%w: nonce count %q, want 00000001", ErrMalformed, p.nc)
	}
	qop, hasQop, err := get("qop", false)
	if err != nil {
		return nil, err
	}
	if !hasQop {
		qop = "auth"
	}
	switch strings.ToLower(qop) {
	case "auth":
		p.qop = qop
	case "auth-int", "auth-conf":
		return nil, fmt.Errorf("%w: qop %q (only auth is supported)", ErrUnsupported, qop)
	default:
		return nil, fmt.Errorf("%w: qop %q was not offered", ErrMalformed, qop)
	}
	if _, has, err := get("cipher", false); err != nil || has {
		if err == nil {
			err = fmt.Errorf("%w: cipher without auth-conf", ErrMalformed)
		}
		return nil, err
	}
	if p.digestURI, _, err = get("digest-uri", true); err != nil {
		return nil, err
	}
	if !s.validURI(p.digestURI) {
		return nil, fmt.Errorf("%w: digest-uri %q, want %s/%s", ErrMalformed, p.digestURI, s.cfg.Service, s.cfg.Host)
	}
	resp, _, err := get("response", true)
	if err != nil {
		return nil, err
	}
	if len(resp) != 32 {
		return nil, fmt.Errorf("%w: response value is not 32 hex digits", ErrMalformed)
	}
	if _, _, err := get("maxbuf", false); err != nil {
		return nil, err
	}
	if p.authzid, p.hasAuthzid, err = get("authzid", false); err != nil {
		return nil, err
	}
	password, known := "", false
	if s.cfg.Password != nil {
		password, known = s.cfg.Password(p.user)
	}
	p.password = password
	want, err := digest(&p, "AUTHENTICATE")
	if err != nil {
		return nil, err
	}
	if !equalHex(resp, want) || !known {
		return nil, ErrBadCredentials
	}
	rspauth, err := digest(&p, "")
	if err != nil {
		return nil, err
	}
	s.user = p.user
	return []byte("rspauth=" + rspauth), nil
}

// validURI checks digest-uri = serv-type "/" host [ "/" serv-name ]
// against Service and Host, ignoring case.
func (s *Server) validURI(uri string) bool {
	parts := strings.Split(uri, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return false
	}
	return strings.EqualFold(parts[0], s.cfg.Service) && strings.EqualFold(parts[1], s.cfg.Host)
}

// validNonceCount reports whether nc is 8 hex digits with the value 1.
func validNonceCount(nc string) bool {
	if len(nc) != 8 {
		return false
	}
	for i := 0; i < 7; i++ {
		if nc[i] != '0' {
			return false
		}
	}
	return nc[7] == '1'
}
