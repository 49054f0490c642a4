package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookgate/hookgate/bench/internal/httpserve"
	"github.com/hookgate/hookgate/dedupe/sqlite"
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
	path := fs.String("db", "naive.db", "SQLite database file")
	secret := fs.String("secret", os.Getenv("BENCH_SECRET"), "Standard Webhooks secret, whsec_... (default $BENCH_SECRET)")
	maxConns := fs.Int("max-conns", 1, "database connections (0: unlimited)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	verifier, err := verify.NewStandard(*secret)
	if err != nil {
		return fmt.Errorf("-secret: %w", err)
	}
	db, err := sqlite.OpenDB(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(*maxConns)
	s, err := newServer(ctx, db, verifier)
	if err != nil {
		return err
	}
	return httpserve.Run(ctx, *listen, s, os.Stdout)
}
