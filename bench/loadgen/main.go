package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// errUsage marks a bad command line.
var errUsage = errors.New("usage")

// run parses args, drives the load and writes the report to stdout; the
// first transport error, if any, goes to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.url, "url", "", "receiver URL, e.g. http://127.0.0.1:8080/in/app; several, separated by commas, share the connections round robin")
	fs.StringVar(&cfg.secret, "secret", os.Getenv("BENCH_SECRET"), "Standard Webhooks secret, whsec_... (default $BENCH_SECRET)")
	fs.IntVar(&cfg.conns, "c", 64, "concurrent connections, one request in flight on each")
	fs.DurationVar(&cfg.duration, "d", 10*time.Second, "measured duration")
	fs.DurationVar(&cfg.warmup, "warmup", 2*time.Second, "unmeasured load before the measured duration")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.Float64Var(&cfg.dup, "dup", 0.2, "share of requests that redeliver an already stored id (0..1)")
	fs.IntVar(&cfg.size, "size", 512, "body bytes (at least the JSON skeleton)")
	fs.StringVar(&cfg.label, "label", "run", "name printed with the results")
	fs.StringVar(&cfg.idPrefix, "id-prefix", "", "prefix of new event ids, \"<prefix>-<n>\" (default the label)")
	fs.IntVar(&cfg.replay, "replay", 0, "send only redeliveries of ids <prefix>-0..<prefix>-(N-1) stored by an earlier run")
	fs.BoolVar(&cfg.stamp, "stamp", false, "put \"sent_ns\" (send time, Unix ns) and entity fields \"order\", \"seq\", \"state\" into each body, same size")
	fs.Float64Var(&cfg.rate, "rate", 0, "requests per second across all connections, evenly paced (0: as fast as possible)")
	fs.BoolVar(&cfg.newConns, "new-conns", false, "open a new connection for each request instead of keeping it alive")
	fs.IntVar(&cfg.count, "n", 0, "stop after this many requests, warmup included (0: run for -d)")
	asJSON := fs.Bool("json", false, "print the results as one JSON object")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if cfg.idPrefix == "" {
		cfg.idPrefix = cfg.label
	}
	res, err := load(ctx, cfg)
	if err != nil {
		return err
	}
	if res.firstErr != nil {
		fmt.Fprintf(stderr, "loadgen: %s: %d transport errors, the first: %v\n", res.Label, res.Errors, res.firstErr)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(res)
	}
	_, err = fmt.Fprintln(stdout, res.line())
	return err
}
