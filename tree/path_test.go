package tree

import (
	"strings"
	"testing"
)

// TestValidatePath follows ZooKeeper's PathUtils.validatePath, which looks at
// the path as Java UTF-16 chars: NUL, U+0001-U+001F, U+007F-U+009F,
// U+D800-U+F8FF (surrogates and private use) and U+FFF0-U+FFFF are
// rejected, so every supplementary character (a surrogate pair in Java) is
// too. Invalid UTF-8 becomes U+FFFD in Java and is rejected as well.
func TestValidatePath(t *testing.T) {
	cases := []struct {
		path  string
		valid bool
	}{
		{"/", true},
		{"/a", true},
		{"/a/b/c", true},
		{"/a/.b", true},
		{"/a/b.", true},
		{"/a/..b", true},
		{"/a/...", true},
		{"/.a", true},
		{"/a b", true},
		{"/zookeeper", true},
		{"/a-b_c:d@e", true},

		{"", false},
		{"a", false},
		{"a/b", false},
		{"//", false},
		{"/a/", false},
		{"/a//b", false},
		{"//a", false},
		{"/.", false},
		{"/..", false},
		{"/a/.", false},
		{"/a/..", false},
		{"/a/./b", false},
		{"/a/../b", false},
		{"/./a", false},

		{"/a\u0000b", false},
		{"/\u0000", false},
		{"/a\u0001", false},
		{"/a\u001f", false},
		{"/a\tb", false},
		{"/a\nb", false},
		{"/\u007f", false},
		{"/\u0080", false},
		{"/\u009f", false},
		{"/\u00a0", true},
		{"/\u00e9t\u00e9", true},
		{"/\u4e2d\u6587", true},
		{"/\ud7ff", true},
		{"/\ue000", false}, // private use
		{"/\uf8ff", false},
		{"/\uf900", true},
		{"/\uffef", true},
		{"/\ufff0", false},
		{"/\ufffd", false},
		{"/\uffff", false},
		{"/\U00010000", false}, // surrogate pair in Java
		{"/\U0001F600", false},
		{"/a/\U0010FFFF", false},
		{"/\xff", false},         // invalid UTF-8
		{"/a\xc3", false},        // truncated sequence
		{"/\xed\xa0\x80", false}, // an encoded surrogate
		{"/\xc0\xaf", false},     // overlong '/'
	}
	for _, c := range cases {
		err := ValidatePath(c.path)
		if (err == nil) != c.valid {
			t.Errorf("ValidatePath(%q) = %v, want valid=%v", c.path, err, c.valid)
		}
		if err != nil && err != ErrBadPath {
			t.Errorf("ValidatePath(%q) = %v, want ErrBadPath", c.path, err)
		}
	}
}

func TestValidatePathLong(t *testing.T) {
	long := "/" + strings.Repeat("a", 1<<16)
	if err := ValidatePath(long); err != nil {
		t.Fatalf("long path rejected: %v", err)
	}
	deep := strings.Repeat("/x", 1000)
	if err := ValidatePath(deep); err != nil {
		t.Fatalf("deep path rejected: %v", err)
	}
}

func TestParentOf(t *testing.T) {
	cases := []struct{ p, parent, name string }{
		{"/", "", ""},
		{"/a", "/", "a"},
		{"/a/b", "/a", "b"},
		{"/a/", "/a", ""},
		{"/a/./b", "/a/.", "b"},
	}
	for _, c := range cases {
		parent, name, ok := parentOf(c.p)
		if !ok || parent != c.parent || name != c.name {
			t.Errorf("parentOf(%q) = %q, %q, %v; want %q, %q", c.p, parent, name, ok, c.parent, c.name)
		}
	}
	if _, _, ok := parentOf("a"); ok {
		t.Error("parentOf(\"a\") ok")
	}
}
