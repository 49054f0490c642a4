package config

import "testing"

func TestDestinationKinds(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte(`
sources:
  - name: shop
    provider: shopify
    secret: env:SHOPIFY_SECRET
    destinations:
      - name: app
        url: https://app.example.com/hooks
      - name: bus
        url: nats://127.0.0.1:4222
        subject: hooks.{source}.{type}
      - name: rabbit
        url: amqp://guest@127.0.0.1:5672/
        password: env:SMTP_PASSWORD
        exchange: hooks
      - name: log
        url: kafka://127.0.0.1:9092
        topic: hooks
`), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	ds := cfg.Sources[0].Destinations
	for i, want := range []string{KindHTTP, KindNATS, KindRabbitMQ, KindKafka} {
		if got := ds[i].Kind(); got != want {
			t.Errorf("%s: kind %q, want %q", ds[i].Name, got, want)
		}
	}
	if ds[2].RoutingKey != "{source}.{type}" || ds[2].Password.Value() != testEnv["SMTP_PASSWORD"] {
		t.Errorf("rabbit = %+v, want the default routing key and the password read", ds[2])
	}
	if got := Fill(ds[1].Subject, "shop", "acme", "orders/create"); got != "hooks.shop.orders/create" {
		t.Errorf("Fill = %q", got)
	}
}

func TestDestinationKindErrors(t *testing.T) {
	t.Parallel()
	dest := func(fields string) string {
		return "sources:\n  - name: s\n    provider: github\n    secret: env:GITHUB_SECRET\n    destinations:\n      - name: d\n" + fields
	}
	wantParseErrors(t, []parseErrorCase{
		{"nats without subject", dest("        url: nats://127.0.0.1:4222\n"), "destinations[0].subject: required for a nats destination"},
		{"kafka without topic", dest("        url: kafka://127.0.0.1:9092\n"), "destinations[0].topic: required for a kafka destination"},
		{"password in a broker url", dest("        url: amqp://guest:guest@127.0.0.1:5672/\n"), "destinations[0].url: the URL holds a password"},
		{"subject on http", dest("        url: https://a.example.com/\n        subject: x\n"), "destinations[0].subject: not used by a http destination"},
		{"headers on kafka", dest("        url: kafka://k:9092\n        topic: t\n        headers: {X-A: b}\n"), "destinations[0].headers: not used by a kafka destination"},
		{"secret on a broker", dest("        url: nats://n:4222\n        subject: s\n        secret: env:APP_WEBHOOK_SECRET\n"), "destinations[0].secret: not used by a nats destination"},
		{"unknown placeholder", dest("        url: nats://n:4222\n        subject: hooks.{event}\n"), `destinations[0].subject: "hooks.{event}": unknown placeholder {event}`},
		{"wildcard subject", dest("        url: nats://n:4222\n        subject: hooks.>\n"), "a NATS subject to publish to has no spaces or wildcards"},
		{"unknown scheme", dest("        url: ftp://files.example.com/\n"), `destinations[0].url: scheme "ftp": want an absolute http or https URL, or a broker's`},
	})
}
