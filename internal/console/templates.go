package console

import (
	"fmt"
	"html/template"
	"strconv"
	"time"

	"github.com/hookgate/hookgate/internal/config"
)

// pageNames are the pages, each a template file executed inside
// layout.html; the events page also shows the dead list.
var pageNames = []string{"login", "error", "overview", "events", "event", "replay", "sources", "tail", "destination", "incidents", "reconcile"}

// funcs are the helpers the templates use. None returns template.HTML:
// everything a page shows is escaped by html/template.
var funcs = template.FuncMap{
	"when": when,
	// iso is a time as a <time> element's datetime.
	"iso":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"dur":     duration,
	"version": readVersion,
	// percent formats a share in [0, 1].
	"percent": func(f float64) string { return fmt.Sprintf("%.1f%%", f*100) },
	// ms formats milliseconds.
	"ms": func(f float64) string { return fmt.Sprintf("%.1f ms", f) },
	// msOf formats a duration in milliseconds.
	"msOf": func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) },
}

// when formats a time in UTC to the second; "" for the zero time.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// duration formats a duration as the configuration writes one, in whole
// days first and without zero units ("7d", "1d12h", "45m"), to the
// second when it is a second or more.
func duration(d time.Duration) string {
	if d >= time.Second || d <= -time.Second {
		d = d.Round(time.Second)
	}
	return config.Duration(d).String()
}

// version is an entity version as a page shows it: as a time when it is
// one (Unix seconds or milliseconds, or RFC 3339), with the raw value
// kept for its title.
type version struct {
	Raw string
	// Time is the version as a time, "" when it is not one; At is that
	// time.
	Time string
	At   time.Time
}

// Unix times that read as versions: from 2001 (10 digits of seconds, 13
// of milliseconds) until 2286.
const (
	minUnix = 1_000_000_000
	maxUnix = 9_999_999_999
)

// readVersion reads v as a time when it is one.
func readVersion(v string) version {
	out := version{Raw: v}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		switch {
		case n >= minUnix && n <= maxUnix:
			out.At = time.Unix(n, 0)
		case n >= minUnix*1000 && n <= maxUnix*1000+999:
			out.At = time.UnixMilli(n)
		}
	} else if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		out.At = t
	}
	if !out.At.IsZero() {
		out.Time = when(out.At)
	}
	return out
}

// parsePages parses every page with the layout.
func parsePages() (map[string]*template.Template, error) {
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}
