package sasl

import (
	"errors"
	"strings"
	"testing"
)

// fixedNonce makes an exchange deterministic.
func fixedNonce(n string) nonceFunc { return func() (string, error) { return n, nil } }

func users(m map[string]string) func(string) (string, bool) {
	return func(u string) (string, bool) {
		p, ok := m[u]
		return p, ok
	}
}

// The two worked examples of RFC 2831 section 4 (IMAP and ACAP).
var rfcExamples = []struct {
	name, service, nonce, cnonce, response, rspauth string
}{
	{"imap", "imap", "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk", "d388dad90d4bbd760a152321f2143af7", "ea40f60335c427b5527b84dbabcdfffd"},
	{"acap", "acap", "OA9BSXrbuRhWay", "OA9BSuZWMSpW8m", "6084c6db3fede7352c551284490fd0fc", "2f0b3d7c3c2e486600ef710726aa2eae"},
}

func TestRFC2831Examples(t *testing.T) {
	for _, tt := range rfcExamples {
		t.Run(tt.name, func(t *testing.T) {
			p := digestParams{
				user: "chris", realm: "elwood.innosoft.com", password: "secret",
				nonce: tt.nonce, cnonce: tt.cnonce, nc: "00000001", qop: "auth",
				digestURI: tt.service + "/elwood.innosoft.com",
			}
			if got, _ := digest(&p, "AUTHENTICATE"); got != tt.response {
				t.Errorf("response = %s, want %s", got, tt.response)
			}
			if got, _ := digest(&p, ""); got != tt.rspauth {
				t.Errorf("rspauth = %s, want %s", got, tt.rspauth)
			}

			// The server side, fed the RFC's own response text.
			srv := NewServer(ServerConfig{Service: tt.service, Host: "elwood.innosoft.com", Password: users(map[string]string{"chris": "secret"})})
			srv.newNonce = fixedNonce(tt.nonce)
			if _, err := srv.Next(nil); err != nil {
				t.Fatal(err)
			}
			resp := `charset=utf-8,username="chris",realm="elwood.innosoft.com",nonce="` + tt.nonce +
				`",nc=00000001,cnonce="` + tt.cnonce + `",digest-uri="` + tt.service +
				`/elwood.innosoft.com",response=` + tt.response + `,qop=auth`
			out, err := srv.Next([]byte(resp))
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != "rspauth="+tt.rspauth || !srv.Done() || srv.User() != "chris" {
				t.Errorf("server: %q done=%v user=%q", out, srv.Done(), srv.User())
			}

			// The client side, given the RFC's challenge.
			cli := NewClient(ClientConfig{User: "chris", Password: "secret", Service: tt.service, Host: "elwood.innosoft.com"})
			cli.newNonce = fixedNonce(tt.cnonce)
			chal := `realm="elwood.innosoft.com",nonce="` + tt.nonce + `",qop="auth",algorithm=md5-sess,charset=utf-8`
			got, err := cli.Next([]byte(chal))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(got), "response="+tt.response) {
				t.Errorf("client response %q lacks response=%s", got, tt.response)
			}
			if out, err := cli.Next([]byte("rspauth=" + tt.rspauth)); err != nil || out != nil || !cli.Done() {
				t.Errorf("client final: %q, %v, done=%v", out, err, cli.Done())
			}
		})
	}
}

// exchange runs a client against a server and returns the server's user
// and the first error.
func exchange(t *testing.T, srv *Server, cli *Client) (string, error) {
	t.Helper()
	tok := cli.Start()
	for i := 0; i < 4; i++ {
		out, err := srv.Next(tok)
		if err != nil {
			return "", err
		}
		tok, err = cli.Next(out)
		if err != nil {
			return "", err
		}
		if cli.Done() {
			if !srv.Done() {
				t.Fatal("client done before server")
			}
			return srv.User(), nil
		}
	}
	t.Fatal("exchange did not finish")
	return "", nil
}

func TestRoundTrip(t *testing.T) {
	db := map[string]string{
		"bob":             "bobsecret",
		"jörg":            "pässwörd",        // ISO 8859-1 range: hashed as Latin-1
		"用户":              "密码",              // outside it: hashed as UTF-8
		`we"ird\name`:     `pa"ss\word, x=y`, // needs quoting
		"super":           "adminsecret",
		"empty-password":  "",
		"spaces in name ": " p ",
	}
	for u, p := range db {
		t.Run(u, func(t *testing.T) {
			srv := NewServer(ServerConfig{Password: users(db)})
			cli := NewClient(ClientConfig{User: u, Password: p})
			got, err := exchange(t, srv, cli)
			if err != nil {
				t.Fatal(err)
			}
			if got != u {
				t.Errorf("user = %q, want %q", got, u)
			}
		})
	}
}

