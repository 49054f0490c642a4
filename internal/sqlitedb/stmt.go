package sqlitedb

import (
	"context"
	"database/sql"
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
