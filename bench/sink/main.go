package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hookgate/hookgate/bench/internal/httpserve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	fs := flag.NewFlagSet("sink", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:8081", "listen address (port 0: any free port)")
	_ = fs.Parse(os.Args[1:])
	err := httpserve.Run(ctx, *listen, newSink(time.Now).handler(), os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		os.Exit(1)
	}
}
