package brain

import "strings"

// ansi.go takes terminal control sequences out of an output before it is read. Test runners colour their
// summaries (a green "42 passed", a red "FAIL"), redraw progress lines with cursor moves, and wrap file names
// in hyperlinks; the codes sit inside the words the brain reads, and a person shown the summary or the error
// would see them as noise.

const esc = '\x1b'

// stripANSI removes ECMA-48 control sequences from s: CSI sequences (colours, cursor moves, erasing: ESC [ …
// final byte), OSC sequences (titles, OSC 8 hyperlinks: ESC ] … BEL or ESC \; the link's visible text stays),
// the string sequences DCS, SOS, PM and APC, two-byte escapes (ESC 7, ESC =, ESC ( B …), the 8-bit CSI (U+009B)
// and the backspace of overstrike (the struck character goes, as a terminal shows it).
func stripANSI(s string) string {
	if !strings.ContainsRune(s, esc) && !strings.ContainsRune(s, '\u009b') && !strings.ContainsRune(s, '\b') {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == esc && i+1 < len(s):
			i = skipEscape(s, i+1)
		case c == esc:
			i++
		case c == 0xc2 && i+1 < len(s) && s[i+1] == 0x9b: // U+009B, the 8-bit CSI
			i = skipCSI(s, i+2)
		case c == '\b':
			// Drop the last character written, a whole UTF-8 sequence, but never a line break.
			k := len(out) - 1
			for k > 0 && out[k]&0xc0 == 0x80 {
				k--
			}
			if k >= 0 && out[k] != '\n' {
				out = out[:k]
			}
			i++
		default:
			out = append(out, c)
			i++
		}
	}
	return string(out)
}

// skipEscape returns the index after the escape sequence whose introducer (the byte after ESC) is at i.
func skipEscape(s string, i int) int {
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	// nF escapes: intermediate bytes (0x20–0x2F) then one final byte, as in ESC ( B.
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipCSI returns the index after a CSI sequence whose parameters start at i: parameter bytes (0x30–0x3F),
// intermediate bytes (0x20–0x2F), one final byte (0x40–0x7E). A sequence cut short ends where the malformed
// byte is, which is kept.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
		i++
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString returns the index after a control string whose body starts at i: it ends with BEL or ST (ESC \),
// or at the end of the line when the terminator is missing, so that a broken sequence does not swallow the rest.
func skipString(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case '\a':
			return i + 1
		case '\n':
			return i
		case esc:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i + 1
		}
		i++
	}
	return i
}
