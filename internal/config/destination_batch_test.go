package config

import (
	"testing"
	"time"
)

func TestDestinationBatch(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte(`
sources:
  - name: shop
    provider: shopify
    secret: env:SHOPIFY_SECRET
    destinations:
      - name: bulk
        url: https://app.example.com/bulk
        batch: {max: 100, wait: 500ms}
      - name: now
        url: https://app.example.com/now
        batch: {max: 1000}
      - name: plain
        url: https://plain.example.com/hooks
`), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	ds := cfg.Sources[0].Destinations
	if b := ds[0].Batch; b == nil || b.Max != 100 || time.Duration(b.Wait) != 500*time.Millisecond {
		t.Errorf("bulk batch = %+v, want 100 events, 500ms", b)
	}
	if b := ds[1].Batch; b == nil || b.Max != 1000 || b.Wait != 0 {
		t.Errorf("now batch = %+v, want 1000 events, no wait", b)
	}
	if ds[2].Batch != nil {
		t.Errorf("plain batch = %+v, want none", ds[2].Batch)
	}
}

func TestDestinationBatchErrors(t *testing.T) {
	t.Parallel()
	dest := func(url, fields string) string {
		return "sources:\n  - name: s\n    provider: github\n    secret: env:GITHUB_SECRET\n    destinations:\n      - name: a\n" +
			"        url: https://a.example.com/\n      - name: d\n        url: " + url + "\n" + fields
	}
	const web = "https://d.example.com/"
	wantParseErrors(t, []parseErrorCase{
		{"no max", dest(web, "        batch: {wait: 1s}\n"), "sources[0].destinations[1].batch.max: 0: want 1 to 1000 events"},
		{"max too large", dest(web, "        batch: {max: 1001}\n"), "sources[0].destinations[1].batch.max: 1001: want 1 to 1000 events"},
		{"negative max", dest(web, "        batch: {max: -1}\n"), "sources[0].destinations[1].batch.max: -1: want 1 to 1000"},
		{"negative wait", dest(web, "        batch: {max: 10, wait: -1s}\n"), "sources[0].destinations[1].batch.wait: -1s: want 0 (send what is due at once) to 1m"},
		{"wait too long", dest(web, "        batch: {max: 10, wait: 2m}\n"), "sources[0].destinations[1].batch.wait: 2m: want 0"},
		{"unknown field", dest(web, "        batch: {max: 10, size: 5}\n"), "size"},
		{"nats", dest("nats://127.0.0.1:4222", "        subject: s\n        batch: {max: 10}\n"), "sources[0].destinations[1].batch: only HTTP destinations take batches; this one is nats"},
		{"rabbitmq", dest("amqp://127.0.0.1:5672", "        routing_key: r\n        batch: {max: 10}\n"), "sources[0].destinations[1].batch: only HTTP destinations take batches; this one is amqp"},
		{"kafka", dest("kafka://127.0.0.1:9092", "        topic: t\n        batch: {max: 10}\n"), "sources[0].destinations[1].batch: only HTTP destinations take batches; this one is kafka"},
		{"count header", dest(web, "        headers: {Webhook-Batch-Count: x}\n"), "destinations[1].headers.Webhook-Batch-Count: hookgate sets webhook-batch-count itself"},
	})
}
