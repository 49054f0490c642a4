package spool

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/gob"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxpostgres "github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

func testItem(id string, digest string) inbox.Item {
	k := dedupe.Key{Tenant: "acme", Provider: "shop", EventID: id}
	it := inbox.Item{Event: inbox.Event{Hash: k.Hash(), Scope: k.Scope(), Source: "shop", Provider: "standard",
		Tenant: "acme", EventID: id, Payload: []byte(`{}`)}, Window: time.Hour}
	if digest != "" {
		it.Digest = dedupe.Key{Provider: "digest", EventID: digest}.Hash()
	}
	return it
}

// G1 with the spool: Put, whose outcomes are the 202, returns only once an
// fsync of the WAL covers its commit. Reopening the file cannot tell (the
// page cache keeps an unsynced commit); the count of commits no fsync
// covers can.
func TestPutIsDurable(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "spool.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, items := range [][]inbox.Item{{testItem("a", "")}, {testItem("b", "req"), testItem("c", "req")}, {testItem("a", "")}} {
		if _, err := s.Put(t.Context(), items); err != nil {
			t.Fatal(err)
		}
		if n := s.db.Unsynced(); n != 0 {
			t.Fatalf("put %d returned with %d commits no fsync covers", i, n)
		}
	}
}

// A spool file of the first schema (rows whose digest is only inside the
// encoded item, one Put's requests sharing one spooled_at) is migrated:
// its rows drain, each request whole, one request per digest in an
// Accept, and its digests answer replays.
func TestMigratesFirstSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "spool.db")
	db, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, "spool", steps[:1]); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixNano()
	old := []struct {
		it inbox.Item
		at int64
	}{
		// One Put: a guarded request of two events, and an unguarded one.
		{testItem("r1a", "body"), now}, {testItem("r1b", "body"), now}, {testItem("r2", ""), now},
		// A later Put: a replay of the first request, which the old spool
		// took as new.
		{testItem("r3", "body"), now + 1},
		{testItem("r4", "other"), now + 1},
	}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		for _, o := range old {
			var buf bytes.Buffer
			if err := gob.NewEncoder(&buf).Encode(o.it); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO spool (hash, item, spooled_at, expires) VALUES (?, ?, ?, ?)`,
				o.it.Event.Hash[:], buf.Bytes(), o.at, o.at+int64(time.Hour)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := inboxpostgres.Open(ctx, pgtest.New(t), inboxpostgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	outs, err := s.Put(ctx, []inbox.Item{testItem("r5", "body")})
	if err != nil || outs[0].Status != dedupe.Duplicate {
		t.Fatalf("a replay after the migration: %+v, %v; want duplicate", outs, err)
	}
	if d, err := s.Drain(ctx, in, 1); err != nil || d.Moved != 2 {
		t.Fatalf("first drain of 1: %+v, %v; want the first request's 2 events", d, err)
	}
	for range 10 {
		d, err := s.Drain(ctx, in, 500)
		if err != nil {
			t.Fatal(err)
		}
		if d.Empty() {
			break
		}
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Drained != 5 || st.Duplicates != 1 || st.Waiting != 0 {
		t.Fatalf("stats %+v, %v; want 5 drained, 1 duplicate (the replay r3)", st, err)
	}
	evs, err := in.List(context.Background(), inbox.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range evs {
		got[e.EventID] = true
	}
	if len(evs) != 4 || !got["r1a"] || !got["r1b"] || !got["r2"] || !got["r4"] {
		t.Fatalf("inbox holds %v, want r1a, r1b, r2, r4", got)
	}
}
