package pgtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/internal/pgtest"
)

func TestNewGivesAnEmptyDatabaseOfItsOwn(t *testing.T) {
	t.Parallel()
	a, b := pgtest.New(t), pgtest.New(t)
	if a == b {
		t.Fatalf("two tests share %s", a)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tables int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("new database has %d tables", tables)
	}
}

// A hung proxy accepts and holds connections without answering (a query
// runs into its context's deadline, it is not refused), and after Restore
// the server answers again on new connections.
func TestProxyHangs(t *testing.T) {
	t.Parallel()
	proxy, db := pgtest.NewProxy(t, pgtest.New(t))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	proxy.Hang()
	qctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := conn.Exec(qctx, "SELECT 1"); !errors.Is(err, context.DeadlineExceeded) && qctx.Err() == nil {
		t.Fatalf("a query while hung: %v, want it to run into its deadline", err)
	}
	proxy.Restore()
	again, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatalf("after Restore: %v", err)
	}
	defer again.Close(ctx)
	if _, err := again.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("a query after Restore: %v", err)
	}
}
