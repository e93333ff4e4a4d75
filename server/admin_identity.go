package server

import (
	"net/http"
	"strings"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/adminhttp"
)

// requestIdentity returns the identities r authenticates for the
// commands that need one (the snapshot command): those of its verified
// client certificate, and those of its Authorization header. The header
// is ZooKeeper 3.9's: "digest user:password", or "x509" alone (the
// certificate's identity, which must then be there).
func (s *Server) requestIdentity(r *http.Request) ([]proto.Id, bool) {
	var ids []proto.Id
	cert := adminhttp.VerifiedCert(r)
	if cert != nil {
		ids = s.port.X509IDs(cert, r.RemoteAddr)
	}
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	switch {
	case h == "":
		return ids, len(ids) > 0
	case strings.EqualFold(h, acl.SchemeX509):
		return ids, cert != nil
	}
	digest, ok := adminIdentity(h, s.opts.SuperDigest)
	if !ok {
		return nil, false
	}
	return append(ids, digest...), true
}
