package postgres

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// grownTables are the tables that grow with the events: the ones the
// statements of intake and processing read by their indexes.
var grownTables = []string{"inbox_events", "inbox_deliveries", "inbox_attempts", "inbox_keys",
	"inbox_digests", "inbox_entities", "inbox_order_keys", "inbox_duplicates"}

// analyzeEvery is how many events a node accepts between its looks at
// whether the tables outgrew their statistics.
const analyzeEvery = 1000

// analyzeFrom is the fewest rows a table has before the node analyzes it:
// below that a whole-table scan is as cheap as any plan.
const analyzeFrom = 1000

// analyzeLockWait bounds how long an ANALYZE waits for its lock, which
// autovacuum's own analyze of the table holds meanwhile.
const analyzeLockWait = 5 * time.Second

// outgrown selects, of the tables named in $1, those with at least $2
// live rows that were never analyzed or have had more rows inserted,
// updated and deleted since their last analyze than they had then, as a
// new database does in its first minutes. Once a table is large that
// comes far more rarely than autovacuum's own analyze (a tenth of its
// rows changed), which then keeps its statistics.
const outgrown = `SELECT c.oid::regclass::text FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid
	WHERE c.oid = ANY ($1::text[]::regclass[]) AND s.n_live_tup >= $2
	  AND (c.reltuples < 0 OR s.n_mod_since_analyze >= c.reltuples)
	ORDER BY 1`

// analyzer analyzes the tables that outgrew their statistics, sooner than
// autovacuum, which looks once a minute. A generic plan (which a prepared
// statement switches to after five runs) is made with the statistics of
// the moment and kept until the table is analyzed again; made on a new
// database's nearly empty tables, it scans whole tables, and as they grow
// to thousands of rows within the first minute, the lane lease, settle
// and the recording of attempts each took tens of milliseconds instead of
// a fraction of one. ANALYZE makes every session plan them again.
type analyzer struct {
	accepted atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	// cancel ends the look under way; nil when none runs.
	cancel context.CancelFunc
	closed bool
}

// analyzeFor bounds one look and its ANALYZE.
const analyzeFor = time.Minute

// noteAccepted counts n events accepted and, every analyzeEvery, starts
// a look at the tables unless one runs.
func (s *Store) noteAccepted(n int) {
	a := &s.analyze
	total := a.accepted.Add(int64(n))
	if total/analyzeEvery == (total-int64(n))/analyzeEvery {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.cancel != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), analyzeFor)
	a.cancel = cancel
	a.wg.Go(func() {
		defer func() {
			a.mu.Lock()
			a.cancel = nil
			a.mu.Unlock()
			cancel()
		}()
		if err := s.analyzeOutgrown(ctx); err != nil && ctx.Err() == nil && s.log != nil {
			s.log.Warn("analyzing the inbox tables", "err", err)
		}
	})
}

// analyzeOutgrown analyzes the grown tables that outgrew their statistics.
func (s *Store) analyzeOutgrown(ctx context.Context) error {
	rows, err := s.pool.Query(ctx, outgrown, grownTables, analyzeFrom)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) == 0 {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT set_config('lock_timeout', $1, true)", strconv.FormatInt(analyzeLockWait.Milliseconds(), 10)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "ANALYZE "+strings.Join(tables, ", "))
		return err
	})
}

// stop ends a look under way, waits for it, and starts no more.
func (a *analyzer) stop() {
	a.mu.Lock()
	a.closed = true
	if a.cancel != nil {
		a.cancel()
	}
	a.mu.Unlock()
	a.wg.Wait()
}
