package doccheck_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/worker"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// wantExamples are the examples issue 21 asks for: one per provider preset
// but hmac, and one of several nodes.
var wantExamples = []string{
	"github.yaml", "hubspot.yaml", "nodes.yaml", "salesforce.yaml",
	"shippo.yaml", "shopify.yaml", "standard.yaml", "stripe.yaml",
}

func TestExamples(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		name := filepath.Base(p)
		names = append(names, name)
		t.Run(name, func(t *testing.T) {
			if err := checkFile(t, p); err != nil {
				t.Errorf("examples/%s: %v", name, err)
			}
		})
	}
	for _, want := range wantExamples {
		if !slices.Contains(names, want) {
			t.Errorf("examples/%s is missing", want)
		}
	}
}

func TestDocBlocks(t *testing.T) {
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		files = append(files, "docs/"+filepath.Base(d))
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := extract(f, data)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, b := range blocks {
			n++
			t.Run(fmt.Sprintf("%s:%d", path.Base(f), b.line), func(t *testing.T) {
				if err := checkBlock(t, b); err != nil {
					t.Errorf("%s:%d: %v", b.file, b.line, err)
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("no ```yaml block found in README.md or docs/*.md")
	}
}

// TestSchemas compiles every JSON Schema shipped, and keeps the copies of
// one schema in schemas/ (for the docs) and examples/schemas/ the same.
func TestSchemas(t *testing.T) {
	shipped := map[string][]byte{}
	for _, dir := range []string{"schemas", "examples/schemas"} {
		paths, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			name := dir + "/" + filepath.Base(p)
			if _, err := worker.CompileSchema(p); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if other, ok := shipped[filepath.Base(p)]; ok && !bytes.Equal(other, data) {
				t.Errorf("%s differs from schemas/%s: keep the copies the same", name, filepath.Base(p))
			}
			shipped[filepath.Base(p)] = data
		}
	}
}

// TestExtract checks the checker: the blocks and markers it finds, that a
// fragment is merged into a config that loads, and that a wrong block, a
// wrong marker and a marker without its block are errors.
func TestExtract(t *testing.T) {
	md := strings.Join([]string{
		"# Title", // 1
		"<!-- fragment: merged into a minimal config -->",
		"```yaml",
		"workers: 2",
		"```",
		"<!-- fragment: merged into a source of a minimal config -->",
		"```yaml",
		"    secret: [env:DOCCHECK_NEW, env:DOCCHECK_OLD]",
		"```",
		"<!-- not a config -->", // 10
		"```yaml",
		"services: {db: {image: postgres}}",
		"---",
		"kind: ConfigMap",
		"```",
		"```sh",
		"```yaml is not a fence inside another block",
		"```",
		"- a list item:",
		"  ```yml", // 20
		"  listen: 127.0.0.1:8081",
		"  ```",
		"",
	}, "\n")
	blocks, err := extract("x.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		line int
		kind blockKind
	}
	var gots []got
	for _, b := range blocks {
		gots = append(gots, got{b.line, b.kind})
		if err := checkBlock(t, b); err != nil {
			t.Errorf("x.md:%d: %v", b.line, err)
		}
	}
	want := []got{{3, fragment}, {7, sourceFragment}, {11, notConfig}, {20, whole}}
	if !slices.Equal(gots, want) {
		t.Errorf("blocks (line, kind) = %v, want %v", gots, want)
	}
	if want := "listen: 127.0.0.1:8081\n"; len(blocks) == 4 && blocks[3].text != want {
		t.Errorf("indented block's text = %q, want %q", blocks[3].text, want)
	}

	for _, bad := range []struct{ name, md string }{
		{"invalid block", "```yaml\nworkerz: 2\n```\n"},
		{"invalid fragment", "<!-- fragment: merged into a minimal config -->\n```yaml\nworkers: none\n```\n"},
		{"invalid source fragment", "<!-- fragment: merged into a source of a minimal config -->\n```yaml\n    provider: strpe\n```\n"},
		{"not YAML", "<!-- not a config -->\n```yaml\na: [b\n```\n"},
	} {
		blocks, err := extract(bad.name, []byte(bad.md))
		if err != nil || len(blocks) != 1 {
			t.Fatalf("%s: %d blocks, %v", bad.name, len(blocks), err)
		}
		if err := checkBlock(t, blocks[0]); err == nil {
			t.Errorf("%s: checked as valid", bad.name)
		}
	}
	for _, bad := range []struct{ name, md string }{
		{"unknown marker", "<!-- fragment -->\n```yaml\nworkers: 2\n```\n"},
		{"marker without a block", "<!-- not a config -->\ntext\n```yaml\nworkers: 2\n```\n"},
		{"marker before another language", "<!-- not a config -->\n```sh\nls\n```\n"},
		{"unclosed fence", "```yaml\nworkers: 2\n"},
	} {
		if _, err := extract(bad.name, []byte(bad.md)); err == nil {
			t.Errorf("%s: no error", bad.name)
		}
	}
}

// blockKind is how a ```yaml block is checked, as its marker says.
type blockKind int

const (
	whole          blockKind = iota // no marker: a whole configuration
	fragment                        // top-level keys over the minimal config
	sourceFragment                  // keys over the minimal config's source
	notConfig                       // YAML, but not a hookgate configuration
)

func (k blockKind) String() string {
	return [...]string{"whole", "fragment", "source fragment", "not a config"}[k]
}

// markers are the comments allowed on the line before a ```yaml fence.
var markers = map[string]blockKind{
	"<!-- fragment: merged into a minimal config -->":             fragment,
	"<!-- fragment: merged into a source of a minimal config -->": sourceFragment,
	"<!-- not a config -->":                                       notConfig,
}

// minimal is the configuration fragments are merged into.
const minimal = `sources:
  - name: demo
    provider: standard
    secret: env:HOOKGATE_DOCCHECK_SECRET
`

// block is one ```yaml block of a Markdown file.
type block struct {
	file string // slash-separated, from the repository's root
	line int    // the opening fence's line, from 1
	kind blockKind
	text string // without the fences and the fence's indentation
}

// fence matches an opening code fence: its indentation, backticks and
// language.
var fence = regexp.MustCompile("^([ \t]*)(```+)[ \t]*([^ \t`]*)")

// extract returns the ```yaml (or ```yml) blocks of the Markdown data,
// read from file, with their markers.
func extract(file string, data []byte) ([]block, error) {
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	var blocks []block
	used := map[int]bool{} // marker lines taken by a block
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, ticks, lang := m[1], m[2], m[3]
		end := i + 1
		for ; end < len(lines); end++ {
			if t := strings.TrimSpace(lines[end]); strings.HasPrefix(t, ticks) && strings.Trim(t, "`") == "" {
				break
			}
		}
		if end == len(lines) {
			return nil, fmt.Errorf("%s:%d: the %s fence is not closed", file, i+1, ticks+lang)
		}
		prev := ""
		if i > 0 {
			prev = strings.TrimSpace(lines[i-1])
		}
		kind, marked := markers[prev]
		switch {
		case lang != "yaml" && lang != "yml":
			if marked {
				return nil, fmt.Errorf("%s:%d: %s before a %s block: markers are for ```yaml blocks", file, i, prev, ticks+lang)
			}
		case strings.HasPrefix(prev, "<!--") && !marked:
			return nil, fmt.Errorf("%s:%d: unknown marker %s before a ```yaml block (want one of: %s)",
				file, i, prev, strings.Join(slices.Sorted(maps.Keys(markers)), ", "))
		default:
			if marked {
				used[i-1] = true
			}
			var text strings.Builder
			for _, l := range lines[i+1 : end] {
				text.WriteString(strings.TrimPrefix(l, indent))
				text.WriteByte('\n')
			}
			blocks = append(blocks, block{file: file, line: i + 1, kind: kind, text: text.String()})
		}
		i = end
	}
	for i, l := range lines {
		if _, ok := markers[strings.TrimSpace(l)]; ok && !used[i] {
			return nil, fmt.Errorf("%s:%d: %s is not on the line before a ```yaml fence", file, i+1, strings.TrimSpace(l))
		}
	}
	return blocks, nil
}

// checkBlock checks b as its marker says: a whole configuration or a
// fragment merged into the minimal one must pass check-config, checked as
// if saved at the repository's root; YAML that is not a configuration must
// parse.
func checkBlock(t *testing.T, b block) error {
	t.Helper()
	text := b.text
	switch b.kind {
	case notConfig:
		return parseYAML(text)
	case fragment, sourceFragment:
		merged, err := merge(minimal, text, b.kind == sourceFragment)
		if err != nil {
			return fmt.Errorf("%s: %w", b.kind, err)
		}
		text = merged
	}
	dir := t.TempDir()
	schemas := filepath.Join(root, "schemas")
	if _, err := os.Stat(schemas); err == nil {
		if err := os.CopyFS(filepath.Join(dir, "schemas"), os.DirFS(schemas)); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	p := filepath.Join(dir, "hookgate.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		return err
	}
	err := checkFile(t, p)
	switch {
	case err != nil && b.kind == whole:
		return fmt.Errorf("%w\n(line N of the block is line %d+N of %s)", err, b.line, b.file)
	case err != nil:
		return fmt.Errorf("%w\nas merged into the minimal config:\n%s", err, text)
	}
	return nil
}

// checkFile runs `hookgate check-config` on the configuration at path,
// with the secrets it names set, and compiles the schemas it names.
func checkFile(t *testing.T, path string) error {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	setSecrets(t, data)
	var stdout, stderr bytes.Buffer
	err = cli.Run(t.Context(), []string{"check-config", "--config", path}, strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		return fmt.Errorf("check-config: %w", err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	for _, s := range cfg.Sources {
		if s.Schema == "" {
			continue
		}
		if _, err := worker.CompileSchema(s.Schema); err != nil {
			return fmt.Errorf("source %s: %w", s.Name, err)
		}
	}
	return nil
}

// envRef finds the environment variables a configuration names.
var envRef = regexp.MustCompile(`env:([A-Za-z_][A-Za-z0-9_]*)`)

// setSecrets sets every variable named by an env: reference in data, for
// the test, to a value every secret field accepts: a Standard Webhooks key
// (whsec_ and base64 of 32 bytes) is also a token of 50 characters and a
// printable header value; a name ending in _URL (a Slack incoming
// webhook, say) gets an https URL. Each name gets its own value.
func setSecrets(t *testing.T, data []byte) {
	t.Helper()
	for _, m := range envRef.FindAllSubmatch(data, -1) {
		sum := sha256.Sum256(m[1])
		v := "whsec_" + base64.StdEncoding.EncodeToString(sum[:])
		if strings.HasSuffix(string(m[1]), "_URL") {
			v = "https://hooks.example.com/services/" + base64.RawURLEncoding.EncodeToString(sum[:])
		}
		t.Setenv(string(m[1]), v)
	}
}

// merge sets the keys of the YAML mapping frag over those of base, at its
// top level or, with intoSource, in its first source.
func merge(base, frag string, intoSource bool) (string, error) {
	var doc, f yaml.Node
	if err := yaml.Unmarshal([]byte(base), &doc); err != nil {
		return "", err
	}
	if err := yaml.Unmarshal([]byte(frag), &f); err != nil {
		return "", err
	}
	if f.Kind != yaml.DocumentNode || f.Content[0].Kind != yaml.MappingNode {
		return "", errors.New("want a mapping of keys")
	}
	dst := doc.Content[0]
	if intoSource {
		dst = value(dst, "sources").Content[0]
	}
	from := f.Content[0]
	for i := 0; i+1 < len(from.Content); i += 2 {
		k, v := from.Content[i], from.Content[i+1]
		if old := value(dst, k.Value); old != nil {
			*old = *v
		} else {
			dst.Content = append(dst.Content, k, v)
		}
	}
	out, err := yaml.Marshal(&doc)
	return string(out), err
}

// value returns the value of key in the mapping m, or nil.
func value(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// parseYAML reports whether text is YAML, of one or more documents.
func parseYAML(text string) error {
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var n yaml.Node
		switch err := dec.Decode(&n); {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
}
