package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// IO is what a subcommand reads and writes.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

type command struct {
	summary string
	run     func(ctx context.Context, args []string, std IO) error
}

var commands = map[string]command{}

func register(name, summary string, run func(context.Context, []string, IO) error) {
	commands[name] = command{summary: summary, run: run}
}

// usageError is a mistake on the command line; it exits with code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// ExitCode maps an error from Run to a process exit code: 2 for a usage
// mistake, 1 otherwise.
func ExitCode(err error) int {
	var u *usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// Run runs the hookgate command line with args (without the program name).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	std := IO{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		usage(stderr)
		return usagef("unknown command %q", args[0])
	}
	err := cmd.run(ctx, args[1:], std)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func usage(w io.Writer) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("usage: hookgate <command> [flags]\n\ncommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-14s %s\n", n, commands[n].summary)
	}
	b.WriteString("\nRun 'hookgate <command> -h' for a command's flags.\n")
	io.WriteString(w, b.String())
}

// newFlags makes a FlagSet that reports errors instead of exiting.
func newFlags(name string, std IO) *flag.FlagSet {
	fs := flag.NewFlagSet("hookgate "+name, flag.ContinueOnError)
	fs.SetOutput(std.Stderr)
	return fs
}

// parse parses args and turns a flag mistake into a usage error. Positional
// arguments are refused unless positional is set.
func parse(fs *flag.FlagSet, args []string, positional bool) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{msg: err.Error()}
	}
	if !positional && fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}
