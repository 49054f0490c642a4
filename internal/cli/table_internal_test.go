package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                        "",
		"acme":                    "acme",
		`C:\path "quoted" 'x'`:    `C:\path "quoted" 'x'`,
		"globex.myshopify.com":    "globex.myshopify.com",
		"Zürich 東京 ✓":             "Zürich 東京 ✓",
		"a\tb":                    `a\tb`,
		"row\r\n9  forged":        `row\r\n9  forged`,
		"\x1b[2J\x1b]0;title\x07": `\x1b[2J\x1b]0;title\a`,
		"\x00\x7f":                `\x00\x7f`,
		"c1 \u009b31m":            `c1 \u009b31m`,
		"bidi \u202egnp.exe":      `bidi \u202egnp.exe`,
		"line\u2028sep":           `line\u2028sep`,
		"bad \xff\xfe utf8":       `bad \xff\xfe utf8`,
		"kept \ufffd":             "kept \ufffd",
	} {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := escapeKeeping("\tindented\x1b", '\t'); got != "\tindented\\x1b" {
		t.Errorf("escapeKeeping tab = %q", got)
	}
}

// TestTableRows: whatever its cells hold, a row is one line and has its
// columns.
func TestTableRows(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	tb := newIndentedTable(&b, "  ", "A", "B", "C")
	tb.row("1", "x\ty\nz", "3")
	tb.row("22", "", "\r")
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	want := "  A   B        C\n" +
		`  1   x\ty\nz  3` + "\n" +
		`  22           \r` + "\n"
	if b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
	if n := strings.Count(b.String(), "\n"); n != 3 {
		t.Errorf("%d lines, want 3", n)
	}
}
