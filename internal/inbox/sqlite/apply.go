package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// applyRow is what Apply reads of a stored event: its entity fields and
// the result recorded by an earlier Apply.
type applyRow struct {
	tenant, typ, entityID string
	version               string
	order                 int64
	state                 string
	recorded              *inbox.Applied
}

// entityKey names one entity.
type entityKey struct{ tenant, typ, id string }

// entityHead is what the version guard compares against: the stored
// order and state, and the event that wrote them.
type entityHead struct {
	found bool
	order int64
	state string
	event int64
}

// Apply implements inbox.Store. The entity fields are read from the stored
// events, not from the arguments, so only the events' ids matter; an
// unknown id fails the whole call with inbox.ErrNotFound.
func (s *Store) Apply(ctx context.Context, events []inbox.Event) ([]inbox.Applied, error) {
	if len(events) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(events))
	for i := range events {
		ids[i] = events[i].ID
	}
	order := make([]int, len(events))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ids[a], ids[b]) })

	out := make([]inbox.Applied, len(events))
	err := s.process(ctx, "apply", func(tx *sql.Tx) error {
		stored, err := s.readApplyRows(ctx, tx, ids)
		if err != nil {
			return err
		}
		a, err := newApplier(ctx, tx, s.db, s.now().UnixNano())
		if err != nil {
			return err
		}
		defer a.close()
		for _, i := range order {
			row, ok := stored[ids[i]]
			if !ok {
				return callerError{fmt.Errorf("%w: %d", inbox.ErrNotFound, ids[i])}
			}
			if row.recorded == nil {
				res, err := a.apply(ids[i], row)
				if err != nil {
					return err
				}
				row.recorded = &res
			}
			out[i] = *row.recorded
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readApplyRows reads the entity fields and recorded results of ids.
func (s *Store) readApplyRows(ctx context.Context, tx *sql.Tx, ids []int64) (map[int64]*applyRow, error) {
	rows := make(map[int64]*applyRow, len(ids))
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
				r       applyRow
				applied inbox.Applied
				outcome string
			)
			if err := got.Scan(&id, &r.tenant, &r.typ, &r.entityID, &r.version, &r.order, &r.state,
				&outcome, &applied.From, &applied.To, &applied.Transition, &applied.Tie); err != nil {
				got.Close()
				return nil, err
			}
			if outcome != "" {
				applied.Outcome = inbox.ApplyOutcome(outcome)
				r.recorded = &applied
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

// applier applies events one by one inside one transaction, remembering
// the entities it has read or written, so several events of one entity in
// a batch each see the one before.
type applier struct {
	ctx                  context.Context
	now                  int64
	read, upsert, record *sql.Stmt
	heads                map[entityKey]entityHead
}

func newApplier(ctx context.Context, tx *sql.Tx, db *sqlitedb.DB, now int64) (*applier, error) {
	a := &applier{ctx: ctx, now: now, heads: map[entityKey]entityHead{}}
	var err error
	if a.read, err = db.Stmt(ctx, tx, `SELECT ord, state, event_id FROM entities
		WHERE tenant = ? AND type = ? AND id = ?`); err != nil {
		return nil, err
	}
	if a.upsert, err = db.Stmt(ctx, tx, `INSERT INTO entities
		(tenant, type, id, version, ord, state, event_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, type, id) DO UPDATE SET version = excluded.version, ord = excluded.ord,
		state = excluded.state, event_id = excluded.event_id, updated_at = excluded.updated_at`); err != nil {
		a.close()
		return nil, err
	}
	if a.record, err = db.Stmt(ctx, tx, `UPDATE events SET apply_outcome = ?, apply_from = ?,
		apply_to = ?, apply_transition = ?, apply_tie = ? WHERE id = ?`); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

func (a *applier) close() {
	for _, st := range []*sql.Stmt{a.read, a.upsert, a.record} {
		if st != nil {
			st.Close()
		}
	}
}

// apply runs the version guard for event id and records its result. Only
// a strictly older version is stale; an equal one is a tie, applied in
// arrival order: it writes the entity unless an event that arrived after
// it (a larger id) with the same version already has, whose state then
// stands, as if the two had been applied in id order.
func (a *applier) apply(id int64, r *applyRow) (inbox.Applied, error) {
	res := inbox.Applied{Outcome: inbox.ApplyNone}
	if r.entityID != "" {
		key := entityKey{r.tenant, r.typ, r.entityID}
		head, err := a.head(key)
		if err != nil {
			return res, err
		}
		tie := head.found && r.order == head.order
		switch {
		case head.found && r.order < head.order:
			res = inbox.Applied{Outcome: inbox.ApplyStale, From: head.state, To: head.state}
		case tie && id < head.event:
			res = inbox.Applied{Outcome: inbox.ApplyUnchanged, From: head.state, To: head.state, Tie: true}
		default:
			if _, err := a.upsert.ExecContext(a.ctx, key.tenant, key.typ, key.id, r.version,
				r.order, r.state, id, a.now); err != nil {
				return res, err
			}
			a.heads[key] = entityHead{found: true, order: r.order, state: r.state, event: id}
			res = inbox.Applied{Outcome: inbox.ApplyUnchanged, From: head.state, To: r.state, Tie: tie}
			if head.state != r.state {
				res.Outcome, res.Transition = inbox.ApplyApplied, true
			}
		}
	}
	if _, err := a.record.ExecContext(a.ctx, string(res.Outcome), res.From, res.To, res.Transition, res.Tie, id); err != nil {
		return res, err
	}
	return res, nil
}

// head returns the stored order and state of an entity, and the event
// that wrote them.
func (a *applier) head(key entityKey) (entityHead, error) {
	if h, ok := a.heads[key]; ok {
		return h, nil
	}
	h := entityHead{found: true}
	err := a.read.QueryRowContext(a.ctx, key.tenant, key.typ, key.id).Scan(&h.order, &h.state, &h.event)
	if errors.Is(err, sql.ErrNoRows) {
		h = entityHead{}
	} else if err != nil {
		return h, err
	}
	a.heads[key] = h
	return h, nil
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
		return inbox.Entity{}, fail(ctx, "entity", err)
	}
	e.UpdatedAt = fromNanos(updated)
	return e, nil
}
