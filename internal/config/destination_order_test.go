package config

import (
	"strings"
	"testing"
)

func TestDestinationOrder(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte(`
sources:
  - name: shop
    provider: shopify
    secret: env:SHOPIFY_SECRET
    destinations:
      - name: app
        url: https://app.example.com/hooks
        order: entity
      - name: ledger
        url: https://ledger.example.com/hooks
        order: entity
        order_key: json:customer.id
        on_exhausted: block
      - name: plain
        url: https://plain.example.com/hooks
`), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	ds := cfg.Sources[0].Destinations
	if ds[0].Order != OrderEntity || ds[0].OrderKey != "" || ds[0].OnExhausted != "" {
		t.Errorf("app = %+v, want order entity by entity, skipping", ds[0])
	}
	if ds[1].OrderKey != "json:customer.id" || ds[1].OnExhausted != OnExhaustedBlock {
		t.Errorf("ledger = %+v, want its key and block", ds[1])
	}
	if ds[2].Order != "" {
		t.Errorf("plain = %+v, want no order", ds[2])
	}
}

func TestDestinationOrderErrors(t *testing.T) {
	t.Parallel()
	dest := func(fields string) string {
		return "sources:\n  - name: s\n    provider: github\n    secret: env:GITHUB_SECRET\n    destinations:\n      - name: d\n" +
			"        url: https://a.example.com/\n" + fields
	}
	wantParseErrors(t, []parseErrorCase{
		{"unknown order", dest("        order: fifo\n"), `destinations[0].order: "fifo": want entity`},
		{"unknown on_exhausted", dest("        order: entity\n        on_exhausted: drop\n"), `destinations[0].on_exhausted: "drop": want skip or block`},
		{"on_exhausted without order", dest("        on_exhausted: block\n"), `destinations[0].on_exhausted: "block" needs order: entity`},
		{"order_key without order", dest("        order_key: json:id\n"), `destinations[0].order_key: "json:id" needs order: entity`},
		{"order_key from the query", dest("        order: entity\n        order_key: query:account\n"), `destinations[0].order_key: "query:account": want json:PATH, header:NAME or const:VALUE`},
		{"order_key path", dest("        order: entity\n        order_key: path\n"), `destinations[0].order_key: "path": want json:PATH`},
		{"bad order_key", dest("        order: entity\n        order_key: json:a..b\n"), `destinations[0].order_key: bad selector "json:a..b": empty key`},
		{"sequence header", dest("        headers: {Webhook-Sequence: x}\n"), "destinations[0].headers.Webhook-Sequence: hookgate sets webhook-sequence itself"},
	})
}

// parseErrorCase is a config that must be refused, and what the error
// says.
type parseErrorCase struct{ name, yaml, want string }

// wantParseErrors checks that each case's config is refused with an
// error that contains its want.
func wantParseErrors(t *testing.T, tests []parseErrorCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse([]byte(tt.yaml), "", lookupTestEnv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
