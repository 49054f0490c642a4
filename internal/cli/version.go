package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

func init() {
	register("version", "print the version, the commit it was built from and the Go version", runVersion)
}

func runVersion(_ context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "version",
		text: `Print hookgate's module version, the commit it was built from (with
its time, and "modified" when the checkout had uncommitted changes) and
the Go version that built it. --version does the same.`,
		examples: []string{"version", "--version"},
	}, std)
	if err := fs.parse(args, false); err != nil {
		return err
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = &debug.BuildInfo{GoVersion: runtime.Version()}
	}
	_, err := io.WriteString(std.Stdout, versionText(info))
	return err
}

// versionText describes the build info: "hookgate VERSION", the commit
// and the Go version, one per line.
func versionText(info *debug.BuildInfo) string {
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	commit := settings["vcs.revision"]
	if commit == "" {
		commit = "unknown (built without version control information)"
	} else {
		var notes []string
		if t := settings["vcs.time"]; t != "" {
			notes = append(notes, t)
		}
		if settings["vcs.modified"] == "true" {
			notes = append(notes, "modified")
		}
		if len(notes) > 0 {
			commit += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	return fmt.Sprintf("hookgate %s\ncommit   %s\ngo       %s\n", version, commit, info.GoVersion)
}
