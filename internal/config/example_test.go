package config_test

import (
	"fmt"

	"github.com/hookgate/hookgate/internal/config"
)

func ExampleParse() {
	cfg, err := config.Parse([]byte(`
max_body: 256KiB
sources:
  - name: crm
    provider: salesforce
    organization_id: 00D5e000000AbCdEAK
    window: 24h
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	src, _ := cfg.Source("crm")
	fmt.Println(cfg.Listen, cfg.MaxBody, cfg.Dedupe.Window)
	fmt.Println(src.Name, src.Provider, src.Window)
	// Output:
	// 127.0.0.1:8080 256KiB 7d
	// crm salesforce 1d
}

func ExampleParse_invalid() {
	_, err := config.Parse([]byte(`
sources:
  - name: stripe
    provider: strpe
`))
	fmt.Println(err)
	// Output:
	// line 4: sources[0].provider: unknown provider "strpe" (want standard|stripe|github|shopify|hubspot|salesforce|shippo|hmac)
}

func ExampleConfig_Redacted() {
	cfg := config.Default()
	cfg.Sources = []config.Source{{Name: "gh", Provider: "github", Secret: config.NewSecret("s3cr3t")}}
	out, err := cfg.Redacted()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// listen: 127.0.0.1:8080
	// database: sqlite:hookgate.db
	// max_body: 1MiB
	// limits:
	//   max_connections: 4096
	//   max_pending_body: 64MiB
	//   min_body_rate: 4KiB
	//   body_grace: 5s
	// dedupe:
	//   window: 7d
	//   on_store_error: reject
	//   store_timeout: 5s
	// workers: 4
	// batch: 200
	// retention: 30d
	// sweep_every: 1h
	// lease: 1m
	// alerts:
	//   repeat: 4h
	//   check_every: 30s
	//   failed_attempts: 5
	//   auth_failures: 50
	//   auth_window: 1m
	//   lag: 15m
	// sources:
	//   - name: gh
	//     provider: github
	//     secret: '****'
}
