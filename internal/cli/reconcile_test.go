package cli_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxpostgres "github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/spool"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

func spoolItem(id string) inbox.Item {
	k := dedupe.Key{Tenant: "acme", Provider: "stripe", ObjectType: "event", Action: "any", EventID: id}
	return inbox.Item{Event: inbox.Event{Hash: k.Hash(), Scope: k.Scope(), Source: "stripe", Provider: "stripe",
		Tenant: "acme", EventID: id, Payload: []byte(`{}`)}, Window: 24 * time.Hour}
}

// reconcile reports a node's outage from its spool: five events spooled,
// three drained, one of which the database already held, one waiting, and
// one that cannot be decoded, quarantined and listed with its bytes.
func TestReconcile(t *testing.T) {
	t.Parallel()
	db, err := inboxpostgres.Open(t.Context(), pgtest.New(t), inboxpostgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Accept(t.Context(), []inbox.Item{spoolItem("evt_stored_before")}); err != nil {
		t.Fatal(err)
	}
	clock := dedupetest.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "spool.db")
	sp, err := spool.Open(t.Context(), path, spool.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"evt_a", "evt_damaged", "evt_stored_before", "evt_b", "evt_c"} {
		if _, err := sp.Put(t.Context(), []inbox.Item{spoolItem(id)}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
	}
	sp.Close()
	raw, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	damaged := spoolItem("evt_damaged").Event.Hash
	if _, err := raw.Exec(`UPDATE spool SET item = ? WHERE hash = ?`, []byte("\x00{\"id\":\"evt_damaged\"}\xff"), damaged[:]); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if sp, err = spool.Open(t.Context(), path, spool.Options{Now: clock.Now}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if d, err := sp.Drain(t.Context(), db, 4); err != nil || d.Moved != 3 || len(d.Quarantined) != 1 {
		t.Fatalf("drain: %+v, %v", d, err)
	}
	sp.Close()

	var out, errb bytes.Buffer
	if err := cli.Run(t.Context(), []string{"reconcile", "--spool", path}, nil, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	golden(t, "reconcile", strings.ReplaceAll(out.String(), path, "SPOOL"))

	out.Reset()
	if err := cli.Run(t.Context(), []string{"reconcile", "--spool", path, "--spool", path, "--json"}, nil, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var rep struct {
		Spools []struct {
			Spooled, Drained, Waiting, Quarantined int64
			Duplicates                             int64 `json:"duplicates_at_drain"`
			Rows                                   []struct {
				Seq   int64
				Bytes []byte
			} `json:"quarantined_rows"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rep.Spools) != 2 {
		t.Fatalf("%d spools reported, want 2", len(rep.Spools))
	}
	if r := rep.Spools[0]; r.Spooled != 5 || r.Drained != 3 || r.Duplicates != 1 || r.Waiting != 1 || r.Quarantined != 1 ||
		len(r.Rows) != 1 || string(r.Rows[0].Bytes) != "\x00{\"id\":\"evt_damaged\"}\xff" {
		t.Fatalf("report %+v, want 5 spooled, 3 drained, 1 duplicate, 1 waiting, 1 quarantined with its bytes", r)
	}

	missing := filepath.Join(t.TempDir(), "none.db")
	err = cli.Run(t.Context(), []string{"reconcile", "--spool", missing}, nil, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "no spool at") {
		t.Fatalf("a spool that is not there: %v, want an error", err)
	}
	if _, statErr := filepath.Glob(missing); statErr != nil {
		t.Fatal(statErr)
	}
}
