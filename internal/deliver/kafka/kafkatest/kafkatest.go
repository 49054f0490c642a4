// Package kafkatest runs a Kafka cluster inside the test process
// (franz-go's kfake: no Kafka broker runs where hookgate is tested) behind
// a TCP proxy that can cut it, and reads back what was produced to it.
package kafkatest

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hookgate/hookgate/internal/pgtest"
)

// Cluster is a one-broker kfake cluster reached through Proxy.
type Cluster struct {
	*kfake.Cluster
	// Addr is the broker's host:port as clients reach it: the proxy's,
	// which is also the address the broker advertises in its metadata,
	// so that no client goes round the proxy once it has connected.
	Addr string
	// Proxy stands between every client and the broker: Cut it and the
	// broker is gone for them, Restore it and it is back, with what it
	// had.
	Proxy *pgtest.Proxy
}

// Start starts a cluster with opts (topics, SASL users, TLS) and closes it
// when t ends.
func Start(t testing.TB, opts ...kfake.Opt) *Cluster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy, addr := pgtest.NewTCPProxy(t, ln.Addr().String())
	at, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	listen := func(string, string) (net.Listener, error) { return advertised{ln, at}, nil }
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.ListenFn(listen)}, opts...)...)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &Cluster{Cluster: c, Addr: addr, Proxy: proxy}
}

// advertised is the broker's listener, which kfake asks its address of
// to advertise: it answers with the proxy's.
type advertised struct {
	net.Listener
	addr net.Addr
}

func (l advertised) Addr() net.Addr { return l.addr }

// Read returns every record of topic up to its end as it was when Read
// was called, sorted by partition and offset; opts are the reading
// client's (its credentials, its TLS).
func (c *Cluster) Read(ctx context.Context, topic string, opts ...kgo.Opt) ([]*kgo.Record, error) {
	parts := c.PartitionInfos(topic)
	if parts == nil {
		return nil, fmt.Errorf("no topic %s", topic)
	}
	end := map[int32]int64{}
	from := map[int32]kgo.Offset{}
	for _, p := range parts {
		if p.HighWatermark > 0 {
			end[p.Partition] = p.HighWatermark
			from[p.Partition] = kgo.NewOffset().AtStart()
		}
	}
	if len(end) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from})}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(end) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("read %s: %w", topic, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			if r.Offset+1 >= end[r.Partition] {
				delete(end, r.Partition)
			}
		})
	}
	slices.SortFunc(out, func(a, b *kgo.Record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out, nil
}

// Header returns the value of r's header key, "" when it has none.
func Header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
