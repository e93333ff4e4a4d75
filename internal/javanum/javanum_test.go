package javanum

import "testing"

func TestParseInt(t *testing.T) {
	for _, tt := range []struct {
		s     string
		radix int
		want  int32
		ok    bool
	}{
		{"0", 10, 0, true}, {"+1", 10, 1, true}, {"-12", 10, -12, true}, {"010", 10, 10, true},
		{"2147483647", 10, 2147483647, true}, {"2147483648", 10, 0, false},
		{"-2147483648", 10, -2147483648, true}, {"-2147483649", 10, 0, false},
		{"ff", 16, 255, true}, {"FF", 16, 255, true}, {"g", 16, 0, false},
		{"", 10, 0, false}, {"-", 10, 0, false}, {"1 ", 10, 0, false}, {"99999999999999999999", 10, 0, false},
	} {
		got, ok := ParseInt(tt.s, tt.radix)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseInt(%q, %d) = %d, %v; want %d, %v", tt.s, tt.radix, got, ok, tt.want, tt.ok)
		}
	}
}
