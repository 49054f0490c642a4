package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/server"
	"github.com/hookgate/hookgate/internal/source"
)

func init() {
	register("serve", "receive, verify, deduplicate and store webhooks", runServe)
}

// demoSecretSetting names the demo source's secret in the store, so that
// it survives restarts and the printed curl line keeps working.
const demoSecretSetting = "demo.secret"

func runServe(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "serve",
		text: `Receive, verify, deduplicate and store webhooks, and process them: apply
each event to its entity and deliver it to the source's destinations.
Without --config it serves a demo source on the embedded SQLite database
(./hookgate.db) and prints a signed curl line to try it.`,
		examples: []string{
			"serve",
			"serve --config hookgate.yaml",
			"serve --config hookgate.yaml --listen :9000 --process=false",
		},
	}, std)
	db := storeFlags(fs.FlagSet)
	listen := fs.String("listen", "", "listen `ADDRESS`, such as :8080 (overrides the config's listen)")
	logLevel := fs.String("log-level", "info", "log `LEVEL`: debug, info, warn, error")
	process := fs.Bool("process", true, "run the workers; with --process=false events are stored and wait for a serve that processes")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("serve: --log-level: %v", err)
	}
	log := slog.New(slog.NewTextHandler(std.Stderr, &slog.HandlerOptions{Level: level}))

	cfg, demo, err := db.config()
	if err != nil {
		return err
	}
	if !demo {
		printWarnings(std.Stderr, cfg)
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	store, err := db.openConfig(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer store.Close()
	var demoSecret string
	if demo {
		demoSecret, err = store.InitSetting(ctx, demoSecretSetting, newStandardSecret())
		if err != nil {
			return err
		}
		cfg.Sources = []config.Source{demoSource(demoSecret)}
	}
	gw, err := server.New(cfg, server.Options{Store: store, Logger: log, IntakeOnly: !*process})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		gw.Close()
		return fmt.Errorf("listen: %w", err)
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(std.Stdout, "hookgate listening on %s (database %s)\n", base, cfg.Database)
	for _, s := range gw.Sources() {
		fmt.Fprintf(std.Stdout, "  source %-12s %-10s POST %s/in/%s\n", s.Name, s.Provider, base, s.Name)
	}
	fmt.Fprintln(std.Stdout, metricsLine(cfg, base))
	fmt.Fprintln(std.Stdout, consoleLine(cfg, base))
	if demo {
		if err := printDemo(std, base, demoSecret, gw.Sources()[0]); err != nil {
			ln.Close()
			gw.Close()
			return err
		}
	}
	return gw.Serve(ctx, ln)
}

// metricsLine says where /metrics is served, if anywhere: it names every
// source and destination, so the public listener serves it only behind
// metrics.token or with metrics.public.
func metricsLine(cfg config.Config, base string) string {
	token := ""
	if cfg.Metrics.Token.Value() != "" {
		token = ", metrics.token required"
	}
	switch {
	case cfg.Admin.Listen != "":
		return "  metrics GET http://" + cfg.Admin.Listen + "/metrics (admin.listen only" + token + ")"
	case token != "":
		return "  metrics GET " + base + "/metrics (metrics.token required)"
	case cfg.Metrics.Public:
		return "  metrics GET " + base + "/metrics (metrics.public: open to anyone who reaches this listener)"
	}
	return "  metrics not served: set admin.listen, metrics.token or metrics.public: true"
}

// consoleLine says where the console is, if anywhere: on the operator's
// listener (admin.listen) or the public one, only with admin.token.
func consoleLine(cfg config.Config, base string) string {
	switch {
	case cfg.Admin.Token.Value() == "":
		return "  console not served: set admin.token"
	case cfg.Admin.Listen != "":
		if b, err := listenBase(cfg.Admin.Listen); err == nil {
			base = b
		}
		return "  console " + base + "/ui/ (admin.listen only; sign in with admin.token)"
	}
	return "  console " + base + "/ui/ (sign in with admin.token)"
}

func newStandardSecret() string {
	b := make([]byte, 24)
	rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

func printDemo(std IO, base, secret string, src *source.Source) error {
	body := `{"type":"demo.ping","data":{"hello":"world"}}`
	req, err := http.NewRequest(http.MethodPost, base+"/in/"+src.Name, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := src.Signer().Sign(req, []byte(body)); err != nil {
		return err
	}
	fmt.Fprintf(std.Stdout, "\nNo --config given: serving the demo source %q (Standard Webhooks).\n", src.Name)
	fmt.Fprintf(std.Stdout, "Its secret, kept in the database: %s\n", secret)
	fmt.Fprintf(std.Stdout, "Send a signed event (202; run it again for a 200 duplicate; valid for 5 minutes,\n'hookgate sign' makes fresh ones):\n\n  %s\n\n", curlLine(req, body))
	return nil
}
