package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// acceptQuery accepts a whole batch in one statement, autocommitted: the
// items come in as arrays ($2..$17), one element per item.
//
// kept keeps the replay guard digests that are absent or expired; claimed
// takes the keys that are absent or expired, of the items without a digest
// or whose digest kept just wrote; stored inserts the events of the keys
// claimed; counted adds the batch's intake counts to this session's shard;
// notified wakes the watching nodes (Watch) once when the batch stored
// anything, delivered by the database when the statement commits; its
// payload, $18, is the Store's holder name.
// The unique keys of inbox_digests and inbox_keys are the arbiters across
// nodes: a copy that another session is inserting waits on the index, and
// once that session commits it is a conflict, not returned, so it is a
// duplicate. Keys and digests are inserted in byte order, so two batches
// that share keys take them in the same order and cannot deadlock.
//
// The final SELECT reports each item in batch order. For a duplicate it
// looks up, by index, the digest (a replay) or the key that made it one;
// those reads see the statement's snapshot, which holds that row unless a
// session that raced this one committed it, and Accept reads those few
// again. The lookup is a LATERAL subquery with LIMIT, which the planner
// keeps per item: a join would let it scan the whole key table.
const acceptQuery = `WITH input AS (
	SELECT * FROM unnest($2::bytea[], $3::bigint[], $4::bytea[], $5::text[], $6::text[], $7::text[],
		$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bigint[],
		$15::text[], $16::bytea[], $17::json[]) WITH ORDINALITY
	AS i(hash, window_us, digest, scope, source, provider, tenant, event_id, event_type, entity_type,
		entity_id, entity_version, entity_order, entity_state, payload, headers, ord)
), clock AS (
	SELECT coalesce($1::timestamptz, now()) AS now
), kept AS (
	INSERT INTO inbox_digests (digest, first_seen, expires)
	SELECT i.digest, c.now, c.now + max(i.window_us) * interval '1 microsecond'
	FROM input i, clock c WHERE length(i.digest) > 0
	GROUP BY i.digest, c.now ORDER BY i.digest
	ON CONFLICT (digest) DO UPDATE SET first_seen = excluded.first_seen, expires = excluded.expires
		WHERE inbox_digests.expires <= excluded.first_seen
	RETURNING digest
), claimed AS (
	INSERT INTO inbox_keys (hash, first_seen, expires)
	SELECT i.hash, c.now, c.now + i.window_us * interval '1 microsecond'
	FROM input i, clock c
	WHERE length(i.digest) = 0 OR i.digest IN (SELECT digest FROM kept)
	ORDER BY i.hash
	ON CONFLICT (hash) DO UPDATE SET first_seen = excluded.first_seen, expires = excluded.expires
		WHERE inbox_keys.expires <= excluded.first_seen
	RETURNING hash, first_seen, expires
), stored AS (
	INSERT INTO inbox_events (hash, scope, source, provider, tenant, event_id, event_type, entity_type,
		entity_id, entity_version, entity_order, entity_state, payload, headers, received_at)
	SELECT i.hash, i.scope, i.source, i.provider, i.tenant, i.event_id, i.event_type, i.entity_type,
		i.entity_id, i.entity_version, i.entity_order, i.entity_state, i.payload, i.headers, c.now
	FROM input i JOIN claimed k ON k.hash = i.hash, clock c
	ORDER BY i.ord
	RETURNING id, hash, source
), counted AS (
	INSERT INTO inbox_counts (source, counter, shard, n)
	SELECT source, counter, pg_backend_pid(), n FROM (
		SELECT source, 'received' AS counter, count(*) AS n FROM stored GROUP BY source
		UNION ALL SELECT source, 'accepted', count(*) FROM stored GROUP BY source
		UNION ALL SELECT i.source, 'duplicates', count(*) FROM input i
			WHERE i.hash NOT IN (SELECT hash FROM claimed) GROUP BY i.source
	) t
	ON CONFLICT (source, counter, shard) DO UPDATE SET n = inbox_counts.n + excluded.n
), notified AS (
	SELECT pg_notify('` + storedChannel + `', $18) FROM (SELECT 1 FROM stored LIMIT 1) x
)
SELECT s.id, k.first_seen, k.expires, r.replay, o.first_seen, o.expires
FROM input i
CROSS JOIN (SELECT count(*) FROM notified) n
CROSS JOIN LATERAL (SELECT length(i.digest) > 0 AND i.digest NOT IN (SELECT digest FROM kept) AS replay) r
LEFT JOIN claimed k ON k.hash = i.hash
LEFT JOIN stored s ON s.hash = i.hash
LEFT JOIN LATERAL (
	SELECT first_seen, expires FROM inbox_digests WHERE r.replay AND digest = i.digest
	UNION ALL
	SELECT first_seen, expires FROM inbox_keys WHERE NOT r.replay AND k.hash IS NULL AND hash = i.hash
	LIMIT 1
) o ON true
ORDER BY i.ord`

