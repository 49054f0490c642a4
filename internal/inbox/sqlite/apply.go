package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Apply implements inbox.Store. The entity fields are read from the stored
// events, not from the arguments, so only the events' ids matter; an
// unknown id fails the whole call with inbox.ErrNotFound. The results are
// decided in id order in memory (inbox.DecideAll), then each entity moved
// on is written once and each result recorded.
func (s *Store) Apply(ctx context.Context, events []inbox.Event) ([]inbox.Applied, error) {
	if len(events) == 0 {
		return nil, nil
	}
	ids := inbox.EventIDs(events)
	var out []inbox.Applied
	err := s.process(ctx, "apply", func(tx *sql.Tx) error {
		var err error
		out, err = s.apply(ctx, tx, ids)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ApplyFinish implements inbox.ApplyFinisher.
func (s *Store) ApplyFinish(ctx context.Context, owner string, events []inbox.Event, decide func([]inbox.Applied) ([]inbox.Result, error)) error {
	if err := inbox.CheckLease(owner); err != nil {
		return err
	}
	ids := inbox.EventIDs(events)
	var lost []int64
	err := s.process(ctx, "apply and finish", func(tx *sql.Tx) error {
		applied, err := s.apply(ctx, tx, ids)
		if err != nil {
			return err
		}
		results, err := inbox.Results(owner, applied, decide)
		if err != nil {
			return err
		}
		lost, err = s.finish(ctx, tx, owner, results)
		return err
	})
	if err != nil {
		return err
	}
	return inbox.Lost(lost)
}

// apply applies the events ids in tx (see Apply).
func (s *Store) apply(ctx context.Context, tx *sql.Tx, ids []int64) ([]inbox.Applied, error) {
	stored, err := s.readApplyRows(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	heads, err := inbox.HeadsToRead(ids, stored)
	if err != nil {
		return nil, inbox.CallerError{Err: err}
	}
	if err := s.readHeads(ctx, tx, heads); err != nil {
		return nil, err
	}
	type result struct {
		id int64
		a  inbox.Applied
	}
	var results []result
	out := inbox.DecideAll(ids, stored, heads, func(id int64, a inbox.Applied) { results = append(results, result{id, a}) })
	if err := s.writeHeads(ctx, tx, heads); err != nil {
		return nil, err
	}
	record, err := s.db.Stmt(ctx, tx, `UPDATE events SET apply_outcome = ?, apply_from = ?,
		apply_to = ?, apply_transition = ?, apply_tie = ? WHERE id = ?`)
	if err != nil {
		return nil, err
	}
	defer record.Close()
	for _, r := range results {
		if _, err := record.ExecContext(ctx, string(r.a.Outcome), r.a.From, r.a.To, r.a.Transition, r.a.Tie, r.id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readApplyRows reads the entity fields and recorded results of ids.
func (s *Store) readApplyRows(ctx context.Context, tx *sql.Tx, ids []int64) (map[int64]*inbox.ApplyRow, error) {
	rows := make(map[int64]*inbox.ApplyRow, len(ids))
	read, err := s.db.Stmt(ctx, tx, `SELECT id, tenant, entity_type, entity_id, entity_version,
		entity_order, entity_state, apply_outcome, apply_from, apply_to, apply_transition, apply_tie
		FROM events WHERE id IN (SELECT value FROM json_each(?))`)
	if err != nil {
		return nil, err
	}
	for lo := 0; lo < len(ids); lo += idChunk {
		got, err := read.QueryContext(ctx, idList(ids[lo:min(lo+idChunk, len(ids))]))
		if err != nil {
			return nil, err
		}
		for got.Next() {
			var (
				id      int64
				r       inbox.ApplyRow
				applied inbox.Applied
				outcome string
			)
			if err := got.Scan(&id, &r.Key.Tenant, &r.Key.Type, &r.Key.ID, &r.Version, &r.Order, &r.State,
				&outcome, &applied.From, &applied.To, &applied.Transition, &applied.Tie); err != nil {
				got.Close()
				return nil, err
			}
			if outcome != "" {
				applied.Outcome = inbox.ApplyOutcome(outcome)
				r.Recorded = &applied
			}
			rows[id] = &r
		}
		got.Close()
		if err := got.Err(); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// readHeads reads the stored entities among heads.
func (s *Store) readHeads(ctx context.Context, tx *sql.Tx, heads map[inbox.EntityKey]*inbox.Head) error {
	if len(heads) == 0 {
		return nil
	}
	read, err := s.db.Stmt(ctx, tx, `SELECT version, ord, state, event_id FROM entities
		WHERE tenant = ? AND type = ? AND id = ?`)
	if err != nil {
		return err
	}
	defer read.Close()
	for k, h := range heads {
		err := read.QueryRowContext(ctx, k.Tenant, k.Type, k.ID).Scan(&h.Version, &h.Order, &h.State, &h.Event)
		switch {
		case err == nil:
			h.Found = true
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	return nil
}

// writeHeads upserts the entities Apply moved on.
func (s *Store) writeHeads(ctx context.Context, tx *sql.Tx, heads map[inbox.EntityKey]*inbox.Head) error {
	if len(heads) == 0 {
		return nil
	}
	upsert, err := s.db.Stmt(ctx, tx, `INSERT INTO entities
		(tenant, type, id, version, ord, state, event_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, type, id) DO UPDATE SET version = excluded.version, ord = excluded.ord,
		state = excluded.state, event_id = excluded.event_id, updated_at = excluded.updated_at`)
	if err != nil {
		return err
	}
	defer upsert.Close()
	now := s.now().UnixNano()
	for k, h := range heads {
		if !h.Dirty {
			continue
		}
		if _, err := upsert.ExecContext(ctx, k.Tenant, k.Type, k.ID, h.Version, h.Order, h.State, h.Event, now); err != nil {
			return err
		}
	}
	return nil
}

// Entity implements inbox.Store.
func (s *Store) Entity(ctx context.Context, tenant, typ, id string) (inbox.Entity, error) {
	e := inbox.Entity{Tenant: tenant, Type: typ, ID: id}
	var updated int64
	err := s.db.QueryRowContext(ctx, `SELECT version, ord, state, event_id, updated_at FROM entities
		WHERE tenant = ? AND type = ? AND id = ?`, tenant, typ, id).
		Scan(&e.Version, &e.Order, &e.State, &e.EventID, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return inbox.Entity{}, fmt.Errorf("inbox: entity %s: %w", strings.Join([]string{tenant, typ, id}, "/"), inbox.ErrNotFound)
	}
	if err != nil {
		return inbox.Entity{}, inbox.Fail(ctx, "entity", err)
	}
	e.UpdatedAt = fromNanos(updated)
	return e, nil
}
