package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

var _ inbox.Reconciliations = (*Store)(nil)

// reconcileSchema records how each event came (via: "" through intake,
// "reconcile" when a reconciliation recovered it) and keeps one
// checkpoint per reconciled source: when its last complete run started
// (through, Unix nanoseconds), and the run under way and the last one
// ended, as JSON, which only the reconciliation reads.
const reconcileSchema = `
ALTER TABLE events ADD COLUMN via TEXT NOT NULL DEFAULT '';
CREATE TABLE reconcile_checkpoints (
	source  TEXT    NOT NULL PRIMARY KEY,
	through INTEGER NOT NULL,
	run     TEXT    NOT NULL,
	last    TEXT    NOT NULL
) WITHOUT ROWID;
`

// AcceptRecovered implements inbox.Reconciliations: Accept's transaction
// and the marking of the new events in one, so that an event stored by a
// run is never left without its via.
func (s *Store) AcceptRecovered(ctx context.Context, items []inbox.Item) (out []inbox.Outcome, err error) {
	if len(items) == 0 {
		return nil, nil
	}
	headers := make([][]byte, len(items))
	for i := range items {
		if headers[i], err = json.Marshal(items[i].Event.Headers); err != nil {
			return nil, fmt.Errorf("inbox: headers of %s: %w", items[i].Event.EventID, err)
		}
	}
	err = s.write(ctx, "accept recovered", func(tx *sql.Tx) error {
		if out, err = s.accept(ctx, tx, items, headers); err != nil {
			return err
		}
		for _, o := range out {
			if o.Status != dedupe.New {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE events SET via = ? WHERE id = ?`, inbox.ViaReconcile, o.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Checkpoint implements inbox.Reconciliations.
func (s *Store) Checkpoint(ctx context.Context, source string) (inbox.Checkpoint, error) {
	cp, err := scanCheckpoint(s.db.QueryRowContext(ctx,
		`SELECT source, through, run, last FROM reconcile_checkpoints WHERE source = ?`, source))
	if errors.Is(err, sql.ErrNoRows) {
		return inbox.Checkpoint{Source: source}, nil
	}
	if err != nil {
		return cp, inbox.Unavailable("checkpoint", err)
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
	return s.write(ctx, "save checkpoint", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO reconcile_checkpoints (source, through, run, last)
			VALUES (?, ?, ?, ?) ON CONFLICT (source) DO UPDATE
			SET through = excluded.through, run = excluded.run, last = excluded.last`,
			cp.Source, nanos(cp.Through), string(run), string(last))
		return err
	})
}

// Checkpoints implements inbox.Reconciliations.
func (s *Store) Checkpoints(ctx context.Context) ([]inbox.Checkpoint, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT source, through, run, last FROM reconcile_checkpoints ORDER BY source`)
	if err != nil {
		return nil, inbox.Unavailable("checkpoints", err)
	}
	defer rows.Close()
	var out []inbox.Checkpoint
	for rows.Next() {
		cp, err := scanCheckpoint(rows)
		if err != nil {
			return nil, inbox.Unavailable("checkpoints", err)
		}
		out = append(out, cp)
	}
	if err := rows.Err(); err != nil {
		return nil, inbox.Unavailable("checkpoints", err)
	}
	return out, nil
}

func scanCheckpoint(row interface{ Scan(...any) error }) (inbox.Checkpoint, error) {
	var (
		cp        inbox.Checkpoint
		through   int64
		run, last string
	)
	if err := row.Scan(&cp.Source, &through, &run, &last); err != nil {
		return cp, err
	}
	cp.Through = fromNanos(through)
	if err := json.Unmarshal([]byte(run), &cp.Run); err != nil {
		return cp, fmt.Errorf("checkpoint of %s: %w", cp.Source, err)
	}
	if err := json.Unmarshal([]byte(last), &cp.Last); err != nil {
		return cp, fmt.Errorf("checkpoint of %s: %w", cp.Source, err)
	}
	return cp, nil
}

// Have implements inbox.Reconciliations: a key is held once committed,
// until it expires; a lease not committed yet is not (its event may still
// fail to be stored).
func (s *Store) Have(ctx context.Context, hashes []dedupe.Hash) ([]bool, error) {
	held := make(map[dedupe.Hash]bool, len(hashes))
	now := s.now().UnixNano()
	for lo := 0; lo < len(hashes); lo += sqlitedb.MaxRows {
		chunk := hashes[lo:min(lo+sqlitedb.MaxRows, len(hashes))]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, now)
		for _, h := range chunk {
			args = append(args, h[:])
		}
		rows, err := s.db.QueryContext(ctx, `SELECT hash FROM dedupe_keys WHERE committed = 1 AND expires > ? AND hash IN (`+
			sqlitedb.Rows("?", len(chunk))+`)`, args...)
		if err != nil {
			return nil, inbox.Unavailable("have", err)
		}
		for rows.Next() {
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				rows.Close()
				return nil, inbox.Unavailable("have", err)
			}
			h, err := dedupe.HashFromBytes(raw)
			if err != nil {
				rows.Close()
				return nil, inbox.Unavailable("have", err)
			}
			held[h] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, inbox.Unavailable("have", err)
		}
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
	args := []any{after.Tenant, after.Type, after.ID, source}
	for _, f := range final {
		args = append(args, f)
	}
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, `SELECT n.tenant, n.type, n.id, n.state, e.payload
		FROM entities n JOIN events e ON e.id = n.event_id
		WHERE (n.tenant, n.type, n.id) > (?, ?, ?) AND e.source = ?
		AND n.state NOT IN (`+sqlitedb.Rows("?", len(final))+`)
		ORDER BY n.tenant, n.type, n.id LIMIT ?`, args...)
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
