package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML tags the checker looks at.
const (
	nullTag  = "!!null"
	intTag   = "!!int"
	mergeTag = "!!merge"
)

// decodeYAML reads data, one YAML document, over [Default]: what the file
// leaves out keeps its default, and an explicit zero ("max_body: 0") stays
// to fail validation. Before anything is decoded, every key and value is
// checked against the field it fills ([checker]), so that each mistake is
// a [*FieldError] with the path in the YAML, the line, the value and what
// is wanted, rather than the decoder's Go type names. Empty data gives
// Default and a nil root.
func decodeYAML(data []byte) (Config, *yaml.Node, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	switch err := dec.Decode(&root); {
	case errors.Is(err, io.EOF):
		return Default(), nil, nil
	case err != nil:
		return Config{}, nil, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Config{}, nil, fmt.Errorf("%w: more than one YAML document", ErrInvalid)
	}
	c := checker{done: map[checked]bool{}}
	c.check(&root, reflect.TypeFor[Config](), "")
	if len(c.errs) > 0 {
		return Config{}, nil, joinFieldErrors(c.errs, nil)
	}
	// The check leaves the decoder nothing to refuse; it stays strict in
	// case the two ever disagree.
	cfg := Default()
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&cfg); err != nil {
		return Config{}, nil, yamlError(err)
	}
	return cfg, &root, nil
}

// yamlError turns an error of the YAML parser ("yaml: line 3: mapping
// values are not allowed in this context") into a [*FieldError] in the
// style of the others.
func yamlError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%w:\n  %s", ErrInvalid, strings.Join(te.Errors, "\n  "))
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	fe := &FieldError{Err: errors.New("not valid YAML: " + msg)}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if line, err := strconv.Atoi(n); err == nil {
				fe.Line, fe.Err = line, errors.New("not valid YAML: "+after)
			}
		}
	}
	return fe
}

// nodeDecoder is a configuration type that reads itself from a YAML node
// (its UnmarshalYAML is decodeNode for the decoder). A bad value is a
// *FieldError whose Field is relative to the node: "" for the node itself,
// "[1]" for its second element.
type nodeDecoder interface {
	decodeNode(n *yaml.Node) *FieldError
}

// asTypeError hands a bad value to the decoder as a *yaml.TypeError, which
// it collects with the other errors of the document instead of stopping at
// it; nil gives nil.
func asTypeError(fe *FieldError) error {
	if fe == nil {
		return nil
	}
	return &yaml.TypeError{Errors: []string{fe.Error()}}
}

// checker finds what decoding a YAML node into a Go type would refuse
// (an unknown key, a key written twice, a word where a number belongs)
// and says it in the user's terms: the path in the YAML
// (sources[0].destinations[1].timeout), the value, what is wanted.
type checker struct {
	errs []*FieldError
	// done holds the nodes already checked as each type, so that a node
	// reached again through an alias or a merge key is checked once: its
	// mistakes are reported once, and aliases that refer to each other
	// cannot make the check loop or grow.
	done map[checked]bool
}

type checked struct {
	n *yaml.Node
	t reflect.Type
}

