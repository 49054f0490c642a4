package sqlite

import (
	"context"
	"database/sql"
	"strconv"
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

// in returns the statement of query for use in tx. Its text must be
// constant, so that the cache stays bounded.
func (c *stmtCache) in(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
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

// eventsByID reads the events whose ids idList lists, in id order. The
// ids go as one JSON array, so the statement's text is the same for any
// number of them and is prepared once.
const eventsByID = `SELECT ` + columns + ` FROM events WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`

// idList is ids as a JSON array.
func idList(ids []int64) string {
	b := make([]byte, 0, 2+8*len(ids))
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}
