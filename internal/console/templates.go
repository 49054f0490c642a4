package console

import (
	"fmt"
	"html/template"
	"time"
)

// pageNames are the pages, each a template file executed inside
// layout.html; the events page also shows the dead list.
var pageNames = []string{"login", "error", "overview", "events", "event", "replay", "sources", "tail"}

// funcs are the helpers the templates use. None returns template.HTML:
// everything a page shows is escaped by html/template.
var funcs = template.FuncMap{
	"when": when,
	// percent formats a share in [0, 1].
	"percent": func(f float64) string { return fmt.Sprintf("%.1f%%", f*100) },
	// ms formats milliseconds.
	"ms": func(f float64) string { return fmt.Sprintf("%.1f ms", f) },
}

// when formats a time in UTC to the second; "" for the zero time.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
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
