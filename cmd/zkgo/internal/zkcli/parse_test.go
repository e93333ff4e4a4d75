package zkcli

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

func TestSplitLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"ls /", []string{"ls", "/"}},
		{"  ls   -s\t/a  ", []string{"ls", "-s", "/a"}},
		{`set /a "hello world"`, []string{"set", "/a", "hello world"}},
		{`set /a 'it is'`, []string{"set", "/a", "it is"}},
		{`set /a ""`, []string{"set", "/a", ""}},
		{`set /a x"y z"`, []string{"set", "/a", `x"y`, `z"`}},
		{`create /a "unterminated`, []string{"create", "/a", "unterminated"}},
		{`set /a "a'b"`, []string{"set", "/a", "a'b"}},
	} {
		if got := splitLine(tc.line); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitLine(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

func TestParseOpts(t *testing.T) {
	defs := []optDef{{"s", false, ""}, {"w", false, ""}, {"v", true, ""}, {"file", true, ""}}
	for _, tc := range []struct {
		args    string
		set     string // options set, sorted
		vals    map[string]string
		pos     []string
		wantErr string
	}{
		{args: "cmd /a", pos: []string{"cmd", "/a"}},
		{args: "cmd -s -w /a", set: "sw", pos: []string{"cmd", "/a"}},
		{args: "cmd -sw /a", set: "sw", pos: []string{"cmd", "/a"}},
		{args: "cmd /a -s", set: "s", pos: []string{"cmd", "/a"}},
		{args: "cmd -v 5 /a", set: "v", vals: map[string]string{"v": "5"}, pos: []string{"cmd", "/a"}},
		{args: "cmd -v5 /a", set: "v", vals: map[string]string{"v": "5"}, pos: []string{"cmd", "/a"}},
		{args: "cmd -v=5 /a", set: "v", vals: map[string]string{"v": "5"}, pos: []string{"cmd", "/a"}},
		{args: "cmd -sv5 /a", set: "sv", vals: map[string]string{"v": "5"}, pos: []string{"cmd", "/a"}},
		{args: "cmd -v -1 /a", set: "v", vals: map[string]string{"v": "-1"}, pos: []string{"cmd", "/a"}},
		{args: "cmd -v 1 -v 2 /a", set: "v", vals: map[string]string{"v": "1"}, pos: []string{"cmd", "/a"}},
		{args: "cmd -file f.cfg", set: "file", vals: map[string]string{"file": "f.cfg"}, pos: []string{"cmd"}},
		{args: "cmd /a -- -s -x", pos: []string{"cmd", "/a", "-s", "-x"}},
		{args: "cmd - /a", pos: []string{"cmd", "-", "/a"}},
		{args: "cmd -x /a", wantErr: "Unrecognized option: -x"},
		{args: "cmd -sx /a", wantErr: "Unrecognized option: -sx"},
		{args: "cmd --s /a", wantErr: "Unrecognized option: --s"},
		{args: "cmd /a -5", wantErr: "Unrecognized option: -5"},
		{args: "cmd /a -v", wantErr: "Missing argument for option: v"},
		{args: "cmd -v -s /a", wantErr: "Missing argument for option: v"},
	} {
		cl, err := parseOpts(strings.Fields(tc.args), defs, nil)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%q: err %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		set := ""
		for _, d := range defs {
			if cl.has(d.name) {
				set += d.name
			}
		}
		if set != tc.set || !reflect.DeepEqual(cl.args, tc.pos) {
			t.Errorf("%q: set %q args %q, want %q %q", tc.args, set, cl.args, tc.set, tc.pos)
		}
		for k, v := range tc.vals {
			if cl.val(k) != v {
				t.Errorf("%q: -%s = %q, want %q", tc.args, k, cl.val(k), v)
			}
		}
	}
}

func TestParseOptsGroup(t *testing.T) {
	defs := []optDef{{"n", true, ""}, {"b", true, ""}}
	if _, err := parseOpts([]string{"setquota", "-n", "1", "-b", "2", "/a"}, defs, []string{"n", "b"}); err == nil ||
		err.Error() != "The option 'b' was specified but an option from this group has already been selected: 'n'" {
		t.Errorf("err = %v", err)
	}
	if _, err := parseOpts([]string{"setquota", "-n", "1", "-n", "2", "/a"}, defs, []string{"n", "b"}); err != nil {
		t.Errorf("same option twice: %v", err)
	}
}

func TestValidatePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		seq  bool
		want string
	}{
		{"/", false, ""},
		{"/a/b", false, ""},
		{"/a/", true, ""},
		{"/a/.b", false, ""},
		{"", false, "Path length must be > 0"},
		{"a", false, "Path must start with / character"},
		{"/a/", false, "Path must not end with / character"},
		{"/a//b", false, `Invalid path string "/a//b" caused by empty node name specified @3`},
		{"/a/./b", false, `Invalid path string "/a/./b" caused by relative paths not allowed @3`},
		{"/a/..", false, `Invalid path string "/a/.." caused by relative paths not allowed @4`},
		{"/a\x01", false, `Invalid path string "/a` + "\x01" + `" caused by invalid character @2`},
		{"/é\x00", false, `Invalid path string "/é` + "\x00" + `" caused by null character not allowed @2`},
		{"/😀", false, `Invalid path string "/😀" caused by invalid character @1`},
	} {
		err := validatePath(tc.path, tc.seq)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("validatePath(%q, %v) = %q, want %q", tc.path, tc.seq, got, tc.want)
		}
	}
}

func TestParseTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{"30000": 30 * time.Second, "500": 500 * time.Millisecond, "2s": 2 * time.Second, "1m30s": 90 * time.Second} {
		if got, err := parseTimeout(in); err != nil || got != want {
			t.Errorf("parseTimeout(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "abc", "-1s", "99999999999999"} {
		if _, err := parseTimeout(in); err == nil {
			t.Errorf("parseTimeout(%q) succeeded", in)
		}
	}
}

func TestStatsTrack(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "count=-1,bytes=-1"},
		{"count=0,bytes=0", "count=0,bytes=0"},
		{"count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1", "count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1"},
		{"countHardLimit=3;count=1", "count=1,bytes=-1=;countHardLimit=3"},
		{"count=,bytes=7", "count=-1,bytes=7"},
		{"count", "count=-1,bytes=-1"},
	} {
		st, err := parseStatsTrack(tc.in)
		if err != nil {
			t.Errorf("parseStatsTrack(%q): %v", tc.in, err)
			continue
		}
		if got := st.String(); got != tc.want {
			t.Errorf("parseStatsTrack(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
	}
	if _, err := parseStatsTrack("count=x"); err == nil {
		t.Error("count=x parsed")
	}
}

func TestFormatStat(t *testing.T) {
	st := &zk.Stat{Czxid: 0x1a, Mzxid: 0x2b, Ctime: 1795255200000, Mtime: 1795255261000, Version: 3, Cversion: 4,
		Aversion: 1, EphemeralOwner: -0x7fffffffffffffff, DataLength: 5, NumChildren: 2, Pzxid: 0x3c}
	want := `cZxid = 0x1a
ctime = Sat Nov 21 10:00:00 UTC 2026
mZxid = 0x2b
mtime = Sat Nov 21 10:01:01 UTC 2026
pZxid = 0x3c
cversion = 4
dataVersion = 3
aclVersion = 1
ephemeralOwner = 0x8000000000000001
dataLength = 5
numChildren = 2
`
	if got := formatStat(st, time.UTC); got != want {
		t.Errorf("formatStat:\n%s\nwant:\n%s", got, want)
	}
}

func TestFormatACL(t *testing.T) {
	for _, tc := range []struct {
		a    zk.ACL
		want string
	}{
		{zk.ACL{Perms: zk.PermAll, ID: zk.Id{Scheme: "world", ID: "anyone"}}, "'world,'anyone\n: cdrwa\n"},
		{zk.ACL{Perms: zk.PermRead | zk.PermAdmin, ID: zk.Id{Scheme: "digest", ID: "bob:x=,}%"}}, "'digest,'bob:x=%2C%7D%25\n: ra\n"},
		{zk.ACL{Perms: 0, ID: zk.Id{Scheme: "ip", ID: "10.0.0.0/8"}}, "'ip,'10.0.0.0/8\n: \n"},
	} {
		if got := formatACL(tc.a); got != tc.want {
			t.Errorf("formatACL(%v) = %q, want %q", tc.a, got, tc.want)
		}
	}
}

func TestClientConfigString(t *testing.T) {
	cfg := "server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181\nserver.2=10.0.0.2:2888:3888;2182\nversion=100000000\n"
	if got, want := clientConfigString(cfg), "100000000 0.0.0.0:2181,0.0.0.0:2182"; got != want {
		t.Errorf("clientConfigString = %q, want %q", got, want)
	}
	if got := clientConfigString(""); got != " " {
		t.Errorf("empty config: %q", got)
	}
}

func TestUsageText(t *testing.T) {
	u := usageText()
	lines := strings.Split(strings.TrimSuffix(u, "\n"), "\n")
	if len(lines) != len(commands)+1 {
		t.Fatalf("usage has %d lines for %d commands", len(lines), len(commands))
	}
	// zkCli sorts with String.compareTo: upper case first.
	if !strings.HasPrefix(lines[1], "\taddWatch [-m mode] path") || !strings.HasPrefix(lines[2], "\taddauth scheme auth") {
		t.Errorf("usage order:\n%s", u)
	}
	if !strings.Contains(u, "\tls [-s] [-w] [-R] path\n") || !strings.Contains(u, "\tclose \n") {
		t.Errorf("usage:\n%s", u)
	}
}
