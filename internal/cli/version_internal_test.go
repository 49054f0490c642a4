package cli

import (
	"runtime/debug"
	"testing"
)

func TestVersionText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		stamped string
		info    debug.BuildInfo
		want    string
	}{
		{"release", "", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-30T12:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, "hookgate v1.4.0\ncommit   0123456789abcdef0123456789abcdef01234567 (2026-11-30T12:00:00Z)\ngo       go1.26.0\n"},
		{"checkout with changes", "", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-30T12:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		}}, "hookgate (devel)\ncommit   0123456789abcdef0123456789abcdef01234567 (2026-11-30T12:00:00Z, modified)\ngo       go1.26.0\n"},
		{"go run", "", debug.BuildInfo{GoVersion: "go1.26.0"},
			"hookgate (devel)\ncommit   unknown (built without version control information)\ngo       go1.26.0\n"},
		{"stamped release build of a checkout", "v1.5.0", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-30T12:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, "hookgate v1.5.0\ncommit   0123456789abcdef0123456789abcdef01234567 (2026-11-30T12:00:00Z)\ngo       go1.26.0\n"},
	} {
		if got := versionText(c.stamped, &c.info); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}