func TestBadCredentials(t *testing.T) {
	db := map[string]string{"bob": "bobsecret"}
	tests := []struct{ name, user, pass string }{
		{"wrong password", "bob", "wrong"},
		{"unknown user", "eve", "bobsecret"},
		{"case of user", "Bob", "bobsecret"},
		{"empty password", "bob", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(ServerConfig{Password: users(db)})
			_, err := exchange(t, srv, NewClient(ClientConfig{User: tt.user, Password: tt.pass}))
			if !errors.Is(err, ErrBadCredentials) {
				t.Fatalf("err = %v, want ErrBadCredentials", err)
			}
			if srv.Done() || srv.User() != "" {
				t.Error("server authenticated")
			}
			if _, err := srv.Next([]byte("x")); !errors.Is(err, ErrFinished) {
				t.Errorf("after failure: %v, want ErrFinished", err)
			}
		})
	}
	// No password database at all.
	_, err := exchange(t, NewServer(ServerConfig{}), NewClient(ClientConfig{User: "bob", Password: "x"}))
	if !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("no database: err = %v", err)
	}
}

// respondTo returns a valid response of a fresh client to srv's challenge.
func respondTo(t *testing.T, srv *Server, user, pass string) (chal, resp []byte) {
	t.Helper()
	chal, err := srv.Next(nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = NewClient(ClientConfig{User: user, Password: pass}).Next(chal)
	if err != nil {
		t.Fatal(err)
	}
	return chal, resp
}

func TestReplay(t *testing.T) {
	db := users(map[string]string{"bob": "bobsecret"})
	srv := NewServer(ServerConfig{Password: db})
	_, resp := respondTo(t, srv, "bob", "bobsecret")
	if _, err := srv.Next(resp); err != nil {
		t.Fatal(err)
	}
	// The same response again on the finished exchange.
	if _, err := srv.Next(resp); !errors.Is(err, ErrFinished) {
		t.Errorf("repeat: %v, want ErrFinished", err)
	}
	if !srv.Done() || srv.User() != "bob" {
		t.Errorf("a late token undid the exchange: done=%v user=%q", srv.Done(), srv.User())
	}
	// On a new exchange: its nonce differs.
	srv2 := NewServer(ServerConfig{Password: db})
	if _, err := srv2.Next(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := srv2.Next(resp); !errors.Is(err, ErrMalformed) {
		t.Errorf("replay on a new exchange: %v, want ErrMalformed", err)
	}
	// Restarting with an empty token after the challenge.
	srv3 := NewServer(ServerConfig{Password: db})
	srv3.Next(nil)
	if _, err := srv3.Next(nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty response: %v", err)
	}
}

func TestServerRejects(t *testing.T) {
	db := users(map[string]string{"bob": "bobsecret"})
	// edit turns a valid response into a bad one.
	tests := []struct {
		name string
		edit func(string) string
		want error
	}{
		{"garbage", func(string) string { return "\x00\xff garbage" }, ErrMalformed},
		{"unterminated quote", func(s string) string { return s + `,authzid="bob` }, ErrMalformed},
		{"no value", func(s string) string { return s + ",maxbuf" }, ErrMalformed},
		{"duplicate username", func(s string) string { return s + `,username="bob"` }, ErrMalformed},
		{"duplicate response", func(s string) string { return s + `,response=00000000000000000000000000000000` }, ErrMalformed},
		{"nonce count 2", func(s string) string { return strings.Replace(s, "nc=00000001", "nc=00000002", 1) }, ErrMalformed},
		{"nonce count short", func(s string) string { return strings.Replace(s, "nc=00000001", "nc=1", 1) }, ErrMalformed},
		{"wrong digest-uri", func(s string) string {
			return strings.Replace(s, `digest-uri="zookeeper/zk-sasl-md5"`, `digest-uri="imap/zk-sasl-md5"`, 1)
		}, ErrMalformed},
		{"wrong realm", func(s string) string { return strings.Replace(s, `realm="zk-sasl-md5"`, `realm="other"`, 1) }, ErrMalformed},
		{"no response", func(s string) string { return cut(s, "response=") }, ErrMalformed},
		{"no cnonce", func(s string) string { return cut(s, "cnonce=") }, ErrMalformed},
		{"no digest-uri", func(s string) string { return cut(s, "digest-uri=") }, ErrMalformed},
		{"no username", func(s string) string { return cut(s, "username=") }, ErrMalformed},
		{"qop auth-int", func(s string) string { return strings.Replace(s, "qop=auth", "qop=auth-int", 1) }, ErrUnsupported},
		{"qop auth-conf", func(s string) string { return strings.Replace(s, "qop=auth", "qop=auth-conf,cipher=rc4", 1) }, ErrUnsupported},
		{"qop unknown", func(s string) string { return strings.Replace(s, "qop=auth", "qop=magic", 1) }, ErrMalformed},
		{"cipher", func(s string) string { return s + ",cipher=rc4" }, ErrMalformed},
		{"charset", func(s string) string { return strings.Replace(s, "charset=utf-8", "charset=latin1", 1) }, ErrUnsupported},
		{"flipped response", func(s string) string {
			i := strings.Index(s, "response=") + len("response=")
			c := byte('0')
			if s[i] == '0' {
				c = '1'
			}
			return s[:i] + string(c) + s[i+1:]
		}, ErrBadCredentials},
		{"oversized", func(s string) string { return s + "," + strings.Repeat("x", MaxResponseSize) + "=1" }, ErrTooLarge},
		{"too many directives", func(s string) string { return s + strings.Repeat(",x=1", maxDirectives) }, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(ServerConfig{Password: db})
			_, resp := respondTo(t, srv, "bob", "bobsecret")
			_, err := srv.Next([]byte(tt.edit(string(resp))))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if srv.Done() {
				t.Fatal("server authenticated")
			}
		})
	}
	t.Run("initial response", func(t *testing.T) {
		if _, err := NewServer(ServerConfig{Password: db}).Next([]byte("x")); !errors.Is(err, ErrMalformed) {
			t.Fatalf("err = %v", err)
		}
	})
}

// cut removes the directive starting with prefix.
func cut(s, prefix string) string {
	var keep []string
	for _, f := range strings.Split(s, ",") {
		if !strings.HasPrefix(f, prefix) {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, ",")
}

func TestServerAcceptsVariants(t *testing.T) {
	db := users(map[string]string{"bob": "bobsecret"})
	srv := NewServer(ServerConfig{Password: db})
	chal, err := srv.Next(nil)
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := parseDirectives(chal)
	nonce, _, _ := directiveSet(ds).one("nonce")
	// Upper-case names, spaces, empty list elements, authzid, maxbuf, the
	// qop left out (auth by default), a serv-name in digest-uri.
	p := digestParams{user: "bob", realm: "zk-sasl-md5", password: "bobsecret", utf8: true,
		nonce: nonce, cnonce: "abc", nc: "00000001", qop: "auth", authzid: "bob", hasAuthzid: true,
		digestURI: "ZooKeeper/ZK-SASL-MD5/x"}
	r, _ := digest(&p, "AUTHENTICATE")
	resp := ` CHARSET=utf-8 , ,Username = "bob",realm="zk-sasl-md5",nonce="` + nonce +
		`",nc=00000001,cnonce="abc",digest-uri="ZooKeeper/ZK-SASL-MD5/x",maxbuf=65536,authzid="bob",response=` +
		strings.ToUpper(r) + `,future-extension="ignored",`
	out, err := srv.Next([]byte(resp))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := digest(&p, "")
	if string(out) != "rspauth="+want || srv.User() != "bob" {
		t.Fatalf("out %q user %q", out, srv.User())
	}
}

func TestClientRejects(t *testing.T) {
	good := `realm="zk-sasl-md5",nonce="n",qop="auth",charset=utf-8,algorithm=md5-sess`
	tests := []struct {
		name, chal string
		want       error
	}{
		{"empty", "", ErrMalformed},
		{"garbage", `realm="zk`, ErrMalformed},
		{"no nonce", `realm="zk-sasl-md5",algorithm=md5-sess`, ErrMalformed},
		{"two nonces", good + `,nonce="m"`, ErrMalformed},
		{"no algorithm", `nonce="n"`, ErrMalformed},
		{"md5 algorithm", `nonce="n",algorithm=md5`, ErrUnsupported},
		{"only auth-int", `nonce="n",qop="auth-int,auth-conf",algorithm=md5-sess`, ErrUnsupported},
		{"latin1 charset", `nonce="n",charset=iso-8859-1,algorithm=md5-sess`, ErrUnsupported},
		{"rspauth first", `rspauth=00`, ErrMalformed},
		{"oversized", good + `,x="` + strings.Repeat("a", MaxChallengeSize) + `"`, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewClient(ClientConfig{User: "bob", Password: "p"})
			if _, err := c.Next([]byte(tt.chal)); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if _, err := c.Next([]byte(good)); !errors.Is(err, ErrFinished) {
				t.Errorf("after failure: %v", err)
			}
		})
	}
	// A server that does not know the password cannot produce rspauth.
	c := NewClient(ClientConfig{User: "bob", Password: "p"})
	if _, err := c.Next([]byte(good)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next([]byte("rspauth=ea40f60335c427b5527b84dbabcdfffd")); !errors.Is(err, ErrServerProof) {
		t.Fatalf("bad rspauth: %v", err)
	}
	if c.Done() {
		t.Fatal("done after bad rspauth")
	}
	c = NewClient(ClientConfig{User: "bob", Password: "p"})
	c.Next([]byte(good))
	if _, err := c.Next([]byte(`nonce="x"`)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("no rspauth: %v", err)
	}
}

func TestClientWithoutCharset(t *testing.T) {
	// A server that offers no charset: names go out in ISO 8859-1, and a
	// name outside it cannot be sent.
	chal := `realm="zk-sasl-md5",nonce="n",algorithm=md5-sess`
	c := NewClient(ClientConfig{User: "jörg", Password: "p"})
	resp, err := c.Next([]byte(chal))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(resp), "username=\"j\xf6rg\"") || strings.Contains(string(resp), "charset") {
		t.Errorf("response %q", resp)
	}
	c = NewClient(ClientConfig{User: "用户", Password: "p"})
	if _, err := c.Next([]byte(chal)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("non-Latin-1 user without charset: %v", err)
	}
	// And a server parsing such a response decodes Latin-1.
	srv := NewServer(ServerConfig{Password: users(map[string]string{"jörg": "p"})})
	srv.newNonce = fixedNonce("n")
	srv.Next(nil)
	c = NewClient(ClientConfig{User: "jörg", Password: "p"})
	resp, _ = c.Next([]byte(chal))
	if _, err := srv.Next(resp); err != nil || srv.User() != "jörg" {
		t.Fatalf("latin-1 response: %v user %q", err, srv.User())
	}
}

func TestParseDirectives(t *testing.T) {
	tests := []struct {
		in   string
		want []directive
		err  bool
	}{
		{``, nil, false},
		{` , ,`, nil, false},
		{`a=b`, []directive{{"a", "b", false}}, false},
		{`A = "x\"y\\z" ,b=c`, []directive{{"a", `x"y\z`, true}, {"b", "c", false}}, false},
		{`a=""`, []directive{{"a", "", true}}, false},
		{`a=`, nil, true},
		{`=b`, nil, true},
		{`a b=c`, nil, true},
		{`a="b" c=d`, nil, true},
		{`a="b\`, nil, true},
		{`a/b=c`, nil, true},
	}
	for _, tt := range tests {
		got, err := parseDirectives([]byte(tt.in))
		if (err != nil) != tt.err {
			t.Errorf("%q: err = %v", tt.in, err)
			continue
		}
		if err == nil && len(got) != len(tt.want) {
			t.Errorf("%q: got %v, want %v", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%q: got %v, want %v", tt.in, got, tt.want)
			}
		}
	}
}

// FuzzServerResponse feeds arbitrary responses to a server after its
// challenge: it must never panic, and must authenticate only with the
// password's digest in the response.
func FuzzServerResponse(f *testing.F) {
	db := users(map[string]string{"bob": "bobsecret"})
	srv := NewServer(ServerConfig{Password: db})
	srv.newNonce = fixedNonce("fuzznonce")
	chal, _ := srv.Next(nil)
	cli := NewClient(ClientConfig{User: "bob", Password: "bobsecret"})
	cli.newNonce = fixedNonce("c")
	good, _ := cli.Next(chal)
	f.Add(good)
	f.Add([]byte(`username="bob",nonce="fuzznonce",nc=00000001,cnonce="c",digest-uri="zookeeper/zk-sasl-md5",response=0`))
	f.Add([]byte(`a="\`))
	f.Fuzz(func(t *testing.T, resp []byte) {
		s := NewServer(ServerConfig{Password: db})
		s.newNonce = fixedNonce("fuzznonce")
		if _, err := s.Next(nil); err != nil {
			t.Fatal(err)
		}
		out, err := s.Next(resp)
		if err != nil {
			if s.Done() || out != nil {
				t.Fatalf("error %v with done=%v out=%q", err, s.Done(), out)
			}
			return
		}
		if !s.Done() || s.User() == "" || !strings.HasPrefix(string(out), "rspauth=") {
			t.Fatalf("success without authentication: %q", out)
		}
	})
}

// FuzzClientChallenge feeds arbitrary challenges to a client.
func FuzzClientChallenge(f *testing.F) {
	f.Add([]byte(`realm="zk-sasl-md5",nonce="n",qop="auth",charset=utf-8,algorithm=md5-sess`))
	f.Add([]byte(`nonce="n",algorithm=md5-sess,realm="a",realm="b"`))
	f.Fuzz(func(t *testing.T, chal []byte) {
		c := NewClient(ClientConfig{User: "bob", Password: "p"})
		resp, err := c.Next(chal)
		if err != nil {
			return
		}
		if len(resp) > MaxResponseSize {
			t.Fatalf("response of %d bytes", len(resp))
		}
		if _, err := parseDirectives(resp); err != nil {
			t.Fatalf("client produced an unparsable response %q: %v", resp, err)
		}
	})
}
