package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hookgate/hookgate/bench/internal/httpserve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	fs := flag.NewFlagSet("sink", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:8081", "listen address (port 0: any free port)")
	from := fs.String("from", "", "also consume from this broker: nats://HOST:PORT?stream=S&subject=SUBJ, amqp://USER:PASS@HOST:PORT/?exchange=X&queue=Q&key=K or kafka://HOST:PORT?topic=T")
	_ = fs.Parse(os.Args[1:])
	err := run(ctx, *listen, *from)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		os.Exit(1)
	}
}

// run serves the sink on listen and, with from, consumes from that broker,
// until ctx ends or either fails. The broker is ready before the sink
// announces its address.
func run(ctx context.Context, listen, from string) error {
	s := newSink(time.Now)
	g, ctx := errgroup.WithContext(ctx)
	if from != "" {
		consume, err := openBroker(from, s)
		if err != nil {
			return err
		}
		g.Go(func() error { return consume(ctx) })
	}
	g.Go(func() error { return httpserve.Run(ctx, listen, s.handler(), os.Stdout) })
	return g.Wait()
}
