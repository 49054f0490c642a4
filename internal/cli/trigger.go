package cli

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	registry "github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/trigger"
)

func init() {
	register("trigger", "send a provider's signed example event to a source of a running gateway (--list names them)", runTrigger)
}

// findFixture is provider's fixture named event, or its default when
// event is empty; the error says what there is instead.
func findFixture(provider, event string) (trigger.Fixture, error) {
	if f, ok := trigger.Find(provider, event); ok {
		return f, nil
	}
	var names []string
	for _, f := range trigger.Of(provider) {
		names = append(names, f.Event)
	}
	if names != nil {
		return trigger.Fixture{}, usagef("trigger: %s has no event %q (it has %s; run 'hookgate trigger --list')", provider, event, strings.Join(names, ", "))
	}
	if _, ok := registry.Lookup(provider); ok {
		return trigger.Fixture{}, usagef("trigger: %s has no example events: its events are keyed by the selectors of your config; sign a body of your own with 'hookgate sign'", provider)
	}
	return trigger.Fixture{}, usagef("trigger: unknown provider %q (want %s)", provider, strings.Join(trigger.Providers(), ", "))
}

func runTrigger(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "trigger",
		args: "PROVIDER [EVENT] [flags]",
		text: `Send a provider's example event to a source of a running gateway, as
the provider sends it: a realistic body with fresh ids and timestamps (so
that each trigger is a new event, not a duplicate), every header the
provider sends, signed with the source's secret (Salesforce: the
source's organization id in the envelope, and its token; Shippo: its
signature or token). Without EVENT, the provider's typical event is
sent; --list names them all.

The source is the config's first of that provider, or --source. The
request goes to the source's URL on the config's listen address, or on
--url. One line says what was sent where and how the gateway answered;
a status other than 2xx is an error (exit status 1).`,
		examples: []string{
			`trigger --list`,
			`trigger stripe --config hookgate.yaml`,
			`trigger github pull_request --config hookgate.yaml --source gh`,
			`trigger shopify orders/paid --config hookgate.yaml --url https://hooks.example.com`,
		},
	}, std)
	configPath := fs.String("config", os.Getenv("HOOKGATE_CONFIG"), "config `FILE` the source, its secrets and the listen address come from (default $HOOKGATE_CONFIG)")
	name := fs.String("source", "", "the config's source `NAME` to send to (default: the first of PROVIDER)")
	target := fs.String("url", "", "the gateway's base `URL`, such as https://hooks.example.com, to send to instead of the config's listen address; a URL with a path is used as it is")
	tenant := fs.String("tenant", "", "the `TENANT`: the URL's last segment for a source whose tenant is the path; X-Shopify-Shop-Domain for shopify (default example.myshopify.com)")
	list := fs.Bool("list", false, "list the events of every provider (or of PROVIDER) and exit")
	// Flags may come before, between and after PROVIDER and EVENT.
	var pos []string
	for rest := args; ; {
		if err := fs.parse(rest, true); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(pos) > 2 {
		return usagef("trigger: unexpected argument %q (want PROVIDER [EVENT])", pos[2])
	}
	provider, event := "", ""
	if len(pos) > 0 {
		provider = strings.ToLower(pos[0])
	}
	if len(pos) > 1 {
		event = pos[1]
	}
	if *list {
		return listFixtures(std.Stdout, provider)
	}
	if provider == "" {
		return usagef("trigger: want a provider: %s (run 'hookgate trigger --list' for their events)", strings.Join(trigger.Providers(), ", "))
	}
	fx, err := findFixture(provider, event)
	if err != nil {
		return err
	}
	if *configPath == "" {
		return usagef("trigger: give --config (or set HOOKGATE_CONFIG): the source, its secret and its URL come from the gateway's config")
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	sc, err := triggerSource(cfg, provider, *name)
	if err != nil {
		return err
	}
	if sc.Tenant == string(config.SelectPath) && *tenant == "" {
		return usagef("trigger: source %q takes its tenant from the URL's path; give --tenant", sc.Name)
	}
	base, err := listenBase(cfg.Listen)
	if err != nil {
		return err
	}
	to := trigger.IntakeURL(base, sc, *tenant)
	if *target != "" {
		u, err := url.Parse(*target)
		if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
			return usagef("trigger: --url %q is not an absolute http or https URL", *target)
		}
		to = *target
		if strings.Trim(u.Path, "/") == "" {
			to = trigger.IntakeURL(strings.TrimRight(*target, "/"), sc, *tenant)
		}
	}

	req, err := trigger.Request(ctx, sc, fx, to, *tenant, time.Now())
	if err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	shown := shownURL(req.URL)
	what := provider + " " + fx.Event
	client := &http.Client{
		Timeout: 30 * time.Second,
		// A redirect would turn the POST into a GET: report it instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		// The error of Do names the URL, whose query may hold the
		// source's token: say it without.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		hint := ""
		if errors.Is(err, syscall.ECONNREFUSED) {
			hint = " (is 'hookgate serve' running there?)"
		}
		return fmt.Errorf("trigger: %s: POST %s: %v%s", what, shown, err, hint)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	fmt.Fprintf(std.Stdout, "%s -> %s: %s %s\n", what, shown, resp.Status, shorten(answer, resp.Header.Get("Content-Type"), 160))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("trigger: %s: the gateway answered %s%s", what, resp.Status, statusHint(resp.StatusCode, sc))
	}
	return nil
}