// check checks n as the value of a t at path.
func (c *checker) check(n *yaml.Node, t reflect.Type, path string) {
	n = unalias(n)
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) > 0 {
			c.check(n.Content[0], t, path)
		}
		return
	}
	if c.done[checked{n, t}] {
		return
	}
	c.done[checked{n, t}] = true
	// A null leaves the field as it is, as the decoder does.
	if n.ShortTag() == nullTag {
		return
	}
	if d, ok := reflect.New(t).Interface().(nodeDecoder); ok {
		if fe := d.decodeNode(n); fe != nil {
			fe.Field = path + fe.Field
			c.errs = append(c.errs, fe)
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		c.check(n, t.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			c.add(path, wrongKind(n, "a mapping"))
			return
		}
		keys, types := yamlKeys(t)
		c.entries(n, path, func(k, v *yaml.Node) {
			p := joinPath(path, k.Value)
			if k.Value == "" {
				p = joinPath(path, `""`)
			}
			ft, ok := types[k.Value]
			if !ok {
				// A key of a merged mapping is reported once, where
				// the mapping is written.
				if !c.done[checked{k, nil}] {
					c.done[checked{k, nil}] = true
					c.add(p, &FieldError{Line: k.Line, Err: unknownKey(k.Value, keys)})
				}
				return
			}
			c.check(v, ft, p)
		})
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			c.add(path, wrongKind(n, "a mapping"))
			return
		}
		c.entries(n, path, func(k, v *yaml.Node) {
			c.check(v, t.Elem(), joinPath(path, k.Value))
		})
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			c.add(path, wrongKind(n, "a list"))
			return
		}
		for i, e := range n.Content {
			c.check(e, t.Elem(), path+"["+strconv.Itoa(i)+"]")
		}
	default:
		if fe := checkScalar(n, t); fe != nil {
			c.add(path, fe)
		}
	}
}

// add records fe as the error of the field at path.
func (c *checker) add(path string, fe *FieldError) {
	fe.Field = path
	c.errs = append(c.errs, fe)
}

// entries calls fn for each key and value of the mapping n at path, then
// for those that its merge keys (<<) bring in and n does not set itself
// ([eachMerged]). A key written twice is an error, and one that is not
// text is too.
func (c *checker) entries(n *yaml.Node, path string, fn func(k, v *yaml.Node)) {
	first := map[string]int{}
	set := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := unalias(n.Content[i]), n.Content[i+1]
		switch {
		case k.ShortTag() == mergeTag:
		case k.Kind != yaml.ScalarNode:
			c.add(path, wrongKind(k, "text as the key"))
		case set[k.Value]:
			c.add(joinPath(path, k.Value), &FieldError{Line: k.Line,
				Err: fmt.Errorf("written twice (first on line %d): keep one", first[k.Value])})
		default:
			first[k.Value], set[k.Value] = k.Line, true
			fn(k, v)
		}
	}
	eachMerged(n, set, fn, func(m *yaml.Node) {
		c.add(path, &FieldError{Line: m.Line, Err: errors.New("<<: want a mapping or a list of mappings to merge")})
	})
}

// eachMerged calls fn for each key and value that the merge keys (<<) of
// the mapping n bring in and that set does not hold yet, adding them to
// set, in the decoder's order: the first merged mapping first, and within
// it its own keys before those of its merge keys. A merged value that is
// not a mapping goes to bad.
func eachMerged(n *yaml.Node, set map[string]bool, fn func(k, v *yaml.Node), bad func(m *yaml.Node)) {
	visited := map[*yaml.Node]bool{n: true}
	var merge func(n *yaml.Node)
	merge = func(n *yaml.Node) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].ShortTag() != mergeTag {
				continue
			}
			v := unalias(n.Content[i+1])
			ms := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				ms = ms[:0]
				for _, e := range v.Content {
					ms = append(ms, unalias(e))
				}
			}
			for _, m := range ms {
				if m.Kind != yaml.MappingNode {
					bad(m)
					continue
				}
				if visited[m] {
					continue
				}
				visited[m] = true
				for j := 0; j+1 < len(m.Content); j += 2 {
					k := unalias(m.Content[j])
					if k.Kind != yaml.ScalarNode || k.ShortTag() == mergeTag || set[k.Value] {
						continue
					}
					set[k.Value] = true
					fn(k, m.Content[j+1])
				}
				merge(m)
			}
		}
	}
	merge(n)
}

