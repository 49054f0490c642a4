package sqlitedb

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// TestWritePanicRollsBack: a panic in a write transaction's function
// rolls the transaction back on its way up, so that it neither commits
// what it wrote nor holds SQLite's write lock, on which every later
// write would wait out its busy timeout and fail.
func TestWritePanicRollsBack(t *testing.T) {
	t.Parallel()
	db := openTable(t)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the function's panic", r)
			}
		}()
		db.WriteLazy(context.Background(), func(tx *sql.Tx) error {
			if _, err := tx.Exec(`INSERT INTO t (v) VALUES (1)`); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), busyTimeoutMillis/2*time.Millisecond)
	defer cancel()
	if err := <-insertAsyncCtx(ctx, db, 2); err != nil {
		t.Fatalf("a write after a panicking one: %v", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows, %v; want only the later write's", n, err)
	}
}
