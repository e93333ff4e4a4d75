package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzAdminHTTP: any request line, query and headers an HTTP client
// sends the AdminServer is answered — a status, a bounded body — and
// never panics the member, whatever the command, Host, Authorization or
// Origin. Run a campaign with
//
//	go test -run XXX -fuzz '^FuzzAdminHTTP$' -fuzztime 60s ./server/
func FuzzAdminHTTP(f *testing.F) {
	for _, seed := range []struct{ method, target, host, auth string }{
		{"GET", "/commands", "127.0.0.1", ""},
		{"GET", "/commands/ruok", "localhost", ""},
		{"GET", "/commands/stat?x=1", "127.0.0.1", ""},
		{"GET", "/commands/snapshot?streaming=true", "127.0.0.1", "digest made:up"},
		{"GET", "/commands/dump", "attacker.example", ""},
		{"GET", "/commands/../../etc/passwd", "127.0.0.1", ""},
		{"POST", "/commands/reset", "127.0.0.1", "x509"},
		{"GET", "/commands/wchp%00", "[::1]", "digest :"},
	} {
		f.Add(seed.method, seed.target, seed.host, seed.auth)
	}
	s, err := New(Options{Addr: "127.0.0.1:0", TickTime: 50 * time.Millisecond, AdminAddr: "127.0.0.1:0",
		AdminCommandURL: "/commands", FourLetterWords: []string{"*"}, SuperDigest: "super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Start(); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.admin.Handler()
	f.Fuzz(func(t *testing.T, method, target, host, auth string) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		r, err := http.NewRequest(method, "http://127.0.0.1"+target, nil)
		if err != nil {
			return // not a request a client could send
		}
		r.Host = host
		r.Header.Set("Authorization", auth)
		r.Header.Set("Origin", "http://"+host)
		r.RemoteAddr = "127.0.0.2:4567"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code < 100 || w.Code > 599 {
			t.Fatalf("%s %s: status %d", method, target, w.Code)
		}
		if w.Body.Len() > 64<<20 {
			t.Fatalf("%s %s: %d bytes answered", method, target, w.Body.Len())
		}
	})
}
