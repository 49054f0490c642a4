package cli_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/backend"
	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// TestEventsTailLateCommit: on PostgreSQL an event can commit after an
// event with a larger id; a tail that has printed the larger one still
// prints it.
func TestEventsTailLateCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.New(t)
	store, err := backend.Open(ctx, url, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	accept := func(id string) {
		t.Helper()
		k := dedupe.Key{Tenant: "acme", Provider: "shop", EventID: id}
		if _, err := store.Accept(ctx, []inbox.Item{{Window: time.Hour, Event: inbox.Event{
			Hash: k.Hash(), Scope: k.Scope(), Source: "shop", Provider: "standard", Tenant: "acme", EventID: id,
			Payload: []byte(`{}`)}}}); err != nil {
			t.Fatal(err)
		}
	}
	accept("first")

	tailCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r, w := io.Pipe()
	go func() {
		cli.Run(tailCtx, []string{"events", "tail", "--last", "1", "--interval", "5ms", "--database", url}, nil, w, io.Discard)
		w.Close()
	}()
	out := lines(r)
	if l := next(t, out); !strings.Contains(l, "  first  ") {
		t.Fatalf("first line %q", l)
	}

	// late takes its id in a transaction that stays open while early,
	// with a larger id, commits.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	k := dedupe.Key{Tenant: "acme", Provider: "shop", EventID: "late"}
	h := k.Hash()
	if _, err := tx.Exec(ctx, `INSERT INTO inbox_events (hash, scope, source, provider, tenant, event_id, event_type,
		entity_type, entity_id, entity_version, entity_order, entity_state, payload, headers, received_at)
		VALUES ($1, $2, 'shop', 'standard', 'acme', 'late', '', '', '', '', 0, '', '\x7b7d', '{}', now())`,
		h[:], k.Scope()); err != nil {
		t.Fatal(err)
	}
	accept("early")
	if l := next(t, out); !strings.Contains(l, "  early  ") {
		t.Fatalf("line %q, want early", l)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if l := next(t, out); !strings.Contains(l, "  late  ") {
		t.Errorf("line %q, want late", l)
	}
}
