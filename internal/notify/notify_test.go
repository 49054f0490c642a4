package notify_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hookgate/hookgate/internal/notify"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// kinds are the incident kinds hookgate opens, each with the counts its
// messages carry.
var kinds = []string{
	"destination.failing",
	"events.dead",
	"source.silent",
	"source.auth_failures",
	"processing.lag",
	"store.unavailable",
	"spool.waiting",
	"spool.quarantined",
}

var changes = []notify.Change{notify.Opened, notify.Reminder, notify.Resolved}

var (
	openedAt   = time.Date(2025, 3, 14, 10, 4, 5, 0, time.UTC)
	resolvedAt = openedAt.Add(2*time.Hour + 13*time.Minute + 20*time.Second)
)

// sample is a message of kind and change as the engine would send it.
func sample(kind string, change notify.Change) notify.Message {
	m := notify.Message{
		Type:       kind,
		Change:     change,
		Incident:   kind + "/2025-03-14T10:04:05Z",
		OpenedAt:   openedAt,
		ConsoleURL: "https://hookgate.example.com/ui/incidents/42",
	}
	resolved := change == notify.Resolved
	if resolved {
		at := resolvedAt
		m.ResolvedAt = &at
	}
	switch kind {
	case "destination.failing":
		m.Source, m.Destination = "shop", "crm"
		if resolved {
			m.Type = "destination.recovered"
			m.Counts = map[string]int64{"delivered_late": 1204, "dead": 3}
			break
		}
		m.Counts = map[string]int64{"failed_attempts": 12, "pending": 1204}
		m.LastError = "503 Service Unavailable"
		if change == notify.Reminder {
			m.Counts = map[string]int64{"failed_attempts": 57, "pending": 23811}
		}
	case "events.dead":
		m.Source, m.Destination = "shop", "crm"
		m.Counts = map[string]int64{"dead": 3}
		m.LastError = "422 Unprocessable Entity: unknown customer"
	case "source.silent":
		m.Source = "salesforce"
	case "source.auth_failures":
		m.Source = "stripe"
		m.Counts = map[string]int64{"refused": 57}
		m.LastError = "signature does not match"
	case "processing.lag":
		m.Source = "hubspot"
		m.Counts = map[string]int64{"pending": 48210, "lag_seconds": 754}
	case "store.unavailable":
		m.LastError = "dial tcp db.internal:5432: connect: connection refused"
	case "spool.waiting":
		m.Counts = map[string]int64{"waiting": 1204}
	case "spool.quarantined":
		m.Counts = map[string]int64{"quarantined": 1}
		m.LastError = "decode spooled event: unexpected EOF"
	}
	if resolved {
		m.LastError = ""
	}
	_, m.Summary = notify.Text(m)
	return m
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(name))
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("got:\n%s\nwant (%s):\n%s", got, path, want)
	}
}
