package config

import (
	"testing"
	"time"
)

func TestDestinationRate(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte(`
sources:
  - name: shop
    provider: shopify
    secret: env:SHOPIFY_SECRET
    destinations:
      - name: crm
        url: https://crm.example.com/hooks
        rate: 100/s
      - name: erp
        url: https://erp.example.com/hooks
        rate: 600/m
      - name: plain
        url: https://plain.example.com/hooks
`), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	ds := cfg.Sources[0].Destinations
	want := []Rate{{N: 100, Per: time.Second}, {N: 600, Per: time.Minute}, {}}
	for i, d := range ds {
		if d.Rate != want[i] {
			t.Errorf("%s: rate %+v, want %+v", d.Name, d.Rate, want[i])
		}
	}
}

func TestDestinationRateErrors(t *testing.T) {
	t.Parallel()
	dest := func(fields string) string {
		return "sources:\n  - name: s\n    provider: github\n    secret: env:GITHUB_SECRET\n    destinations:\n      - name: d\n" +
			"        url: https://a.example.com/\n" + fields
	}
	wantParseErrors(t, []parseErrorCase{
		{"words", dest("        rate: fast\n"), `destinations[0].rate: "fast": want a rate like 10/s, 600/m or 1000/h`},
		{"zero", dest("        rate: 0/s\n"), `destinations[0].rate: "0/s": want a rate like 10/s`},
		{"unit", dest("        rate: 5/d\n"), `destinations[0].rate: "5/d": want a rate like 10/s`},
		{"number", dest("        rate: 100\n"), `destinations[0].rate: "100": want a rate like 10/s`},
	})
}
