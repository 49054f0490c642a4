package sqlitedb

import (
	"context"
	"database/sql"
	"iter"
	"strings"
	"sync"
)

// stmtCache holds statements prepared once on the database. A transaction
// takes one with tx.StmtContext, which reuses the statement already
// prepared on its connection: preparing the same text in every
// transaction cost more than running it.
type stmtCache struct {
	db *sql.DB

	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// Stmt returns the statement of query, prepared once on the database, for
// use in tx; the caller closes it when done. The text of query must come
// from a bounded set (a constant, or one of a few sizes), so that the cache
// stays bounded.
func (d *DB) Stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	c := &d.stmts
	c.mu.Lock()
	st := c.m[query]
	if st == nil {
		var err error
		if st, err = c.db.PrepareContext(ctx, query); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		if c.m == nil {
			c.m = map[string]*sql.Stmt{}
		}
		c.m[query] = st
	}
	c.mu.Unlock()
	return tx.StmtContext(ctx, st), nil
}

// close closes every cached statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// MaxRows is the most rows one multi-row statement carries.
const MaxRows = 256

// Sizes splits n rows into the row counts of the multi-row statements that
// carry them: as many of MaxRows as fit, then the powers of two that make
// up the rest, largest first. Every statement's text then comes from nine
// sizes (1, 2, 4, ..., 256) whatever the batches are, and [DB.Stmt]
// prepares each once; a batch of n rows costs at most one statement per
// bit of n.
func Sizes(n int) []int {
	var out []int
	for ; n >= MaxRows; n -= MaxRows {
		out = append(out, MaxRows)
	}
	for b := MaxRows / 2; b > 0; b >>= 1 {
		if n&b != 0 {
			out = append(out, b)
		}
	}
	return out
}

// Chunks yields rows in the chunks that [Sizes] splits them into, in
// order: one multi-row statement each.
func Chunks[T any](rows []T) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		rest := rows
		for _, n := range Sizes(len(rest)) {
			if !yield(rest[:n]) {
				return
			}
			rest = rest[n:]
		}
	}
}

// Rows returns n copies of the row placeholder tuple, comma-separated.
func Rows(tuple string, n int) string {
	var b strings.Builder
	b.Grow(n * (len(tuple) + 2))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tuple)
	}
	return b.String()
}

// EachRow runs query, through its statement prepared once ([DB.Stmt]), in tx
// with args, and hands each row to scan.
func (d *DB) EachRow(ctx context.Context, tx *sql.Tx, query string, args []any, scan func(*sql.Rows) error) error {
	st, err := d.Stmt(ctx, tx, query)
	if err != nil {
		return err
	}
	defer st.Close()
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