// triggerSource is the config's source called name, which must be of
// provider, or without a name its first source of provider.
func triggerSource(cfg config.Config, provider, name string) (config.Source, error) {
	var have []string
	for _, s := range cfg.Sources {
		have = append(have, s.Name+" ("+s.Provider+")")
	}
	sources := "none"
	if have != nil {
		sources = strings.Join(have, ", ")
	}
	if name != "" {
		src, ok := cfg.Source(name)
		switch {
		case !ok:
			return config.Source{}, usagef("trigger: the config has no source %q (it has %s)", name, sources)
		case src.Provider != provider:
			return config.Source{}, usagef("trigger: source %q is a %s source, not %s", name, src.Provider, provider)
		}
		return *src, nil
	}
	for _, s := range cfg.Sources {
		if s.Provider == provider {
			return s, nil
		}
	}
	return config.Source{}, usagef("trigger: the config has no %s source (its sources: %s)", provider, sources)
}

// shownURL is u as trigger prints it: scheme, host and path, never the
// query (a token) or user information.
func shownURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

// shorten is an answer's body on one line: runs of white space made one
// space, escaped for the terminal, cut after max runes. Of an XML answer
// (Salesforce's SOAP Ack) it keeps what the elements say: "Ack=true".
func shorten(b []byte, contentType string, max int) string {
	s := string(b)
	if strings.Contains(contentType, "xml") {
		s = xmlText(b)
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return escape(s)
}

// statusHint says what an answer other than 2xx most likely means.
func statusHint(status int, sc config.Source) string {
	switch status {
	case http.StatusUnauthorized:
		if p, ok := registry.Lookup(sc.Provider); ok && p.Unauthorized != "" {
			return ": " + p.Unauthorized
		}
		return ": the signature did not verify; the gateway's source has another secret than the config gives"
	case http.StatusNotFound:
		return ": the gateway has no such source at that URL (is it running with this config?)"
	}
	return ""
}

// xmlText is "Name=text" for each element of an XML document that holds
// text, or the document as it is when it does not parse.
func xmlText(b []byte) string {
	var parts []string
	d := xml.NewDecoder(bytes.NewReader(b))
	var name string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return strings.Join(parts, " ")
		}
		if err != nil {
			return string(b)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name = t.Name.Local
		case xml.CharData:
			if text := strings.TrimSpace(string(t)); text != "" && name != "" {
				parts = append(parts, name+"="+text)
			}
		case xml.EndElement:
			name = ""
		}
	}
}

// listFixtures prints the events of every provider, or of provider.
func listFixtures(w io.Writer, provider string) error {
	if provider != "" {
		if _, err := findFixture(provider, ""); err != nil {
			return err
		}
	}
	t := newTable(w, "PROVIDER", "EVENT", "WHAT")
	seen := map[string]bool{}
	for _, f := range trigger.Fixtures {
		if provider != "" && f.Provider != provider {
			continue
		}
		event := f.Event
		if !seen[f.Provider] {
			event += " (default)"
			seen[f.Provider] = true
		}
		t.row(f.Provider, event, f.About)
	}
	return t.flush()
}
