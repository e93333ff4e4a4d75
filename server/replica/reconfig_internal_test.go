package replica

import (
	"strings"
	"testing"

	"github.com/zkgo/zkgo/proto"
)

// nextMembership reads a reconfig request as ZooKeeper's
// PrepRequestProcessor does.
func TestNextMembership(t *testing.T) {
	const (
		s1 = "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181"
		s2 = "server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182"
		s3 = "server.3=127.0.0.1:2890:3890:participant;127.0.0.1:2183"
	)
	cur := parseMembership(s1 + "\n" + s2 + "\nversion=100000000")
	for _, tt := range []struct {
		name string
		req  proto.ReconfigRequest
		want []string // the new Membership's lines; nil: refused
	}{
		{"empty", proto.ReconfigRequest{}, []string{s1, s2}},
		{"join", proto.ReconfigRequest{JoiningServers: s3}, []string{s1, s2, s3}},
		{"join with blanks", proto.ReconfigRequest{JoiningServers: " server.3 = 127.0.0.1:2890:3890:participant;127.0.0.1:2183 "}, []string{s1, s2, s3}},
		{"join twice: the last counts", proto.ReconfigRequest{JoiningServers: strings.Replace(s3, "2890", "2990", 1) + "," + s3}, []string{s1, s2, s3}},
		{"join without a client port", proto.ReconfigRequest{JoiningServers: "server.3=127.0.0.1:2890:3890"}, nil},
		{"join without a client port after ';'", proto.ReconfigRequest{JoiningServers: "server.3=127.0.0.1:2890:3890;"}, nil},
		{"leave", proto.ReconfigRequest{LeavingServers: "2"}, []string{s1}},
		{"leave a non-member", proto.ReconfigRequest{LeavingServers: " 7 ,,"}, []string{s1, s2}},
		{"leave a non-number", proto.ReconfigRequest{LeavingServers: "x"}, nil},
		{"leave and join the same", proto.ReconfigRequest{JoiningServers: s2, LeavingServers: "2"}, []string{s1, s2}},
		{"members", proto.ReconfigRequest{NewMembers: s1 + "," + s3}, []string{s1, s3}},
		{"members by lines, a version ignored", proto.ReconfigRequest{NewMembers: s1 + "\n" + s3 + "\nversion=5"}, []string{s1, s3}},
		{"members without client ports", proto.ReconfigRequest{NewMembers: "server.1=127.0.0.1:2888:3888"}, []string{"server.1=127.0.0.1:2888:3888:participant"}},
		{"members twice: the last counts", proto.ReconfigRequest{NewMembers: strings.Replace(s3, "2890", "2990", 1) + "," + s1 + "," + s3}, []string{s1, s3}},
		{"members win over joining and leaving", proto.ReconfigRequest{NewMembers: s1, JoiningServers: "garbage", LeavingServers: "x"}, []string{s1}},
		{"members garbage", proto.ReconfigRequest{NewMembers: "garbage"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			next, err := nextMembership(cur, &tt.req, false)
			if tt.want == nil {
				if err == nil {
					t.Fatalf("accepted: %q", next.lines())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := next.lines(); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
