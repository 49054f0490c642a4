package postgres

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// openMigrated opens a Store on a new migrated database, closed when the
// test ends.
func openMigrated(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), Migrated.New(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestAcceptPlan: Accept finds what made an item a duplicate by index,
// whatever the planner thinks of the tables' sizes; a join there was
// planned as a scan of the whole key table, which holds every key of the
// window.
func TestAcceptPlan(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openMigrated(t)
	items := make([]inbox.Item, 100)
	for i := range items {
		k := dedupe.Key{Tenant: "acme", Provider: "shop", EventID: fmt.Sprint(i)}
		items[i] = inbox.Item{Event: inbox.Event{Hash: k.Hash(), Scope: k.Scope(), Source: "shop", EventID: k.EventID}, Window: time.Hour}
		if i%2 == 0 {
			items[i].Digest = dedupe.Key{Provider: "digest", EventID: k.EventID}.Hash()
		}
	}
	if _, err := s.Accept(ctx, items); err != nil {
		t.Fatal(err)
	}
	args, err := s.acceptArgs(items)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.pool.Query(ctx, "EXPLAIN "+acceptQuery, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	for _, table := range []string{"inbox_keys", "inbox_digests"} {
		if strings.Contains(text, "Seq Scan on "+table) || !strings.Contains(text, "Index Scan using "+table+"_pkey") {
			t.Errorf("Accept reads %s without its index:\n%s", table, text)
		}
	}
}

// planFill is a database of some size: 100k events, 1% received and 1%
// delivering, each with a delivery and an attempt, all but the received
// applied; 100k keys and digests; 25k entities and 25k order keys. ANALYZE tells the planner
// so. Each table is filled by one INSERT ... SELECT.
const planFill = `
INSERT INTO inbox_keys SELECT substring(sha256(int8send(g)) from 1 for 16), now(), now() + interval '1 hour'
	FROM generate_series(1, 100000) g;
INSERT INTO inbox_digests SELECT substring(sha256(int8send(-g)) from 1 for 16), now(), now() + interval '1 hour'
	FROM generate_series(1, 100000) g;
INSERT INTO inbox_events (hash, scope, source, provider, tenant, event_id, event_type, entity_type, entity_id,
	entity_version, entity_order, entity_state, payload, headers, received_at, status, processed_at, apply_outcome)
SELECT substring(sha256(int8send(g)) from 1 for 16), 's', 'shop', 'p', 't', g::text, '', 'charge', 'ch_' || (g % 25000),
	'', g, 'paid', '\x00', '{}', now(),
	CASE g % 100 WHEN 0 THEN 'received' WHEN 1 THEN 'delivering' WHEN 2 THEN 'dead' ELSE 'processed' END, now(),
	CASE g % 100 WHEN 0 THEN '' ELSE 'applied' END
FROM generate_series(1, 100000) g;
INSERT INTO inbox_deliveries (event_id, destination, source, status)
	SELECT id, 'app', 'shop', CASE WHEN status = 'delivering' THEN 'pending' ELSE 'delivered' END FROM inbox_events;
INSERT INTO inbox_attempts (event_id, destination, at, duration, code, error, body)
	SELECT id, 'app', now(), 1, 200, '', '' FROM inbox_events;
INSERT INTO inbox_entities SELECT 't', 'charge', 'ch_' || g, '', g, 'paid', g, now() FROM generate_series(1, 25000) g;
INSERT INTO inbox_order_keys (source, destination, key, seq) SELECT 'shop', 'app', 'k' || g, 1 FROM generate_series(1, 25000) g;
ANALYZE;`

// TestPlans reads the plans of the statements on a database of some size
// (planFill), filled once for all its cases: filling it is most of their
// time (20 s of a busy 2-core machine's).
func TestPlans(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := Migrated.New(t)
	s, err := Open(ctx, url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.pool.Exec(ctx, planFill)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Each opens a Store of its own, so that a session setting of one
	// (testGenericPlans's plan_cache_mode) cannot reach the other.
	t.Run("List", func(t *testing.T) {
		t.Parallel()
		testListPlans(t, url)
	})
	t.Run("Generic", func(t *testing.T) {
		t.Parallel()
		testGenericPlans(t, url)
	})
}

// settleByID matches a plan that finds the events it settles by id.
var settleByID = regexp.MustCompile(`on inbox_events e .*\n\s+Index Cond: [^\n]*\(id = `)

// checkSettlePlan: settle finds the events it settles by id and
// aggregates their deliveries once. A walk of the delivering events by a
// status index that ran the aggregate again for each took 100 ms a
// settle with thousands in flight.
func checkSettlePlan(t *testing.T, plan string) {
	t.Helper()
	if !settleByID.MatchString(plan) {
		t.Errorf("settle walks the delivering events instead of finding those it settles by id:\n%s", plan)
	}
	if !strings.Contains(plan, "CTE agg") {
		t.Errorf("settle may aggregate the deliveries again for each event:\n%s", plan)
	}
}

// explainGeneric prepares query on c as plan<suffix> and returns the
// EXPLAIN of its execution with args, which is the generic plan when the
// session forces those.
func explainGeneric(t *testing.T, c *pgx.Conn, suffix, name, query, args string) string {
	t.Helper()
	ctx := t.Context()
	if _, err := c.Exec(ctx, fmt.Sprintf("PREPARE plan%s AS %s", suffix, query)); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	execute := "EXPLAIN EXECUTE plan" + suffix
	if args != "" {
		execute += "(" + args + ")"
	}
	rows, err := c.Query(ctx, execute)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return strings.Join(lines, "\n")
}

// TestSettlePlan: settle finds its events by id also when the planner
// was last told, by an ANALYZE at a quiet moment, that no event is
// delivering, and thousands are: the statistics of a database that sat
// idle, or just had millions of old rows loaded, before a burst.
func TestSettlePlan(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openMigrated(t)
	fill := func(from, to int, status, delivery string) string {
		return fmt.Sprintf(`INSERT INTO inbox_events (hash, scope, source, provider, tenant, event_id, event_type, entity_type,
	entity_id, entity_version, entity_order, entity_state, payload, headers, received_at, status, processed_at)
SELECT substring(sha256(int8send(g)) from 1 for 16), 's', 'shop', 'p', 't', g::text, '', '', '', '', g, '', '\x00', '{}',
	now(), '%[3]s', now() FROM generate_series(%[1]d, %[2]d) g;
INSERT INTO inbox_deliveries (event_id, destination, source, status)
	SELECT id, 'app', 'shop', '%[4]s' FROM inbox_events WHERE event_id::bigint BETWEEN %[1]d AND %[2]d;`, from, to, status, delivery)
	}
	if _, err := s.pool.Exec(ctx, fill(1, 20000, "processed", "delivered")+"ANALYZE;"+fill(20001, 23000, "delivering", "pending")); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	checkSettlePlan(t, explainGeneric(t, conn.Conn(), "", "settle", settleQuery, "NULL::timestamptz, ARRAY[20005, 20006]::bigint[]"))
}

// testGenericPlans: the statements run on a database of some size read
// the big tables through their indexes, also in the generic plan that a
// prepared statement switches to after a few runs (pgx prepares every
// statement), where the planner does not see the arguments. The lane
// lease updates the deliveries it locked by their ctid, which no size
// of the table makes a scan of it.
func testGenericPlans(t *testing.T, url string) {
	ctx := t.Context()
	s, err := Open(ctx, url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	c := conn.Conn()
	if _, err := c.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	replay, _ := replayPick(inbox.ReplayFilter{Dead: true}, 100)
	const (
		now  = "NULL::timestamptz"
		none = "ARRAY['-infinity'::timestamptz]"
	)
	statements := []struct{ name, query, args string }{
		{"accept", acceptQuery, now + `, ARRAY['\x0102030405060708090a0b0c0d0e0f10'::bytea], ARRAY[1]::bigint[],
			ARRAY[''::bytea], ARRAY['s'], ARRAY['shop'], ARRAY['p'], ARRAY['t'], ARRAY['e'], ARRAY[''], ARRAY[''],
			ARRAY[''], ARRAY[''], ARRAY[1]::bigint[], ARRAY[''], ARRAY[''::bytea], ARRAY['{}'::json], 'holder'`},
		{"lease", leaseQuery, now + ", 'w', 1000, 10"},
		{"finish", finishQuery, now + ", 'w', ARRAY[5]::bigint[], ARRAY['processed'], " + none + ", ARRAY['']"},
		{"finish and record", finishApplyQuery, now + ", 'w', ARRAY[5]::bigint[], ARRAY['processed'], " + none + `, ARRAY[''],
			ARRAY[5]::bigint[], ARRAY['none'], ARRAY[''], ARRAY[''], ARRAY[false], ARRAY[false]`},
		{"open deliveries", openDeliveries, "ARRAY[5]::bigint[], ARRAY['app'], ARRAY['']"},
		{"open keys", openKeysQuery, "ARRAY[5]::bigint[], ARRAY['app'], ARRAY['k']"},
		{"unblock keys", unblockKeys, "ARRAY[5]::bigint[], ARRAY['app'], ARRAY['k']"},
		{"settle", settleQuery, now + ", ARRAY[5, 6]::bigint[]"},
		{"record", recordQuery, now + ", ARRAY[5]::bigint[], ARRAY['app'], " + none + `, ARRAY[1]::bigint[], ARRAY[200],
			ARRAY[''], ARRAY[''], ARRAY['delivered'], 'w', ` + none},
		{"lane lease", laneLease, now + ", 'shop', 'app', 'w', 1000, 10"},
		{"ordered heads", orderedHeads, now + ", 'shop', 'app', 10"},
		{"lease heads", leaseHeads, now + ", 'shop', 'app', ARRAY[5]::bigint[], ARRAY['k'], 'w', 1000"},
		{"release keys", releaseKeys, "ARRAY[5]::bigint[], ARRAY['app'], ARRAY['shop'], ARRAY['k'], ARRAY[0], ARRAY[0]::bigint[], 'w'"},
		{"entities", headsQuery, "ARRAY['t'], ARRAY['charge'], ARRAY['ch_1']"},
		{"apply records", recordsQuery, "ARRAY[5]::bigint[], ARRAY['none'], ARRAY[''], ARRAY[''], ARRAY[false], ARRAY[false]"},
		{"replay dead", replay, now + ", 0, 100, 'dead'"},
		{"sweep events", sweepEventsQuery, "now(), 1000"},
		{"sweep keys", sweepExpiredQuery("inbox_keys", "hash"), now + ", 1000"},
		{"sweep digests", sweepExpiredQuery("inbox_digests", "digest"), now + ", 1000"},
		{"stats oldest", oldestQuery, ""},
		{"stats lanes", pendingDeliveriesQuery, ""},
		{"stats blocked keys", blockedKeysQuery, ""},
	}
	scan := regexp.MustCompile(`Seq Scan on inbox_(events|keys|digests|deliveries|attempts|entities|order_keys)\b`)
	for i, st := range statements {
		text := explainGeneric(t, c, fmt.Sprint(i), st.name, st.query, st.args)
		if scan.MatchString(text) {
			t.Errorf("%s scans a whole table in its generic plan:\n%s", st.name, text)
		}
		if st.name == "settle" {
			checkSettlePlan(t, text)
		}
		if st.name == "lane lease" && !strings.Contains(text, "Tid Scan on inbox_deliveries d") {
			t.Errorf("the lane lease finds the deliveries it updates otherwise than by their ctid:\n%s", text)
		}
	}
}
