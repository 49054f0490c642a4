package cli_test

import (
	"bytes"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/cli"
)

// runHelp runs `hookgate args...` and returns stdout, failing the test
// when it errs or writes to stderr.
func runHelp(t *testing.T, args ...string) string {
	t.Helper()
	var out, stderr bytes.Buffer
	if err := cli.Run(t.Context(), args, nil, &out, &stderr); err != nil || stderr.Len() > 0 {
		t.Fatalf("hookgate %v: %v, stderr %q; want help on stdout and no error", args, err, stderr.String())
	}
	return out.String()
}

func TestHelpGolden(t *testing.T) {
	t.Parallel()
	golden(t, "help", runHelp(t, "help"))
	golden(t, "help-events", runHelp(t, "events", "--help"))
	golden(t, "help-events-list", runHelp(t, "help", "events", "list"))
}

// listed is the first word of the lines under heading in a help text: the
// commands of `hookgate help`, the subcommands of a group's.
func listed(help, heading string) []string {
	_, rest, _ := strings.Cut(help, "\n"+heading+":\n")
	block, _, _ := strings.Cut(rest, "\n\n")
	var names []string
	for line := range strings.Lines(block) {
		names = append(names, strings.Fields(line)[0])
	}
	return names
}

// TestHelpEveryCommand: every command and subcommand has a help text with
// its flags and an example, the same through help CMD, CMD --help and
// CMD -h, on stdout, with exit status 0.
func TestHelpEveryCommand(t *testing.T) {
	t.Parallel()
	top := runHelp(t)
	if runHelp(t, "help") != top || runHelp(t, "--help") != top || runHelp(t, "-h") != top {
		t.Error("hookgate, hookgate help, --help and -h differ")
	}
	commands := listed(top, "commands")
	if len(commands) < 8 {
		t.Fatalf("hookgate help lists %v", commands)
	}
	example := regexp.MustCompile(`\nexamples:\n  hookgate \S`)
	var all [][]string
	for _, c := range commands {
		all = append(all, []string{c})
		for _, sub := range listed(runHelp(t, c, "--help"), "subcommands") {
			all = append(all, []string{c, sub})
		}
	}
	for _, cmd := range all {
		name := strings.Join(cmd, " ")
		help := runHelp(t, append(cmd, "--help")...)
		if !strings.HasPrefix(help, "usage: hookgate "+name+" ") || !example.MatchString(help) {
			t.Errorf("hookgate %s --help:\n%s\nwant a usage line and an example", name, help)
		}
		if runHelp(t, append(cmd, "-h")...) != help || runHelp(t, append([]string{"help"}, cmd...)...) != help {
			t.Errorf("hookgate %s: --help, -h and help differ", name)
		}
	}
	if len(all) < len(commands)+4 {
		t.Errorf("commands and subcommands: %v", all)
	}
}

// TestUsageMistakes: an unknown command, subcommand or flag exits with
// status 2 and says what was wrong and where to look.
func TestUsageMistakes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"evnts"}, `unknown command "evnts" (run 'hookgate help' for the list)`},
		{[]string{"--bogus"}, `unknown flag --bogus (run 'hookgate help')`},
		{[]string{"help", "evnts"}, `help: unknown command "evnts" (run 'hookgate help' for the list)`},
		{[]string{"events"}, "events: want a subcommand: list, show, tail"},
		{[]string{"events", "lst"}, `events: unknown subcommand "lst" (want list, show, tail)`},
		{[]string{"events", "list", "--bogus"}, "events list: flag provided but not defined: -bogus (run 'hookgate events list --help')"},
		{[]string{"stats", "extra"}, `stats: unexpected argument "extra" (run 'hookgate stats --help')`},
		{[]string{"version", "--short"}, "version: flag provided but not defined: -short"},
	} {
		var out, stderr bytes.Buffer
		err := cli.Run(t.Context(), c.args, nil, &out, &stderr)
		if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), c.msg) || out.Len() > 0 {
			t.Errorf("hookgate %v: %v (stdout %q), want exit status 2 and %q", c.args, err, out.String(), c.msg)
		}
	}
}

// TestVersion: version and --version print the same, with the Go version
// that built the binary.
func TestVersion(t *testing.T) {
	t.Parallel()
	out := runHelp(t, "version")
	if runHelp(t, "--version") != out || !strings.HasPrefix(out, "hookgate ") ||
		!strings.Contains(out, "\ngo       "+runtime.Version()+"\n") || !strings.Contains(out, "\ncommit   ") {
		t.Errorf("hookgate version:\n%s", out)
	}
}