// Accept implements inbox.Store in one statement per batch (see
// acceptQuery), so a batch costs one round trip and one commit, and
// nothing of it is written unless all of it is.
func (s *Store) Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	if len(items) == 0 {
		return nil, nil
	}
	args, err := s.acceptArgs(items)
	if err != nil {
		return nil, err
	}
	n := len(items)
	rows, err := s.pool.Query(ctx, acceptQuery, args...)
	if err != nil {
		return nil, inbox.Fail(ctx, "accept", err)
	}
	defer rows.Close()
	out := make([]inbox.Outcome, 0, n)
	var raced, racedReplays []int
	for rows.Next() {
		var (
			id                          pgtype.Int8
			first, expires, held, until pgtype.Timestamptz
			replay                      bool
		)
		if err := rows.Scan(&id, &first, &expires, &replay, &held, &until); err != nil {
			return nil, inbox.Fail(ctx, "accept", err)
		}
		o := inbox.Outcome{Status: dedupe.New, ID: id.Int64, FirstSeen: fromTS(first), Expires: fromTS(expires)}
		if !id.Valid {
			o = inbox.Outcome{Status: dedupe.Duplicate, FirstSeen: fromTS(held), Expires: fromTS(until)}
			switch {
			case held.Valid:
			case replay:
				racedReplays = append(racedReplays, len(out))
			default:
				raced = append(raced, len(out))
			}
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, inbox.Fail(ctx, "accept", err)
	}
	if len(out) != n {
		return nil, inbox.Fail(ctx, "accept", fmt.Errorf("%d outcomes for %d items", len(out), n))
	}
	rows.Close()
	s.noteAccepted(n)
	s.stored(out)
	// The batch is committed: a failure to read the times of raced
	// duplicates leaves them zero rather than report the batch failed.
	s.readHeld(ctx, `SELECT first_seen, expires FROM inbox_keys WHERE hash = $1`, items, raced, out,
		func(it *inbox.Item) []byte { return it.Event.Hash[:] })
	s.readHeld(ctx, `SELECT first_seen, expires FROM inbox_digests WHERE digest = $1`, items, racedReplays, out,
		func(it *inbox.Item) []byte { return it.Digest[:] })
	// Likewise a failure to count the duplicates by minute leaves the
	// chart short of them; their total is counted by the batch itself.
	dups := map[string]int64{}
	for i, o := range out {
		if o.Status == dedupe.Duplicate {
			dups[items[i].Event.Source]++
		}
	}
	if len(dups) > 0 {
		s.pool.Exec(ctx, duplicatesQuery, duplicatesArgs(s.clock(), dups)...)
	}
	return out, nil
}

// readHeld fills in the first sighting and expiry of the duplicates at idx,
// whose key or digest (what key returns) a racing session committed after
// the batch's snapshot was taken: query reads them with a snapshot of its
// own.
func (s *Store) readHeld(ctx context.Context, query string, items []inbox.Item, idx []int, out []inbox.Outcome, key func(*inbox.Item) []byte) {
	for _, i := range idx {
		var first, expires pgtype.Timestamptz
		if err := s.pool.QueryRow(ctx, query, key(&items[i])).Scan(&first, &expires); err == nil {
			out[i].FirstSeen, out[i].Expires = fromTS(first), fromTS(expires)
		}
	}
}

// acceptArgs are the arguments of acceptQuery: the clock ($1), the items
// as one array per column ($2..$17), and the Store's holder name ($18).
func (s *Store) acceptArgs(items []inbox.Item) ([]any, error) {
	n := len(items)
	var (
		hashes, digests, payloads                            = make([][]byte, n), make([][]byte, n), make([][]byte, n)
		windows, orders                                      = make([]int64, n), make([]int64, n)
		scopes, sources, providers, tenants, eventIDs, types = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		entityTypes, entityIDs, versions, states, headers    = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		seen                                                 = make(map[dedupe.Hash]bool, n)
	)
	for i := range items {
		it := &items[i]
		e := &it.Event
		if seen[e.Hash] {
			return nil, fmt.Errorf("inbox: accept: %w: %s", ErrRepeatedHash, e.Hash)
		}
		seen[e.Hash] = true
		h, err := json.Marshal(e.Headers)
		if err != nil {
			return nil, fmt.Errorf("inbox: headers of %s: %w", e.EventID, err)
		}
		hashes[i], windows[i], payloads[i], headers[i] = e.Hash[:], micros(it.Window), e.Payload, string(h)
		if payloads[i] == nil {
			payloads[i] = []byte{}
		}
		digests[i] = []byte{}
		if it.Digest != (dedupe.Hash{}) {
			digests[i] = it.Digest[:]
		}
		scopes[i], sources[i], providers[i], tenants[i], eventIDs[i], types[i] = e.Scope, e.Source, e.Provider, e.Tenant, e.EventID, e.Type
		entityTypes[i], entityIDs[i], versions[i], orders[i], states[i] = e.EntityType, e.EntityID, e.EntityVersion, e.EntityOrder, e.EntityState
	}
	return []any{s.clock(), hashes, windows, digests, texts(scopes), texts(sources), texts(providers), texts(tenants),
		texts(eventIDs), texts(types), texts(entityTypes), texts(entityIDs), texts(versions), orders, texts(states),
		payloads, headers, s.lead.holder}, nil
}
