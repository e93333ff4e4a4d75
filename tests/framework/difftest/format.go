package difftest

// Formatting replies and events as the results scripts compare.

import (
	"crypto/sha1"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/proto"
)

func (r *run) format(rec proto.Record) string {
	switch v := rec.(type) {
	case *proto.CreateResponse:
		return "path=" + quotePath(v.Path)
	case *proto.Create2Response:
		return "path=" + quotePath(v.Path) + " " + r.stat(&v.Stat)
	case *proto.ExistsResponse:
		return r.stat(&v.Stat)
	case *proto.GetDataResponse:
		return "data=" + r.formatData(v.Data) + " " + r.stat(&v.Stat)
	case *proto.SetDataResponse:
		return r.stat(&v.Stat)
	case *proto.GetACLResponse:
		return "acl=" + formatACL(v.ACL) + " " + r.stat(&v.Stat)
	case *proto.SetACLResponse:
		return r.stat(&v.Stat)
	case *proto.GetChildrenResponse:
		return "children=" + formatList(v.Children)
	case *proto.GetChildren2Response:
		return "children=" + formatList(v.Children) + " " + r.stat(&v.Stat)
	case *proto.SyncResponse:
		return "path=" + quotePath(v.Path)
	case *proto.GetEphemeralsResponse:
		return "ephemerals=" + formatList(v.Ephemerals)
	case *proto.GetAllChildrenNumberResponse:
		return fmt.Sprintf("number=%d", v.TotalNumber)
	case *proto.ErrorResponse:
		return "err=" + errName(v.Err)
	case *proto.WhoAmIResponse:
		if v.ClientInfo == nil {
			return "clientInfo=null"
		}
		// Apache keeps a session's identities in a hash set: the order
		// means nothing.
		var parts []string
		for _, ci := range v.ClientInfo {
			parts = append(parts, ci.AuthScheme+":"+ci.User)
		}
		slices.Sort(parts)
		return "clientInfo=[" + strings.Join(parts, " ") + "]"
	case *proto.MultiResponse:
		var parts []string
		for i := range v.Results {
			parts = append(parts, r.multiResult(&v.Results[i]))
		}
		return "results=[" + strings.Join(parts, " | ") + "]"
	case *proto.SetSASLResponse:
		return "token=" + r.formatData(v.Token)
	}
	return fmt.Sprintf("%T %+v", rec, rec)
}

func (r *run) multiResult(m *proto.MultiResult) string {
	switch m.Type {
	case proto.OpCreate:
		return "create path=" + quotePath(m.Path)
	case proto.OpCreate2:
		return "create2 path=" + quotePath(m.Path) + " " + r.stat(&m.Stat)
	case proto.OpDelete:
		return "delete"
	case proto.OpCheck:
		return "check"
	case proto.OpSetData:
		return "setData " + r.stat(&m.Stat)
	case proto.OpGetData:
		return "getData data=" + r.formatData(m.Data) + " " + r.stat(&m.Stat)
	case proto.OpGetChildren:
		return "getChildren children=" + formatList(m.Children)
	case proto.OpError:
		return "error " + errName(m.Err)
	}
	return fmt.Sprintf("type %d", m.Type)
}

func (r *run) stat(s *proto.Stat) string {
	return fmt.Sprintf("stat{cz={z:%d} mz={z:%d} pz={z:%d} v=%d cv=%d av=%d owner=%s len=%d nc=%d}",
		s.Czxid, s.Mzxid, s.Pzxid, s.Version, s.Cversion, s.Aversion,
		r.owner(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

// owner classifies an ephemeralOwner value.
func (r *run) owner(o int64) string {
	switch {
	case o == 0:
		return "0"
	case o == math.MinInt64:
		return "container"
	case uint64(o)>>56 == 0xff:
		ttl := o & 0xffffffffff
		if rest := uint64(o) >> 40 & 0xffff; rest != 0 {
			return fmt.Sprintf("extended(%#x)", uint64(o))
		}
		return fmt.Sprintf("ttl(%d)", ttl)
	}
	if n, ok := r.owners[o]; ok {
		return "session(" + n + ")"
	}
	return "session(other)"
}

func quotePath(p string) string {
	if strconv.CanBackquote(p) && !strings.ContainsAny(p, " \"") && p != "" {
		return p
	}
	return strconv.Quote(p)
}

func (r *run) formatData(b []byte) string {
	if b == nil {
		return "null"
	}
	if len(b) > r.dataLimit {
		return fmt.Sprintf("%d bytes sha1:%x", len(b), sha1.Sum(b))
	}
	return strconv.Quote(string(b))
}

func formatList(l []string) string {
	if l == nil {
		return "null"
	}
	s := slices.Clone(l)
	slices.Sort(s)
	for i := range s {
		s[i] = quotePath(s[i])
	}
	return "[" + strings.Join(s, " ") + "]"
}

func formatACL(acl []proto.ACL) string {
	if acl == nil {
		return "null"
	}
	// Sorted: the entries an "auth" ACL expands to come from a hash set
	// in Apache, in no meaningful order.
	var parts []string
	for _, a := range acl {
		parts = append(parts, a.ID.Scheme+":"+a.ID.ID+":"+formatPerms(a.Perms))
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

func formatPerms(p proto.Perm) string {
	var b strings.Builder
	for _, x := range []struct {
		bit proto.Perm
		c   byte
	}{{proto.PermRead, 'r'}, {proto.PermWrite, 'w'}, {proto.PermCreate, 'c'}, {proto.PermDelete, 'd'}, {proto.PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b.WriteByte(x.c)
		}
	}
	if rest := p &^ proto.PermAll; rest != 0 {
		fmt.Fprintf(&b, "+%#x", int32(rest))
	}
	if b.Len() == 0 {
		return "0"
	}
	return b.String()
}

func formatEvents(evs []proto.WatcherEvent) string {
	var parts []string
	for _, e := range evs {
		parts = append(parts, fmt.Sprintf("%s/%s %s",
			strings.TrimPrefix(e.Type.String(), "Event"),
			strings.TrimPrefix(e.State.String(), "State"), quotePath(e.Path)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
