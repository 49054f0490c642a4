// Package cli implements the hookgate command: one file per subcommand,
// each parsing its own flags with the standard flag package.
package cli