// unalias returns the node an alias (*name) refers to.
func unalias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// joinPath is path.key, or key at the top.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlKeys returns the keys a struct of type t takes, in field order, and
// the type of the field each fills, read from the yaml tags as the decoder
// reads them.
func yamlKeys(t reflect.Type) (keys []string, types map[string]reflect.Type) {
	types = map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if ft := f.Type; strings.Contains(","+opts+",", ",inline,") && ft.Kind() == reflect.Struct {
			inner, innerTypes := yamlKeys(ft)
			keys = append(keys, inner...)
			for k, v := range innerTypes {
				types[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		keys = append(keys, name)
		types[name] = f.Type
	}
	return keys, types
}

// unknownKey says that key is not one of known, suggesting the known key
// it is nearest to, or listing them all when none is near.
func unknownKey(key string, known []string) error {
	if near := nearestKeys(key, known); len(near) > 0 {
		return fmt.Errorf("unknown field; did you mean %s?", orList(near))
	}
	return fmt.Errorf("unknown field; want one of: %s", strings.Join(known, ", "))
}

// nearestKeys returns the known keys that key is probably a misspelling
// of: those at the smallest edit distance when it is small for the key's
// length (workerz: workers), ignoring case, '_' and '-' (maxAttempts:
// max_attempts); otherwise those that start with the key or that it starts
// with (retry: retry_initial, retry_max_delay; listen_addr: listen).
func nearestKeys(key string, known []string) []string {
	k := foldKey(key)
	var near []string
	best := 3
	for _, c := range known {
		d := editDistance(k, foldKey(c))
		if d > 2 || 2*d >= len(k) || d > best {
			continue
		}
		if d < best {
			best, near = d, near[:0]
		}
		near = append(near, c)
	}
	if len(near) > 0 || len(k) < 3 {
		return near
	}
	for _, c := range known {
		if f := foldKey(c); len(f) >= 3 && (strings.HasPrefix(f, k) || strings.HasPrefix(k, f)) {
			near = append(near, c)
		}
	}
	return near
}

// foldKey is key in lower case without '_' and '-'.
func foldKey(key string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, key)
}

// editDistance is the number of single-byte insertions, deletions,
// substitutions and swaps of neighbours that turn a into b (the optimal
// string alignment distance).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// wantScalar says what a field of kind k takes, or "" for a kind the
// checker leaves to the decoder.
func wantScalar(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return ""
}

// checkScalar checks n as the value of a field of the plain type t (text,
// a number, true or false) by decoding it as the decoder would, and more
// strictly for whole numbers: the decoder reads 1.5 as 1.
func checkScalar(n *yaml.Node, t reflect.Type) *FieldError {
	want := wantScalar(t.Kind())
	switch {
	case want == "":
		return nil
	case n.Kind != yaml.ScalarNode:
		return wrongKind(n, want)
	case t.Kind() == reflect.String:
		return nil
	}
	if fits(n, t) {
		return nil
	}
	fe := &FieldError{Line: n.Line, Err: fmt.Errorf("%s: want %s", quote(n.Value), want)}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		plain := yaml.Node{Kind: yaml.ScalarNode, Value: n.Value, Line: n.Line}
		if fits(&plain, t) {
			fe.Err = fmt.Errorf("%s: want %s, written without quotes", quote(n.Value), want)
		}
	}
	return fe
}

// fits reports whether the scalar n decodes as a t.
func fits(n *yaml.Node, t reflect.Type) bool {
	if want := wantScalar(t.Kind()); want == "a whole number" && n.ShortTag() != intTag {
		return false
	}
	return n.Decode(reflect.New(t).Interface()) == nil
}

// wrongKind is the error for n where want belongs: a word, a list or a
// mapping of the wrong kind.
func wrongKind(n *yaml.Node, want string) *FieldError {
	var err error
	switch n.Kind {
	case yaml.MappingNode:
		err = fmt.Errorf("want %s, not a mapping", want)
	case yaml.SequenceNode:
		err = fmt.Errorf("want %s, not a list", want)
	default:
		err = fmt.Errorf("%s: want %s", quote(n.Value), want)
	}
	return &FieldError{Line: n.Line, Err: err}
}

// quote is v quoted, shortened when it is long (a pasted certificate or
// document need not be repeated whole).
func quote(v string) string {
	if r := []rune(v); len(r) > 40 {
		v = string(r[:37]) + "..."
	}
	return strconv.Quote(v)
}
