package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// maxBody bounds a request body, as the gateway does.
const maxBody = 1 << 20

// dialect is the SQL of one database engine.
type dialect struct {
	schema      string
	insertKey   string // inserts $1 unless present; affects one row when new
	insertEvent string // ($1 id, $2 payload, $3 received_at)
}

var sqliteSQL = dialect{
	schema: `
CREATE TABLE IF NOT EXISTS keys (
	id TEXT PRIMARY KEY
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
	seq         INTEGER PRIMARY KEY,
	id          TEXT NOT NULL,
	payload     BLOB NOT NULL,
	received_at INTEGER NOT NULL
);`,
	insertKey:   `INSERT OR IGNORE INTO keys (id) VALUES (?)`,
	insertEvent: `INSERT INTO events (id, payload, received_at) VALUES (?, ?, ?)`,
}

var postgresSQL = dialect{
	schema: `
CREATE TABLE IF NOT EXISTS keys (
	id text PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS events (
	seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id          text   NOT NULL,
	payload     bytea  NOT NULL,
	received_at bigint NOT NULL
);`,
	insertKey:   `INSERT INTO keys (id) VALUES ($1) ON CONFLICT DO NOTHING`,
	insertEvent: `INSERT INTO events (id, payload, received_at) VALUES ($1, $2, $3)`,
}

// server stores each verified delivery in its own transaction.
type server struct {
	db       *sql.DB
	sql      dialect
	verifier *verify.Standard
	mux      *http.ServeMux
}

// newServer creates the tables in db, whose SQL is d, if needed.
func newServer(ctx context.Context, db *sql.DB, d dialect, verifier *verify.Standard) (*server, error) {
	if _, err := db.ExecContext(ctx, d.schema); err != nil {
		return nil, fmt.Errorf("create tables: %w", err)
	}
	s := &server{db: db, sql: d, verifier: verifier, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /in/{source}", s.intake)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	return s, nil
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

func (s *server) intake(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read request body", http.StatusBadRequest)
		return
	}
	if err := s.verifier.Verify(r, body); err != nil {
		http.Error(w, "unauthenticated", http.StatusUnauthorized)
		return
	}
	id := strings.TrimSpace(r.Header.Get(verify.HeaderWebhookID))
	isNew, err := s.store(r.Context(), id, body)
	switch {
	case err != nil:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
	case isNew:
		w.WriteHeader(http.StatusAccepted)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// store records id and, when it is new, the payload, in one durable
// transaction. It reports whether id was new.
func (s *server) store(ctx context.Context, id string, payload []byte) (isNew bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.sql.insertKey, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if n == 1 {
		if _, err := tx.ExecContext(ctx, s.sql.insertEvent, id, payload, time.Now().UnixMilli()); err != nil {
			return false, err
		}
	}
	return n == 1, tx.Commit()
}
