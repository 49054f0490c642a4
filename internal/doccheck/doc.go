// Package doccheck holds no code, only the tests that keep the
// configurations a user copies valid: each file in examples/*.yaml and
// each ```yaml block of README.md and docs/*.md must pass
// `hookgate check-config`, and the JSON Schemas they name must compile.
//
// The secrets a configuration names as env:NAME are set to dummy values
// that every field accepts (a whsec_ key of 32 bytes, 50 characters). An
// example is checked where it is, so its schemas are examples/schemas/. A
// block of the docs is checked as if saved as hookgate.yaml at the
// repository's root, where README's commands run, so its schemas are the
// root's schemas/.
//
// A block that is not a whole configuration says so on the line before
// its fence, with one of these HTML comments (invisible when rendered):
//
//	<!-- fragment: merged into a minimal config -->
//	<!-- fragment: merged into a source of a minimal config -->
//	<!-- not a config -->
//
// A fragment's keys replace those of a minimal configuration (one
// Standard Webhooks source), at the top level or in its source, and the
// result is checked. A block that is not a hookgate configuration (a
// compose file, a manifest) must still parse as YAML. Any other comment
// on that line is an error, so a misspelt marker does not skip a block.
package doccheck
