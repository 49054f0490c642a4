package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Apply implements inbox.Store. The entity fields are read from the stored
// events, not from the arguments, so only the events' ids matter; an
// unknown id fails the whole call with inbox.ErrNotFound.
//
// Workers on several nodes may apply events of one entity at once, so
// the transaction first takes an advisory lock per entity it writes, in
// one sorted order (no deadlock between batches), and only then reads the
// entities: the version guard compares against the newest committed
// state. The results are decided in id order in memory
// (inbox.DecideAll) and written with one statement for the entities and
// one for the events.
func (s *Store) Apply(ctx context.Context, events []inbox.Event) ([]inbox.Applied, error) {
	if len(events) == 0 {
		return nil, nil
	}
	ids := inbox.EventIDs(events)
	var out []inbox.Applied
	err := s.tx(ctx, "apply", func(tx pgx.Tx) error {
		var (
			rec records
			err error
		)
		if out, err = s.apply(ctx, tx, ids, &rec); err != nil {
			return err
		}
		return rec.save(ctx, tx)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ApplyFinish implements inbox.ApplyFinisher: the results of Apply are
// recorded by the statement that finishes the events.
func (s *Store) ApplyFinish(ctx context.Context, owner string, events []inbox.Event, decide func([]inbox.Applied) ([]inbox.Result, error)) error {
	if err := inbox.CheckLease(owner); err != nil {
		return err
	}
	ids := inbox.EventIDs(events)
	var lost []int64
	err := s.tx(ctx, "apply and finish", func(tx pgx.Tx) error {
		var rec records
		applied, err := s.apply(ctx, tx, ids, &rec)
		if err != nil {
			return err
		}
		results, err := inbox.Results(owner, applied, decide)
		if err != nil {
			return err
		}
		lost, err = s.finish(ctx, tx, owner, results, &rec)
		return err
	})
	if err != nil {
		return err
	}
	return inbox.Lost(lost)
}

// apply applies the events ids in tx (see Apply), writes the entities it
// moved on, and adds the results to record to rec.
func (s *Store) apply(ctx context.Context, tx pgx.Tx, ids []int64, rec *records) ([]inbox.Applied, error) {
	stored, err := readApplyRows(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	heads, err := inbox.HeadsToRead(ids, stored)
	if err != nil {
		return nil, inbox.CallerError{Err: err}
	}
	if err := readHeads(ctx, tx, heads); err != nil {
		return nil, err
	}
	out := inbox.DecideAll(ids, stored, heads, rec.add)
	return out, writeHeads(ctx, tx, s.clock(), heads)
}

// readApplyRows reads the entity fields and recorded results of ids,
// locking the events in id order so that two transactions applying one
// event take turns and the second sees the first's recorded result.
func readApplyRows(ctx context.Context, tx pgx.Tx, ids []int64) (map[int64]*inbox.ApplyRow, error) {
	rows, err := tx.Query(ctx, `SELECT id, tenant, entity_type, entity_id, entity_version,
		entity_order, entity_state, apply_outcome, apply_from, apply_to, apply_transition, apply_tie
		FROM inbox_events WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]*inbox.ApplyRow, len(ids))
	for rows.Next() {
		var (
			id      int64
			r       inbox.ApplyRow
			applied inbox.Applied
			outcome string
		)
		if err := rows.Scan(&id, &r.Key.Tenant, &r.Key.Type, &r.Key.ID, &r.Version, &r.Order, &r.State,
			&outcome, &applied.From, &applied.To, &applied.Transition, &applied.Tie); err != nil {
			return nil, err
		}
		if outcome != "" {
			applied.Outcome = inbox.ApplyOutcome(outcome)
			r.Recorded = &applied
		}
		out[id] = &r
	}
	return out, rows.Err()
}

// headsQuery reads the stored entities among the ($1, $2, $3) triples.
const headsQuery = `SELECT tenant, type, id, version, ord, state, event_id FROM inbox_entities
	WHERE (tenant, type, id) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))`

// readHeads locks the entities of heads and reads the stored ones.
func readHeads(ctx context.Context, tx pgx.Tx, heads map[inbox.EntityKey]*inbox.Head) error {
	if len(heads) == 0 {
		return nil
	}
	var tenants, types, ids []string
	for k := range heads {
		tenants, types, ids = append(tenants, k.Tenant), append(types, k.Type), append(ids, k.ID)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(k) FROM (
		SELECT DISTINCT hashtextextended(t || chr(1) || y || chr(1) || i, 0) AS k
		FROM unnest($1::text[], $2::text[], $3::text[]) AS e(t, y, i) ORDER BY k) AS locks`,
		tenants, types, ids); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, headsQuery, tenants, types, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			k inbox.EntityKey
			h = inbox.Head{Found: true}
		)
		if err := rows.Scan(&k.Tenant, &k.Type, &k.ID, &h.Version, &h.Order, &h.State, &h.Event); err != nil {
			return err
		}
		*heads[k] = h
	}
	return rows.Err()
}

