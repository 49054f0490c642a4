package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

var _ inbox.Reconciliations = (*Store)(nil)

// schemaV8 records how each event came (via: ” through intake,
// 'reconcile' when a reconciliation recovered it) and keeps one
// checkpoint per reconciled source: when its last complete run started
// (through), and the run under way and the last one ended, as JSON, which
// only the reconciliation reads. The added column has a constant default,
// so no table is rewritten.
const schemaV8 = `
ALTER TABLE inbox_events ADD COLUMN via text NOT NULL DEFAULT '';
CREATE TABLE inbox_reconcile_checkpoints (
	source  text        PRIMARY KEY,
	through timestamptz NOT NULL,
	run     jsonb       NOT NULL,
	last    jsonb       NOT NULL
);
`

// AcceptRecovered implements inbox.Reconciliations: acceptQuery and the
// marking of the new events in one transaction, so that an event stored
// by a run is never left without its via.
func (s *Store) AcceptRecovered(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	if len(items) == 0 {
		return nil, nil
	}
	args, err := s.acceptArgs(items)
	if err != nil {
		return nil, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, inbox.Fail(ctx, "accept recovered", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, acceptQuery, args...)
	if err != nil {
		return nil, inbox.Fail(ctx, "accept recovered", err)
	}
	out := make([]inbox.Outcome, 0, len(items))
	var fresh []int64
	for rows.Next() {
		var (
			id                          pgtype.Int8
			first, expires, held, until pgtype.Timestamptz
			replay                      bool
		)
		if err := rows.Scan(&id, &first, &expires, &replay, &held, &until); err != nil {
			rows.Close()
			return nil, inbox.Fail(ctx, "accept recovered", err)
		}
		if id.Valid {
			fresh = append(fresh, id.Int64)
			out = append(out, inbox.Outcome{Status: dedupe.New, ID: id.Int64, FirstSeen: fromTS(first), Expires: fromTS(expires)})
			continue
		}
		out = append(out, inbox.Outcome{Status: dedupe.Duplicate, FirstSeen: fromTS(held), Expires: fromTS(until)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, inbox.Fail(ctx, "accept recovered", err)
	}
	if len(out) != len(items) {
		return nil, inbox.Fail(ctx, "accept recovered", fmt.Errorf("%d outcomes for %d items", len(out), len(items)))
	}
	if len(fresh) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE inbox_events SET via = $1 WHERE id = ANY($2)`, inbox.ViaReconcile, fresh); err != nil {
			return nil, inbox.Fail(ctx, "accept recovered", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, inbox.Fail(ctx, "accept recovered", err)
	}
	s.stored(out)
	return out, nil
}

// Checkpoint implements inbox.Reconciliations.
func (s *Store) Checkpoint(ctx context.Context, source string) (inbox.Checkpoint, error) {
	cp, err := scanCheckpoint(s.pool.QueryRow(ctx,
		`SELECT source, through, run, last FROM inbox_reconcile_checkpoints WHERE source = $1`, source))
	if errors.Is(err, pgx.ErrNoRows) {
		return inbox.Checkpoint{Source: source}, nil
	}
	if err != nil {
		return cp, inbox.Fail(ctx, "checkpoint", err)
	}
	return cp, nil
}

// SaveCheckpoint implements inbox.Reconciliations.
func (s *Store) SaveCheckpoint(ctx context.Context, cp inbox.Checkpoint) error {
	run, err := json.Marshal(cp.Run)
	if err != nil {
		return err
	}
	last, err := json.Marshal(cp.Last)
	if err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO inbox_reconcile_checkpoints (source, through, run, last)
		VALUES ($1, $2, $3, $4) ON CONFLICT (source) DO UPDATE
		SET through = excluded.through, run = excluded.run, last = excluded.last`,
		cp.Source, ts(cp.Through), string(run), string(last)); err != nil {
		return inbox.Fail(ctx, "save checkpoint", err)
	}
	return nil
}

// Checkpoints implements inbox.Reconciliations.
func (s *Store) Checkpoints(ctx context.Context) ([]inbox.Checkpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT source, through, run, last FROM inbox_reconcile_checkpoints ORDER BY source`)
	if err != nil {
		return nil, inbox.Fail(ctx, "checkpoints", err)
	}
	defer rows.Close()
	var out []inbox.Checkpoint
	for rows.Next() {
		cp, err := scanCheckpoint(rows)
		if err != nil {
			return nil, inbox.Fail(ctx, "checkpoints", err)
		}
		out = append(out, cp)
	}
	if err := rows.Err(); err != nil {
		return nil, inbox.Fail(ctx, "checkpoints", err)
	}
	return out, nil
}

func scanCheckpoint(row pgx.Row) (inbox.Checkpoint, error) {
	var (
		cp        inbox.Checkpoint
		through   pgtype.Timestamptz
		run, last []byte
	)
	if err := row.Scan(&cp.Source, &through, &run, &last); err != nil {
		return cp, err
	}
	cp.Through = fromTS(through)
	if err := json.Unmarshal(run, &cp.Run); err != nil {
		return cp, fmt.Errorf("checkpoint of %s: %w", cp.Source, err)
	}
	if err := json.Unmarshal(last, &cp.Last); err != nil {
		return cp, fmt.Errorf("checkpoint of %s: %w", cp.Source, err)
	}
	return cp, nil
}

// Have implements inbox.Reconciliations: a key row exists only once its
// event is committed (they are written in one transaction), and is held
// until it expires by the database's clock.
func (s *Store) Have(ctx context.Context, hashes []dedupe.Hash) ([]bool, error) {
	raw := make([][]byte, len(hashes))
	for i := range hashes {
		raw[i] = hashes[i][:]
	}
	rows, err := s.pool.Query(ctx, `SELECT hash FROM inbox_keys
		WHERE hash = ANY($2) AND expires > coalesce($1::timestamptz, now())`, s.clock(), raw)
	if err != nil {
		return nil, inbox.Fail(ctx, "have", err)
	}
	defer rows.Close()
	held := make(map[dedupe.Hash]bool, len(hashes))
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, inbox.Fail(ctx, "have", err)
		}
		h, err := dedupe.HashFromBytes(b)
		if err != nil {
			return nil, inbox.Fail(ctx, "have", err)
		}
		held[h] = true
	}
	if err := rows.Err(); err != nil {
		return nil, inbox.Fail(ctx, "have", err)
	}
	out := make([]bool, len(hashes))
	for i, h := range hashes {
		out[i] = held[h]
	}
	return out, nil
}

// OpenEntities implements inbox.Reconciliations: a walk of the entities'
// primary key from after, each joined to the event that wrote it.
func (s *Store) OpenEntities(ctx context.Context, source string, final []string, after inbox.EntityRef, limit int) ([]inbox.OpenEntity, error) {
	rows, err := s.pool.Query(ctx, `SELECT n.tenant, n.type, n.id, n.state, e.payload
		FROM inbox_entities n JOIN inbox_events e ON e.id = n.event_id
		WHERE (n.tenant, n.type, n.id) > ($1, $2, $3) AND e.source = $4 AND n.state <> ALL($5)
		ORDER BY n.tenant, n.type, n.id LIMIT $6`, after.Tenant, after.Type, after.ID, source, final, limit)
	if err != nil {
		return nil, inbox.Fail(ctx, "open entities", err)
	}
	defer rows.Close()
	var out []inbox.OpenEntity
	for rows.Next() {
		var o inbox.OpenEntity
		if err := rows.Scan(&o.Tenant, &o.Type, &o.ID, &o.State, &o.Payload); err != nil {
			return nil, inbox.Fail(ctx, "open entities", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, inbox.Fail(ctx, "open entities", err)
	}
	return out, nil
}
