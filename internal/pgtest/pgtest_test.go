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

// A test's database is gone soon after the test ends, though its cleanup
// does not wait for the drop; a Template's copies each hold what Build
// made, copied at once by tests running together.
func TestDatabasesAreDroppedAndTemplatesCopied(t *testing.T) {
	t.Parallel()
	tp := &pgtest.Template{Name: "pgtest_check", Key: "one table v1", Build: func(ctx context.Context, url string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `CREATE TABLE made_by_build (id int)`)
		return err
	}}
	var names [4]string
	t.Run("copies", func(t *testing.T) {
		for i := range names {
			t.Run("copy", func(t *testing.T) {
				t.Parallel()
				url := tp.New(t)
				conn, err := pgx.Connect(t.Context(), url)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(context.Background())
				if err := conn.QueryRow(t.Context(), `SELECT current_database() FROM made_by_build LIMIT 1`).Scan(new(string)); !errors.Is(err, pgx.ErrNoRows) {
					t.Fatalf("the copy lacks Build's table: %v", err)
				}
				if err := conn.QueryRow(t.Context(), `SELECT current_database()`).Scan(&names[i]); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
	admin, err := pgx.Connect(t.Context(), pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left int
		if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_database WHERE datname = ANY($1)`, names[:]).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the copies %v still there 30s after their tests ended", left, names)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
