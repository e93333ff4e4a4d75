package console

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRenderData(t *testing.T) {
	for _, tt := range []struct {
		desc string
		data []byte
		view View
		want View
		body string // a substring of the body
	}{
		{"empty is text", nil, ViewAuto, ViewText, ""},
		{"text", []byte("hello\nworld"), ViewAuto, ViewText, "hello\nworld"},
		{"json object is indented", []byte(`{"a":1,"b":[1,2]}`), ViewAuto, ViewJSON, "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}"},
		{"a bare JSON number stays text", []byte(`42`), ViewAuto, ViewText, "42"},
		{"binary is hex", []byte{0, 1, 2, 0xff, 'A'}, ViewAuto, ViewHex, "00000000  00 01 02 ff 41"},
		{"hex shows ASCII", []byte("ABCDEFGHIJKLMNOPQ"), ViewHex, ViewHex, "|ABCDEFGHIJKLMNOP|\n00000010  51"},
		{"text view of binary makes bytes visible", []byte{'a', 0, 0xff, 0x7f, '\t', 'b'}, ViewText, ViewText, "a\u2400\\xff\u2421\tb"},
		{"json view of non-JSON falls back", []byte("{nope"), ViewJSON, ViewText, "{nope"},
		{"markup is just text", []byte("<script>alert(1)</script>"), ViewAuto, ViewText, "<script>"},
		{"mostly controls is hex", bytes.Repeat([]byte{1, 2, 3, 'a'}, 10), ViewAuto, ViewHex, "01 02 03 61"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			r := RenderData(tt.data, tt.view)
			if r.View != tt.want || !strings.Contains(r.Body, tt.body) {
				t.Errorf("RenderData(%q, %q) = %q %q; want view %q containing %q", tt.data, tt.view, r.View, r.Body, tt.want, tt.body)
			}
		})
	}
}

func TestRenderDataBounds(t *testing.T) {
	big := bytes.Repeat([]byte("x"), maxTextRender+10)
	if r := RenderData(big, ViewText); !r.Truncated || len(r.Body) != maxTextRender {
		t.Errorf("text: truncated %v, %d bytes", r.Truncated, len(r.Body))
	}
	if r := RenderData(big, ViewHex); !r.Truncated || strings.Count(r.Body, "\n") != maxHexRender/16 {
		t.Errorf("hex: truncated %v, %d lines", r.Truncated, strings.Count(r.Body, "\n"))
	}
	if r := RenderData(big, ViewJSON); r.View != ViewText || r.Note == "" {
		t.Errorf("json of a large value: %q %q", r.View, r.Note)
	}
}

func FuzzRenderData(f *testing.F) {
	f.Add([]byte(`{"a":1}`), "json")
	f.Add([]byte{0xff, 0, 0x80}, "text")
	f.Fuzz(func(t *testing.T, data []byte, v string) {
		for _, view := range []View{View(v), ViewAuto, ViewText, ViewHex, ViewJSON} {
			r := RenderData(data, view)
			if !slices.Contains([]View{ViewText, ViewHex, ViewJSON}, r.View) {
				t.Fatalf("view %q", r.View)
			}
		}
	})
}

func TestPageOf(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f", "g"}
	for _, tt := range []struct {
		desc             string
		after, from      string
		size             int
		want             []string
		start            int
		hasPrev, hasNext bool
		prevAfter, next  string
	}{
		{"first page", "", "", 3, []string{"a", "b", "c"}, 0, false, true, "", "c"},
		{"second page", "c", "", 3, []string{"d", "e", "f"}, 3, true, true, "", "f"},
		{"third page", "f", "", 3, []string{"g"}, 6, true, false, "c", ""},
		{"after a name that is gone", "cc", "", 3, []string{"d", "e", "f"}, 3, true, true, "", "f"},
		{"from a prefix", "", "e", 3, []string{"e", "f", "g"}, 4, true, false, "a", ""},
		{"after the end", "z", "", 3, []string{}, 7, true, false, "d", ""},
		{"all on one page", "", "", 200, names, 0, false, false, "", ""},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			p := pageOf(names, tt.after, tt.from, tt.size, 1<<20)
			if !slices.Equal(p.Names, tt.want) || p.Start != tt.start || p.HasPrev != tt.hasPrev || p.HasNext != tt.hasNext || p.PrevAfter != tt.prevAfter || p.NextAfter != tt.next || p.Total != len(names) {
				t.Errorf("got %+v", p)
			}
		})
	}
	if p := pageOf(nil, "", "", 10, 1<<20); len(p.Names) != 0 || p.HasNext || p.HasPrev {
		t.Errorf("empty: %+v", p)
	}
	// A page holds at most maxBytes of names, and at least one name.
	long := []string{"aaaa", "bbbb", "cccc", "dddd", "eeee"}
	if p := pageOf(long, "", "", 200, 9); !slices.Equal(p.Names, long[:2]) || p.NextAfter != "bbbb" || p.HasPrev {
		t.Errorf("first page by bytes: %+v", p)
	}
	if p := pageOf(long, "bbbb", "", 200, 9); !slices.Equal(p.Names, long[2:4]) || !p.HasPrev || p.PrevAfter != "" {
		t.Errorf("second page by bytes: %+v", p)
	}
	if p := pageOf(long, "dddd", "", 200, 9); !slices.Equal(p.Names, long[4:]) || p.PrevAfter != "bbbb" || p.HasNext {
		t.Errorf("last page by bytes: %+v", p)
	}
	if p := pageOf(long, "", "", 200, 2); !slices.Equal(p.Names, long[:1]) {
		t.Errorf("a name longer than the page: %+v", p)
	}
}

func TestValidPath(t *testing.T) {
	for p, ok := range map[string]bool{
		"/": true, "/a": true, "/a/b": true, "/a b/<c>&?#%": true, "/ünï": true,
		"": false, "a": false, "/a/": false, "//a": false, "/a/./b": false, "/a/..": false, "/\xff": false, "/a\x00": false,
	} {
		if validPath(p) != ok {
			t.Errorf("validPath(%q) = %v", p, !ok)
		}
	}
}

func TestCrumbs(t *testing.T) {
	got := crumbs("/a/bb/c")
	want := []crumb{{"/", "/"}, {"a", "/a"}, {"bb", "/a/bb"}, {"c", "/a/bb/c"}}
	if !slices.Equal(got, want) {
		t.Errorf("crumbs: %v", got)
	}
}

func TestHumanDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{-time.Second, "0s"},
		{300 * time.Nanosecond, "1µs"},
		{412_400 * time.Nanosecond, "412µs"},
		{999_600 * time.Nanosecond, "1ms"},
		{950 * time.Millisecond, "950ms"},
		{12_340 * time.Millisecond, "12.3s"},
		{4*time.Minute + 5*time.Second, "4m05s"},
		{3*time.Hour + 2*time.Minute, "3h02m"},
		{52 * time.Hour, "2d04h"},
	} {
		if got := humanDuration(tt.d); got != tt.want {
			t.Errorf("humanDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
