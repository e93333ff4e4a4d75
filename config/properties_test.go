package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestPropertiesSyntax(t *testing.T) {
	tt := []struct {
		name string
		text string
		want []property
	}{
		{"basic", "a=1\nb = 2 \n  c:3\nd 4\ne\t=\t5\nf\n", []property{
			{"a", "1", 1, ""}, {"b", "2 ", 2, ""}, {"c", "3", 3, ""}, {"d", "4", 4, ""}, {"e", "5", 5, ""}, {"f", "", 6, ""}}},
		{"comments", "# c\n! c\n   # indented\n\na=1 # not a comment\n", []property{{"a", "1 # not a comment", 5, ""}}},
		{"line endings", "a=1\r\nb=2\rc=3", []property{{"a", "1", 1, ""}, {"b", "2", 2, ""}, {"c", "3", 3, ""}}},
		{"continuation", "a=one \\\n    two\\\n  three\nb=4", []property{{"a", "one twothree", 1, ""}, {"b", "4", 4, ""}}},
		{"even backslashes", "a=x\\\\\nb=y", []property{{"a", `x\`, 1, ""}, {"b", "y", 2, ""}}},
		{"comment not continued", "# c \\\na=1", []property{{"a", "1", 2, ""}}},
		{"continued line starting with #", "a=1\\\n#2", []property{{"a", "1#2", 1, ""}}},
		{"continuation at end", "a=1\\", []property{{"a", "1", 1, ""}}},
		{"escapes", `k\:e\=y\ x=v\tw\nx\\y\u0041\q`, []property{{"k:e=y x", "v\tw\nx" + `\yAq`, 1, ""}}},
		{"surrogates", `a=\uD83D\uDE00`, []property{{"a", "\U0001F600", 1, ""}}},
		{"second separator kept", "a==b\nc :=d", []property{{"a", "=b", 1, ""}, {"c", "=d", 2, ""}}},
		{"empty key", "=v", []property{{"", "v", 1, ""}}},
		{"server line", "server.1=zoo1:2888:3888;2181", []property{{"server.1", "zoo1:2888:3888;2181", 1, ""}}},
	}
	for _, tc := range tt {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readProperties(tc.text, "p")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	for _, bad := range []string{`a=\u12`, `a=\u12g4`, "x=1\n\\uzzzz=2"} {
		if _, err := readProperties(bad, "p"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, _, err := parseString(t, "a=1\nb=\\u00"); err == nil || !strings.HasPrefix(err.Error(), "zoo.cfg:2:") {
		t.Errorf("error %v, want line 2", err)
	}
}
