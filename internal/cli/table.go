package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// table prints rows aligned in columns. Every cell goes through
// [escape]: tenants, ids, headers and errors come from senders and
// destinations, and a tab, newline or terminal escape sequence in one
// must neither add a column or a row nor reach the terminal.
type table struct {
	tw     *tabwriter.Writer
	indent string
}

// newTable starts a table on w, with a header row unless header is empty.
func newTable(w io.Writer, header ...string) *table {
	return newIndentedTable(w, "", header...)
}

// newIndentedTable is newTable with every row starting with indent.
func newIndentedTable(w io.Writer, indent string, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0), indent: indent}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

// row adds one row.
func (t *table) row(cells ...string) {
	io.WriteString(t.tw, t.indent)
	for i, c := range cells {
		if i > 0 {
			io.WriteString(t.tw, "\t")
		}
		io.WriteString(t.tw, escape(c))
	}
	io.WriteString(t.tw, "\n")
}

// flush writes the table out.
func (t *table) flush() error { return t.tw.Flush() }

// escape makes s safe to print as part of one line on a terminal. Runes
// that strconv.Quote would escape (control characters, C1 controls,
// bidirectional and other invisible formatting characters, line and
// paragraph separators) become the same Go escapes (\n, \x1b, \u202e),
// and a byte that is not UTF-8 becomes \xNN; everything else, backslashes
// included, is kept as is, so an ordinary value reads unchanged. The
// --json forms carry the exact bytes.
func escape(s string) string {
	return escapeKeeping(s, -1)
}

// escapeKeeping is escape that leaves the rune keep alone: the payload
// block of `events show` keeps its tabs.
func escapeKeeping(s string, keep rune) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == keep || strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// orDash is s, or "-" for a value that is not there.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
