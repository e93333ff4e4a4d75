package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// View is how a znode's data is shown.
type View string

// Views.
const (
	ViewAuto View = ""     // JSON if it parses, text if it is UTF-8, hex otherwise
	ViewText View = "text" // UTF-8 text; invalid bytes and controls made visible
	ViewJSON View = "json" // indented JSON (falls back to text if it does not parse)
	ViewHex  View = "hex"  // offset, hex bytes and ASCII, 16 bytes a line
)

// Bounds of what one page renders.
const (
	maxTextRender = 256 << 10 // bytes of data shown as text or JSON
	maxHexRender  = 64 << 10  // bytes of data shown as hex
)

// Rendered is data ready for the page (plain text: the template escapes it).
type Rendered struct {
	View      View   // the view used (never ViewAuto)
	Body      string // the text to show in a <pre>
	Truncated bool   // only the first bytes are shown
	Note      string // e.g. why JSON fell back to text
}

// RenderData renders data in the view asked for; ViewAuto chooses.
func RenderData(data []byte, v View) Rendered {
	if v == ViewAuto {
		v = ViewHex
		switch {
		case len(data) == 0:
			v = ViewText
		case len(data) <= maxTextRender && json.Valid(data) && isJSONContainer(data):
			v = ViewJSON
		case utf8.Valid(data) && printableShare(data) >= 0.9:
			v = ViewText
		}
	}
	switch v {
	case ViewJSON:
		if len(data) > maxTextRender {
			r := RenderData(data, ViewText)
			r.Note = "too large to indent as JSON"
			return r
		}
		var b bytes.Buffer
		if err := json.Indent(&b, data, "", "  "); err != nil {
			r := RenderData(data, ViewText)
			r.Note = "not JSON: " + err.Error()
			return r
		}
		return Rendered{View: ViewJSON, Body: visibleText(b.Bytes())}
	case ViewHex:
		d, trunc := data, false
		if len(d) > maxHexRender {
			d, trunc = d[:maxHexRender], true
		}
		return Rendered{View: ViewHex, Body: hexDump(d), Truncated: trunc}
	default:
		d, trunc := data, false
		if len(d) > maxTextRender {
			d, trunc = d[:maxTextRender], true
		}
		return Rendered{View: ViewText, Body: visibleText(d), Truncated: trunc}
	}
}

// isJSONContainer reports whether data is a JSON object or array (a bare
// number or string is better shown as text).
func isJSONContainer(data []byte) bool {
	t := bytes.TrimSpace(data)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// printableShare is the share of runes that are printable or whitespace.
func printableShare(data []byte) float64 {
	n, ok := 0, 0
	for len(data) > 0 && n < 4096 {
		r, size := utf8.DecodeRune(data)
		data = data[size:]
		n++
		if r == '\n' || r == '\t' || r == '\r' || (r >= 0x20 && r != 0x7f && r != utf8.RuneError) {
			ok++
		}
	}
	if n == 0 {
		return 1
	}
	return float64(ok) / float64(n)
}

// visibleText turns bytes into text that shows everything: valid UTF-8 as
// is, C0 controls (but newline and tab) as their Unicode control pictures
// (U+2400 + c), DEL as U+2421, and each invalid byte as \xNN.
func visibleText(data []byte) string {
	var b strings.Builder
	b.Grow(len(data))
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, data[0])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune(0x2421)
		default:
			b.Write(data[:size])
		}
		data = data[size:]
	}
	return b.String()
}

// hexDump writes 16 bytes a line: offset, hex bytes, ASCII (others as '.').
func hexDump(data []byte) string {
	const hexdig = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(data)/16*78 + 78)
	for off := 0; off < len(data); off += 16 {
		line := data[off:min(off+16, len(data))]
		fmt.Fprintf(&b, "%08x  ", off)
		for i := 0; i < 16; i++ {
			if i < len(line) {
				b.WriteByte(hexdig[line[i]>>4])
				b.WriteByte(hexdig[line[i]&15])
				b.WriteByte(' ')
			} else {
				b.WriteString("   ")
			}
			if i == 7 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(" |")
		for _, c := range line {
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				b.WriteByte('.')
			}
		}
		b.WriteString("|\n")
	}
	return b.String()
}