// writeHeads upserts the entities Apply moved on, in one statement.
func writeHeads(ctx context.Context, tx pgx.Tx, now any, heads map[inbox.EntityKey]*inbox.Head) error {
	var (
		tenants, types, ids, versions, states []string
		orders, events                        []int64
	)
	for k, h := range heads {
		if !h.Dirty {
			continue
		}
		tenants, types, ids = append(tenants, k.Tenant), append(types, k.Type), append(ids, k.ID)
		versions, orders, states, events = append(versions, h.Version), append(orders, h.Order), append(states, h.State), append(events, h.Event)
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO inbox_entities (tenant, type, id, version, ord, state, event_id, updated_at)
		SELECT t, y, i, v, o, s, e, coalesce($1::timestamptz, now())
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::bigint[]) AS u(t, y, i, v, o, s, e)
		ON CONFLICT (tenant, type, id) DO UPDATE SET version = excluded.version, ord = excluded.ord,
		state = excluded.state, event_id = excluded.event_id, updated_at = excluded.updated_at`,
		now, tenants, types, ids, versions, orders, states, events)
	return err
}

// recordsQuery records Apply results, one element of $1..$6 per event.
const recordsQuery = `UPDATE inbox_events e SET apply_outcome = r.outcome, apply_from = r.from_state,
	apply_to = r.to_state, apply_transition = r.transition, apply_tie = r.tie
	FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::boolean[], $6::boolean[])
		AS r(id, outcome, from_state, to_state, transition, tie)
	WHERE e.id = r.id`

// records are Apply results to record on their events.
type records struct {
	ids                  []int64
	outcomes, froms, tos []string
	transitions, ties    []bool
}

func (r *records) add(id int64, a inbox.Applied) {
	r.ids, r.outcomes, r.froms, r.tos = append(r.ids, id), append(r.outcomes, string(a.Outcome)), append(r.froms, a.From), append(r.tos, a.To)
	r.transitions, r.ties = append(r.transitions, a.Transition), append(r.ties, a.Tie)
}

// without returns the results of the events not in ids.
func (r *records) without(ids map[int64]bool) *records {
	var out records
	for i, id := range r.ids {
		if !ids[id] {
			out.add(id, inbox.Applied{Outcome: inbox.ApplyOutcome(r.outcomes[i]), From: r.froms[i], To: r.tos[i],
				Transition: r.transitions[i], Tie: r.ties[i]})
		}
	}
	return &out
}

// save records the results in one statement.
func (r *records) save(ctx context.Context, tx pgx.Tx) error {
	if len(r.ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, recordsQuery, r.ids, r.outcomes, r.froms, r.tos, r.transitions, r.ties)
	return err
}

// Entity implements inbox.Store.
func (s *Store) Entity(ctx context.Context, tenant, typ, id string) (inbox.Entity, error) {
	e := inbox.Entity{Tenant: tenant, Type: typ, ID: id}
	var updated pgtype.Timestamptz
	err := s.pool.QueryRow(ctx, `SELECT version, ord, state, event_id, updated_at FROM inbox_entities
		WHERE tenant = $1 AND type = $2 AND id = $3`, tenant, typ, id).
		Scan(&e.Version, &e.Order, &e.State, &e.EventID, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return inbox.Entity{}, fmt.Errorf("inbox: entity %s: %w", strings.Join([]string{tenant, typ, id}, "/"), inbox.ErrNotFound)
	}
	if err != nil {
		return inbox.Entity{}, inbox.Fail(ctx, "entity", err)
	}
	e.UpdatedAt = fromTS(updated)
	return e, nil
}
