package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/hookgate/hookgate/bench/internal/httpserve"
	"github.com/hookgate/hookgate/verify"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "naive:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("naive", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "listen address (port 0: any free port)")
	path := fs.String("db", "naive.db", "SQLite database file, or a postgres:// URL")
	secret := fs.String("secret", os.Getenv("BENCH_SECRET"), "Standard Webhooks secret, whsec_... (default $BENCH_SECRET)")
	maxConns := fs.Int("max-conns", 1, "database connections (0: unlimited)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	verifier, err := verify.NewStandard(*secret)
	if err != nil {
		return fmt.Errorf("-secret: %w", err)
	}
	db, d, err := openDB(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(*maxConns)
	s, err := newServer(ctx, db, d, verifier)
	if err != nil {
		return err
	}
	return httpserve.Run(ctx, *listen, s, os.Stdout)
}

// openDB opens path: a postgres:// (or postgresql://) URL, else a SQLite
// file, durable as hookgate's (WAL, synchronous=FULL).
func openDB(path string) (*sql.DB, dialect, error) {
	if strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://") {
		db, err := sql.Open("pgx", path)
		return db, postgresSQL, err
	}
	// SQLite's own checkpoints, inside the commit that fills the WAL, as
	// a service that opens the file with these settings gets them.
	db, err := sql.Open("sqlite", "file:"+path+
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	return db, sqliteSQL, err
}
