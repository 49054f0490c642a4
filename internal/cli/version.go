package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the release a build was stamped with:
//
//	go build -ldflags "-X github.com/hookgate/hookgate/internal/cli.version=v1.2.0" ./cmd/hookgate
//
// Release builds made from a checkout (an image, a tarball) set it; empty,
// the module version in the build info says it instead, which is what
// `go install github.com/hookgate/hookgate/cmd/hookgate@v1.2.0` records.
var version string

func init() {
	register("version", "print the version, the commit it was built from and the Go version", runVersion)
}

func runVersion(_ context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "version",
		text: `Print hookgate's version (the release it was stamped with, else its
module version: v1.2.0 for 'go install …@v1.2.0', "(devel)" for a build
of a checkout), the commit it was built from (with its time, and
"modified" when the checkout had uncommitted changes) and the Go version
that built it. --version does the same.`,
		examples: []string{"version", "--version"},
	}, std)
	if err := fs.parse(args, false); err != nil {
		return err
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = &debug.BuildInfo{GoVersion: runtime.Version()}
	}
	_, err := io.WriteString(std.Stdout, versionText(version, info))
	return err
}

// versionText describes a build stamped with the version stamped ("" for
// none) whose build info is info: "hookgate VERSION", the commit and the
// Go version, one per line.
func versionText(stamped string, info *debug.BuildInfo) string {
	shown := stamped
	if shown == "" {
		shown = info.Main.Version
	}
	if shown == "" {
		shown = "(devel)"
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
	return fmt.Sprintf("hookgate %s\ncommit   %s\ngo       %s\n", shown, commit, info.GoVersion)
}
