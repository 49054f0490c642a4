package cli_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// opsDB is an inbox file that the operator commands (replay, dead, sweep,
// stats) run on, filled through the inbox with a clock the test moves.
type opsDB struct {
	t     testing.TB
	path  string
	store *sqlite.Store
	clock *dedupetest.Clock
}

// newOpsDB opens a new inbox file whose clock starts at start.
func newOpsDB(t testing.TB, start time.Time) *opsDB {
	t.Helper()
	d := &opsDB{t: t, path: filepath.Join(t.TempDir(), "hookgate.db"), clock: dedupetest.NewClock(start)}
	s, err := sqlite.Open(d.path, sqlite.Options{Now: d.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	d.store = s
	return d
}

// accept stores one event per id of source and tenant, with a one-hour
// dedupe window, and returns the ids of the new ones.
func (d *opsDB) accept(source, tenant string, ids ...string) []int64 {
	d.t.Helper()
	return d.acceptWindow(time.Hour, source, tenant, ids...)
}

func (d *opsDB) acceptWindow(window time.Duration, source, tenant string, ids ...string) []int64 {
	d.t.Helper()
	items := make([]inbox.Item, len(ids))
	for i, id := range ids {
		k := dedupe.Key{Tenant: tenant, Provider: source, ObjectType: "charge", EventID: id}
		items[i] = inbox.Item{Window: window, Event: inbox.Event{
			Hash: k.Hash(), Scope: k.Scope(), Source: source, Provider: "stripe", Tenant: tenant, EventID: id,
			Payload: []byte(`{"id":"` + id + `"}`),
		}}
	}
	out, err := d.store.Accept(d.t.Context(), items)
	if err != nil {
		d.t.Fatal(err)
	}
	var got []int64
	for _, o := range out {
		if o.Status == dedupe.New {
			got = append(got, o.ID)
		}
	}
	return got
}

// finish leases every due event and finishes ids with status and reason;
// the clock then moves on by a millisecond, past the other events' lease.
func (d *opsDB) finish(status inbox.Status, reason string, ids ...int64) {
	d.t.Helper()
	defer d.clock.Advance(time.Millisecond)
	if _, err := d.store.Lease(d.t.Context(), "test", 1000, time.Nanosecond); err != nil {
		d.t.Fatal(err)
	}
	results := make([]inbox.Result, len(ids))
	for i, id := range ids {
		results[i] = inbox.Result{ID: id, Status: status, Error: reason}
	}
	if err := d.store.Finish(d.t.Context(), "test", results); err != nil {
		d.t.Fatal(err)
	}
}

// status returns an event's status.
func (d *opsDB) status(id int64) inbox.Status {
	d.t.Helper()
	e, err := d.store.Get(d.t.Context(), id)
	if err != nil {
		d.t.Fatal(err)
	}
	return e.Status
}

// runTo runs `hookgate args... --database sqlite:FILE` writing to stdout.
func (d *opsDB) runTo(stdout *os.File, args ...string) (stderr string, err error) {
	d.t.Helper()
	var errb bytes.Buffer
	err = cli.Run(d.t.Context(), append(args, "--database", "sqlite:"+d.path), nil, stdout, &errb)
	return errb.String(), err
}

// run runs `hookgate args... --database sqlite:FILE` and returns what it
// printed.
func (d *opsDB) run(args ...string) (stdout, stderr string, err error) {
	d.t.Helper()
	var out, errb bytes.Buffer
	err = cli.Run(d.t.Context(), append(args, "--database", "sqlite:"+d.path), nil, &out, &errb)
	return out.String(), errb.String(), err
}

// mustRun is run that fails the test on an error.
func (d *opsDB) mustRun(args ...string) string {
	d.t.Helper()
	out, stderr, err := d.run(args...)
	if err != nil {
		d.t.Fatalf("hookgate %v: %v\n%s", args, err, stderr)
	}
	return out
}

// golden compares got with testdata/NAME/stdout.golden, rewriting the file
// under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name, "stdout.golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("output:\n%s\nwant (%s):\n%s", got, path, want)
	}
}
