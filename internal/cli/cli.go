package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
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

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "-help" }

// Run runs the hookgate command line with args (without the program name).
// Help goes to stdout and is no error; a mistake on the command line is a
// usage error (ExitCode 2).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	std := IO{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	if len(args) == 0 || isHelp(args[0]) {
		return usage(stdout)
	}
	switch args[0] {
	case "help":
		if len(args) == 1 {
			return usage(stdout)
		}
		if _, ok := commands[args[1]]; !ok {
			return usagef("help: unknown command %q (run 'hookgate help' for the list)", args[1])
		}
		args = append(slices.Clone(args[1:]), "--help")
	case "--version", "-version":
		args = []string{"version"}
	}
	cmd, ok := commands[args[0]]
	if !ok {
		if strings.HasPrefix(args[0], "-") {
			return usagef("unknown flag %s (run 'hookgate help')", args[0])
		}
		return usagef("unknown command %q (run 'hookgate help' for the list)", args[0])
	}
	err := cmd.run(ctx, args[1:], std)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// usage prints the list of commands.
func usage(w io.Writer) error {
	var b strings.Builder
	b.WriteString("hookgate turns at-least-once webhook deliveries into an exactly-once stream.\n\n")
	b.WriteString("usage: hookgate COMMAND [flags]\n\ncommands:\n")
	for _, n := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(&b, "  %-14s %s\n", n, commands[n].summary)
	}
	b.WriteString(`
Run 'hookgate help COMMAND' (or 'hookgate COMMAND --help') for a command's
flags and examples, 'hookgate --version' for the version.

examples:
  hookgate serve --config hookgate.yaml
  hookgate events list --since 2h --status dead
  hookgate events tail --source stripe
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// doc describes a command for its --help.
type doc struct {
	// name is the command as typed: "events list".
	name string
	// args follows the name in the synopsis: "ID|EVENT-ID|KEY [flags]".
	args string
	// text says what the command does.
	text string
	// examples are command lines, without the leading "hookgate ".
	examples []string
}

// write prints the help of a command whose flags are fs.
func (d doc) write(w io.Writer, fs *flag.FlagSet) error {
	var b strings.Builder
	args := d.args
	if args == "" {
		args = "[flags]"
	}
	fmt.Fprintf(&b, "usage: hookgate %s %s\n\n%s\n", d.name, args, strings.TrimSpace(d.text))
	if fs != nil {
		first := true
		fs.VisitAll(func(f *flag.Flag) {
			if first {
				b.WriteString("\nflags:\n")
				first = false
			}
			value, text := flag.UnquoteUsage(f)
			dash := "--"
			if len(f.Name) == 1 {
				dash = "-"
			}
			fmt.Fprintf(&b, "  %s%s", dash, f.Name)
			if value != "" {
				fmt.Fprintf(&b, " %s", value)
			}
			fmt.Fprintf(&b, "\n        %s", text)
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
				fmt.Fprintf(&b, " (default %s)", f.DefValue)
			}
			b.WriteString("\n")
		})
	}
	if len(d.examples) > 0 {
		b.WriteString("\nexamples:\n")
		for _, e := range d.examples {
			fmt.Fprintf(&b, "  hookgate %s\n", e)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// flags is a command's flag set with its help.
type flags struct {
	*flag.FlagSet
	doc doc
	std IO
}

// newFlags makes the flag set of a command: it reports mistakes as usage
// errors instead of exiting, and prints d with the flags on stdout for
// -h and --help.
func newFlags(d doc, std IO) *flags {
	fs := flag.NewFlagSet("hookgate "+d.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flags{FlagSet: fs, doc: d, std: std}
}

// parse parses args and turns a flag mistake into a usage error. Positional
// arguments are refused unless positional is set. For -h or --help it
// prints the help and returns flag.ErrHelp.
func (f *flags) parse(args []string, positional bool) error {
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if err := f.doc.write(f.std.Stdout, f.FlagSet); err != nil {
				return err
			}
			return flag.ErrHelp
		}
		return usagef("%s: %v (run 'hookgate %s --help')", f.doc.name, err, f.doc.name)
	}
	if !positional && f.NArg() > 0 {
		return usagef("%s: unexpected argument %q (run 'hookgate %s --help')", f.doc.name, f.Arg(0), f.doc.name)
	}
	return nil
}

// subcommand is one command of a group (events list, dead list).
type subcommand struct {
	name, summary string
	run           func(context.Context, []string, IO) error
}

// runGroup runs the subcommand args[0] of the group d names; with no
// subcommand, or -h or --help, it prints the group's help.
func runGroup(ctx context.Context, d doc, subs []subcommand, args []string, std IO) error {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(d.text) + "\n\nsubcommands:\n")
	names := make([]string, len(subs))
	for i, s := range subs {
		fmt.Fprintf(&b, "  %-8s %s\n", s.name, s.summary)
		names[i] = s.name
	}
	fmt.Fprintf(&b, "\nRun 'hookgate %s SUBCOMMAND --help' for its flags.", d.name)
	help := doc{name: d.name, args: "SUBCOMMAND [flags]", text: b.String(), examples: d.examples}
	if len(args) == 0 || !isHelp(args[0]) && strings.HasPrefix(args[0], "-") {
		help.write(std.Stderr, nil)
		return usagef("%s: want a subcommand: %s", d.name, strings.Join(names, ", "))
	}
	if isHelp(args[0]) {
		if err := help.write(std.Stdout, nil); err != nil {
			return err
		}
		return flag.ErrHelp
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, args[1:], std)
		}
	}
	return usagef("%s: unknown subcommand %q (want %s)", d.name, args[0], strings.Join(names, ", "))
}
