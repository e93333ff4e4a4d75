package x500

import (
	"bufio"
	"encoding/asn1"
	"encoding/base64"
	"math/rand"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var (
	oidCN    = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidO     = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU    = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidDC    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidUID   = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	oidEmail = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	oidSN    = asn1.ObjectIdentifier{2, 5, 4, 5}
)

func str(tag int, s string) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: tag, Bytes: []byte(s)}
}

func utf8s(s string) asn1.RawValue { return str(asn1.TagUTF8String, s) }

func der(t *testing.T, rdns ...rdnSET) []byte {
	t.Helper()
	b, err := asn1.Marshal(rdns)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The expected names are Java 17's X500Principal.getName() of the same
// DER (checked by TestAgainstJava's random names and by
// tests/difftest/tlsdiff against Apache ZooKeeper).
func TestName(t *testing.T) {
	for _, tt := range []struct {
		name string
		rdns []rdnSET
		want string
	}{
		{"plain", []rdnSET{{{oidO, utf8s("zkgo")}}, {{oidCN, utf8s("alice")}}}, "CN=alice,O=zkgo"},
		{"escapes", []rdnSET{{{oidCN, utf8s(`a,b=c+d<e>f#g;h"i\j`)}}}, `CN=a\,b\=c\+d\<e\>f\#g\;h\"i\\j`},
		{"blanks", []rdnSET{{{oidCN, utf8s("  a b \r")}}}, `CN=\ \ a b\ \` + "\r"},
		{"all blank", []rdnSET{{{oidCN, utf8s("  ")}}}, `CN=\ \ `},
		{"nul", []rdnSET{{{oidCN, utf8s("a\x00b")}}}, `CN=a\00b`},
		{"non-ascii", []rdnSET{{{oidCN, utf8s("Jürgen")}}}, "CN=Jürgen"},
		{"multi-valued", []rdnSET{{{oidOU, utf8s("ops")}, {oidUID, utf8s("u")}}}, "OU=ops+UID=u"},
		{"dc", []rdnSET{{{oidDC, str(asn1.TagIA5String, "org")}}, {{oidDC, str(asn1.TagIA5String, "example")}}}, "DC=example,DC=org"},
		{"no keyword", []rdnSET{{{oidEmail, str(asn1.TagIA5String, "a@b")}}, {{oidSN, str(asn1.TagPrintableString, "42")}}}, "2.5.4.5=#13023432,1.2.840.113549.1.9.1=#1603614062"},
		{"not a string", []rdnSET{{{oidCN, asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagOctetString, Bytes: []byte("x")}}}}, "CN=#040178"},
		{"bmp bytes as utf-8", []rdnSET{{{oidCN, str(asn1.TagBMPString, "\x00a")}}}, `CN=\00a`},
		{"empty", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Name(der(t, tt.rdns...))
			if err != nil || got != tt.want {
				t.Errorf("Name = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := Name([]byte{0x30, 0x05}); err == nil {
		t.Error("Name of a truncated sequence: no error")
	}
}

// The answers are Java 17's new X500Principal(s) (accepted or
// IllegalArgumentException); the x509_acl_ids case of tests/difftest/tlsdiff
// compares some with Apache ZooKeeper.
func TestValid(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"", true},
		{"CN=alice,O=zkgo", true},
		{`CN=a\,b,O=zkgo`, true},
		{`CN=a\+b+OU=c,O=zkgo`, true},
		{`CN="quoted, value",O=zkgo`, true},
		{"CN=a;O=b", true},
		{"CN=a, O=b", true},
		{"cn=alice,o=zkgo", true},
		{" CN = alice ", true},
		{"2.5.4.3=alice", true},
		{"OID.2.5.4.3=alice", true},
		{"oid.2.5.4.3=alice", true},
		{"1.40=x", false},
		{"3.1=x", false},
		{"2.999=x", true},
		{"CN=#0c05616c696365", true},
		{"CN=#0c05616c6963", false},
		{"CN=#0c05616c69636565", false},
		{"CN=#zz", false},
		{"CN=#0", false},
		{"CN=#", false},
		{"CN=#1f0100", false},
		{"CN=#0c8105616c696365", true},
		{"EMAILADDRESS=a@b,SERIALNUMBER=1,DC=org,UID=u,STREET=s,T=t", true},
		{"FOO=bar", false},
		{"not a dn", false},
		{"CN", false},
		{"=alice", false},
		{"CN=", true},
		{"CN=a,,O=b", false},
		{"CN=a,", false},
		{"CN=a+", false},
		{`CN=a\`, false},
		{`CN=a\q`, false},
		{`CN=a\41`, true},
		{`CN=a\4`, false},
		{`CN=a"b`, false},
		{"CN=a<b", false},
		{"CN=a=b", true},
		{"CN=a#b", true},
		{`CN="a" b`, false},
		{`CN="a"  `, true},
		{`CN="a\"b"`, true},
		{`CN="a\qb"`, false},
		{`CN="abc`, false},
		{" ", false},
		{`CN=a\\,O=b`, true},
		{`CN=a\\\,O=b`, true},
	} {
		if got := Valid(tt.s); got != tt.want {
			t.Errorf("Valid(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

// TestAgainstJava compares Valid and Name with Java's X500Principal on
// random inputs, when a JDK is installed.
func TestAgainstJava(t *testing.T) {
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Skip("javac not installed")
	}
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	dir := t.TempDir()
	if out, err := exec.Command(javac, "-d", dir, filepath.Join("testdata", "X500Check.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	java := func(mode string, inputs [][]byte) []string {
		var in strings.Builder
		for _, b := range inputs {
			in.WriteString(base64.StdEncoding.EncodeToString(b) + "\n")
		}
		cmd := exec.Command("java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", dir, "X500Check", mode)
		cmd.Stdin = strings.NewReader(in.String())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("java: %v", err)
		}
		var lines []string
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		if len(lines) != len(inputs) {
			t.Fatalf("java answered %d lines for %d inputs", len(lines), len(inputs))
		}
		return lines
	}
	r := rand.New(rand.NewSource(1))

	// Strings made of the pieces the parser cares about.
	pieces := []string{"CN", "cn", "O", "FOO", "OID.", "2.5.4.3", "1.40", "3.1", "=", "=", ",", ";", "+",
		`\`, `"`, "#", " ", "\n", "\t", "a", "0c", "05", "61", "81", "80", "1f", "ü", "<", `\,`, `\2`, `\ `, "-", "+1", "zz", "\r"}
	var strs [][]byte
	for range 20000 {
		var b strings.Builder
		if r.Intn(2) == 0 {
			b.WriteString([]string{"CN=", "O=", "OID.2.5.4.3=", "cn =", `CN="`, "CN=#"}[r.Intn(6)])
		}
		for range 1 + r.Intn(8) {
			b.WriteString(pieces[r.Intn(len(pieces))])
		}
		strs = append(strs, []byte(b.String()))
	}
	bad := 0
	for i, want := range java("valid", strs) {
		if got := Valid(string(strs[i])); got != (want == "1") && bad < 20 {
			bad++
			t.Errorf("Valid(%q) = %v, Java says %s", strs[i], got, want)
		}
	}

	// Names with every kind of attribute type, string type and character.
	oids := []asn1.ObjectIdentifier{oidCN, {2, 5, 4, 6}, {2, 5, 4, 7}, {2, 5, 4, 8}, oidO, oidOU, {2, 5, 4, 9}, oidDC, oidUID, oidSN, oidEmail, {2, 5, 4, 12}, {1, 3, 6, 1, 4, 1, 99999, 1}}
	tags := []int{asn1.TagPrintableString, asn1.TagUTF8String, asn1.TagIA5String, asn1.TagT61String, asn1.TagBMPString, asn1.TagGeneralString, 28, asn1.TagOctetString, asn1.TagInteger, 18}
	chars := []string{"a", "b", " ", ",", "=", "+", "<", ">", "#", ";", `"`, `\`, "\r", "\n", "\t", "ü", "€", "😀", "\x00", "\xff", "\xc3", "\x7f"}
	var names [][]byte
	for range 5000 {
		var rdns []rdnSET
		for range 1 + r.Intn(4) {
			var set rdnSET
			for range 1 + r.Intn(2)*r.Intn(3) {
				var v strings.Builder
				for range r.Intn(6) {
					v.WriteString(chars[r.Intn(len(chars))])
				}
				set = append(set, attribute{oids[r.Intn(len(oids))], str(tags[r.Intn(len(tags))], v.String())})
			}
			rdns = append(rdns, set)
		}
		names = append(names, der(t, rdns...))
	}
	for i, want := range java("name", names) {
		w, err := base64.StdEncoding.DecodeString(want)
		if want == "!" || err != nil {
			t.Fatalf("Java refused name %x", names[i])
		}
		if got, err := Name(names[i]); (err != nil || got != string(w)) && bad < 20 {
			bad++
			t.Errorf("Name(%x) = %q, %v; Java says %q", names[i], got, err, w)
		}
	}
}
