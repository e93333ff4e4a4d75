package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	tests := []struct {
		name, text string
		want       map[string][]JAASEntry
		err        string
	}{
		{"empty", "", map[string][]JAASEntry{}, ""},
		{"zookeeper docs", `
/* ZooKeeper's SASL example */
Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_super="adminsecret"
       user_bob="bobsecret";
};
// the client side
Client {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="bob"
       password="bobsecret";
};`, map[string][]JAASEntry{
			"Server": {{Module: "org.apache.zookeeper.server.auth.DigestLoginModule", Flag: "required",
				Options: map[string]string{"user_super": "adminsecret", "user_bob": "bobsecret"}}},
			"Client": {{Module: "org.apache.zookeeper.server.auth.DigestLoginModule", Flag: "required",
				Options: map[string]string{"username": "bob", "password": "bobsecret"}}},
		}, ""},
		{"compact, quotes, escapes, words", `Server{m.A REQUIRED user_a='x"y' user_b="q\"\\\t\101" debug=true;m.B optional;};`,
			map[string][]JAASEntry{"Server": {
				{Module: "m.A", Flag: "required", Options: map[string]string{"user_a": `x"y`, "user_b": "q\"\\\tA", "debug": "true"}},
				{Module: "m.B", Flag: "optional", Options: map[string]string{}},
			}}, ""},
		{"kerberos section", `Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k" storeKey=true principal="zookeeper/h@R"; };`,
			map[string][]JAASEntry{"Server": {{Module: "com.sun.security.auth.module.Krb5LoginModule", Flag: "required",
				Options: map[string]string{"useKeyTab": "true", "keyTab": "/k", "storeKey": "true", "principal": "zookeeper/h@R"}}}}, ""},
		{"repeated option keeps last", `S { m required user_a="1" user_a="2"; };`,
			map[string][]JAASEntry{"S": {{Module: "m", Flag: "required", Options: map[string]string{"user_a": "2"}}}}, ""},
		{"empty section", `S { };`, map[string][]JAASEntry{"S": {}}, ""},
		{"non-ASCII", "S { m required user_jörg=\"pässwörd\"; };",
			map[string][]JAASEntry{"S": {{Module: "m", Flag: "required", Options: map[string]string{"user_jörg": "pässwörd"}}}}, ""},
		{"bad flag", `S { m mandatory; };`, nil, "j:1: invalid control flag"},
		{"missing semicolon after section", `S { m required; }`, nil, "expected ';', found end of file"},
		{"missing entry semicolon", `S { m required a="b" };`, nil, "expected an option name or ';'"},
		{"missing value", "S {\n m required a=; };", nil, "j:2: expected a value for option a"},
		{"duplicate section", `S { }; S { };`, nil, `section "S" appears more than once`},
		{"unterminated quote", "S { m required a=\"b\n\"; };", nil, "j:1: quoted string not closed"},
		{"unterminated comment", "S { /* ", nil, "unterminated /* comment"},
		{"stray character", `S { m required a=b! ; };`, nil, "unexpected character"},
		{"no braces", `S m required;`, nil, "expected '{'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJAAS(tt.text, "j")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if _, err := ParseJAAS(strings.Repeat(" ", MaxJAASFileSize+1), "j"); err == nil {
		t.Error("oversized file accepted")
	}
}

func TestSASLUsers(t *testing.T) {
	sections, err := ParseJAAS(`
Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="b" username="ignored";
  other.Module optional user_alice="${alice.pw}";
};
Empty { m required; };`, "j")
	if err != nil {
		t.Fatal(err)
	}
	users, w, err := SASLUsers(sections, "Server", "j")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"bob": "b", "alice": "${alice.pw}"}; !reflect.DeepEqual(users, want) {
		t.Errorf("users %v", users)
	}
	if len(w) != 1 || !strings.Contains(w[0], "does not expand") {
		t.Errorf("warnings %q", w)
	}
	users, w, err = SASLUsers(sections, "Empty", "j")
	if err != nil || len(users) != 0 || len(w) != 1 {
		t.Errorf("empty: %v %q %v", users, w, err)
	}
	// Section names are case-sensitive; a missing section is a warning.
	users, w, err = SASLUsers(sections, "server", "j")
	if err != nil || len(users) != 0 || len(w) != 1 || !strings.Contains(w[0], `j has no JAAS section named "server" (its sections: Empty, Server): server SASL is off`) {
		t.Errorf("missing section: %v %q %v", users, w, err)
	}
}

// FuzzParseJAAS: any input either fails or yields well-formed entries, and
// never panics.
func FuzzParseJAAS(f *testing.F) {
	f.Add(`Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="bobsecret"; };`)
	f.Add(`S{m optional a='\777\08' b="/*" c=//x
;};`)
	f.Add(`/* unterminated`)
	f.Fuzz(func(t *testing.T, text string) {
		sections, err := ParseJAAS(text, "fuzz")
		if err != nil {
			return
		}
		for name, entries := range sections {
			for _, e := range entries {
				if e.Module == "" && !strings.Contains(text, `""`) && !strings.Contains(text, `''`) {
					t.Fatalf("section %q: empty module name", name)
				}
				switch e.Flag {
				case "required", "requisite", "sufficient", "optional":
				default:
					t.Fatalf("section %q: flag %q", name, e.Flag)
				}
				if e.Options == nil {
					t.Fatal("nil options")
				}
			}
		}
	})
}
