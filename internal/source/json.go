package source

import (
	"github.com/tidwall/gjson"

	"github.com/hookgate/hookgate/internal/config"
)

// jsonPath is one member name on the path of a JSON selector, and the names
// read below it. A source's selectors form a tree of them, so that a body
// is checked once per object on any path however many selectors share it.
type jsonPath struct {
	name string
	next []jsonPath
}

// newJSONPaths returns the tree of the JSON paths sels read.
func newJSONPaths(sels []selector) []jsonPath {
	var root []jsonPath
	for _, sel := range sels {
		for _, r := range sel.reads() {
			if r.Kind == config.SelectJSON {
				root = addJSONPath(root, r.Path)
			}
		}
	}
	return root
}

func addJSONPath(level []jsonPath, path []string) []jsonPath {
	if len(path) == 0 {
		return level
	}
	for i := range level {
		if level[i].name == path[0] {
			level[i].next = addJSONPath(level[i].next, path[1:])
			return level
		}
	}
	return append(level, jsonPath{name: path[0], next: addJSONPath(nil, path[1:])})
}

// duplicateName returns the path of the first member, on one of paths, whose
// object has its name twice, or nil. gjson reads the first of two members
// and most JSON parsers the last, so a body such as
// {"id":"evt_A","id":"evt_B"} would be keyed as one event and processed as
// another. Names compare unescaped ("\u0069d" is "id"). Objects off the
// paths are skipped unread, and an array on a path is entered only at the
// index the path names. raw must be valid JSON (checkJSON).
func duplicateName(raw string, paths []jsonPath) []string {
	i := skipSpace(raw, 0)
	if len(paths) == 0 || i == len(raw) {
		return nil
	}
	switch raw[i] {
	case '[':
		for _, p := range paths {
			if el := gjson.Get(raw, gjson.Escape(p.name)); el.Exists() {
				if dup := duplicateName(el.Raw, p.next); dup != nil {
					return append([]string{p.name}, dup...)
				}
			}
		}
	case '{':
		var seenBuf [16]bool // no allocation for the usual handful of names
		seen := seenBuf[:]
		if len(paths) > len(seenBuf) {
			seen = make([]bool, len(paths))
		}
		for i++; i < len(raw); {
			i = skipSpace(raw, i)
			if i == len(raw) || raw[i] == '}' {
				return nil
			}
			if raw[i] == ',' {
				i++
				continue
			}
			end, escaped := stringEnd(raw, i)
			name := raw[i+1 : max(end-1, i+1)]
			if escaped {
				name = gjson.Parse(raw[i:end]).Str
			}
			i = skipSpace(raw, end)
			i = skipSpace(raw, min(i+1, len(raw))) // past ':'
			vend := valueEnd(raw, i)
			for k, p := range paths {
				if p.name != name {
					continue
				}
				if seen[k] {
					return []string{p.name}
				}
				seen[k] = true
				if dup := duplicateName(raw[i:vend], p.next); dup != nil {
					return append([]string{p.name}, dup...)
				}
			}
			i = vend
		}
	}
	return nil
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the JSON string that starts at i,
// and whether it holds an escape.
func stringEnd(s string, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return len(s), escaped
}

// valueEnd returns the index just past the JSON value that starts at i,
// skipping nested objects and arrays without looking inside their strings.
func valueEnd(s string, i int) int {
	if i == len(s) {
		return i
	}
	switch s[i] {
	case '"':
		end, _ := stringEnd(s, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				end, _ := stringEnd(s, j)
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	}
	for j := i; j < len(s); j++ {
		switch s[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
	}
	return len(s)
}
