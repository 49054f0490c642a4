package main

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0", "hooks", 3, pw) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("read the announcement: %v", err)
	}
	m := regexp.MustCompile(`^listening on kafka://(\S+) .*not a real Kafka broker`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("announcement %q, want listening on kafka://ADDR, saying it is not Kafka", line)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "hooks", Value: []byte("x")}).First()
	if err != nil {
		t.Fatalf("produce to hooks: %v", err)
	}
	if r.Partition < 0 || r.Partition >= 3 {
		t.Errorf("produced to partition %d of a topic of 3", r.Partition)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("run after its context ended: %v", err)
	}
}
