package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	fs := flag.NewFlagSet("kfake", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:9092", "listen address (port 0: any free port)")
	topic := fs.String("topic", "hooks", "the topic to create")
	partitions := fs.Int("partitions", 4, "the topic's partitions")
	_ = fs.Parse(os.Args[1:])
	err := run(ctx, *listen, *topic, int32(*partitions), os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
}

// run serves a cluster with topic on listen until ctx ends, and announces
// its address to announce once it accepts connections.
func run(ctx context.Context, listen, topic string, partitions int32, announce io.Writer) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic),
		kfake.ListenFn(func(string, string) (net.Listener, error) { return ln, nil }))
	if err != nil {
		ln.Close()
		return err
	}
	defer c.Close()
	if _, err := fmt.Fprintf(announce, "listening on kafka://%s (kfake, in-process: not a real Kafka broker)\n", ln.Addr()); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
