package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/trigger"
)

// sourceInfo is one source as the sources page shows it: never a secret.
type sourceInfo struct {
	Name, Provider string
	// URL is what to paste into the provider's settings.
	URL         string
	Signed      string
	Key, Scope  string
	Tenant      string
	Window      time.Duration
	ReplayGuard string
	// Destinations are the destinations' names and hosts (a URL may carry
	// a credential in its userinfo, path or query: deliver.Redact).
	Destinations []destinationInfo
	// Last is the newest event received; zero when none is stored.
	Last time.Time
	// Events are the example events Send test event offers, the
	// provider's default first; none when there is no button (hmac has
	// no examples, or the intake's address is not known).
	Events []string
	// PathTenant reports that the source's URL ends in a tenant, which
	// the test event's form asks for.
	PathTenant bool
	// Incidents are the source's open incidents.
	Incidents []incidentRow
}

type destinationInfo struct {
	Name, Host, On string
}

func (c *console) sourcesPage(w http.ResponseWriter, r *http.Request, sess *session) error {
	base := "http://" + r.Host
	if overTLS(r) {
		base = "https://" + r.Host
	}
	out := make([]sourceInfo, 0, len(c.sources))
	open := c.openIncidents(r.Context(), func(inbox.Incident) bool { return true })
	for _, s := range c.sources {
		var note provider.Notes
		if p, ok := provider.Lookup(s.Provider); ok {
			note = p.Notes
		}
		info := sourceInfo{Name: s.Name, Provider: s.Provider, URL: s.PublicURL, Signed: note.Signed,
			Key: note.Key, Tenant: note.Tenant, Scope: "preset", Window: time.Duration(s.Window), ReplayGuard: s.ReplayGuard,
			PathTenant: s.Tenant == string(config.SelectPath)}
		if c.intakeAddr() != "" {
			for _, f := range trigger.Of(s.Provider) {
				info.Events = append(info.Events, f.Event)
			}
		}
		if info.URL == "" {
			info.URL = base + "/in/" + s.Name
			if s.Tenant == string(config.SelectPath) {
				info.URL += "/{tenant}"
			}
		}
		if len(s.Key) > 0 {
			info.Key = strings.Join(s.Key, ", ")
		}
		if len(s.Scope) > 0 {
			info.Scope = strings.Join(s.Scope, ", ")
		}
		if s.Tenant != "" {
			info.Tenant = s.Tenant
		}
		if info.ReplayGuard == "" {
			info.ReplayGuard = s.DefaultReplayGuard()
		}
		for _, d := range s.Destinations {
			di := destinationInfo{Name: d.Name, On: d.On, Host: deliver.Redact(d.URL)}
			info.Destinations = append(info.Destinations, di)
		}
		last, err := c.store.List(r.Context(), inbox.Filter{Source: s.Name, Limit: 1})
		if err != nil {
			return err
		}
		if len(last) > 0 {
			info.Last = last[0].ReceivedAt
		}
		for _, inc := range open {
			if inc.Source == s.Name {
				info.Incidents = append(info.Incidents, inc)
			}
		}
		out = append(out, info)
	}
	return c.render(w, "sources", page{Title: "Sources", Nav: "sources", CSRF: sess.csrf, Flash: sess.takeFlash(), Data: out})
}

// intakeAddr is the public listener's address, "" when it is not known.
func (c *console) intakeAddr() string {
	if c.intake == nil {
		return ""
	}
	return c.intake()
}

// source is the configured source called name.
func (c *console) source(name string) (config.Source, bool) {
	for _, s := range c.sources {
		if s.Name == name {
			return s, true
		}
	}
	return config.Source{}, false
}

// maxAnswer is how much of the intake's answer to a test event is shown.
const maxAnswer = 4 << 10

// sendTest posts the source's example event (event=, its default when
// empty) through the gateway's own intake, over HTTP to the public
// listener, signed as the provider signs it, and redirects to the sources
// page, which shows the intake's answer.
func (c *console) sendTest(w http.ResponseWriter, r *http.Request, sess *session) error {
	name := r.PathValue("name")
	sc, ok := c.source(name)
	if !ok {
		return &httpError{code: http.StatusNotFound, msg: "no source " + name}
	}
	f, ok := trigger.Find(sc.Provider, r.PostForm.Get("event"))
	if !ok {
		return badRequest("source %s (%s) has no example event %q", name, sc.Provider, r.PostForm.Get("event"))
	}
	addr := c.intakeAddr()
	if addr == "" {
		return &httpError{code: http.StatusServiceUnavailable, msg: "the gateway's public listener is not open yet"}
	}
	tenant := strings.TrimSpace(r.PostForm.Get("tenant"))
	if sc.Tenant == string(config.SelectPath) && tenant == "" {
		return badRequest("source %s takes its tenant from the URL's path: give a tenant", name)
	}
	req, err := trigger.Request(r.Context(), sc, f, trigger.IntakeURL(dialBase(addr), sc, tenant), tenant, c.now())
	if err != nil {
		return err
	}
	// The URL's query may hold the source's token: it is never shown.
	shown := (&url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Path: req.URL.Path, RawPath: req.URL.RawPath}).String()
	fl := &flash{Text: fmt.Sprintf("Sent %s %s to POST %s", sc.Provider, f.Event, shown)}
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		fl.Text, fl.Failed = fl.Text+": "+err.Error(), true
	} else {
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		resp.Body.Close()
		fl.Text += ": the intake answered " + resp.Status
		fl.Detail, fl.Failed = string(answer), resp.StatusCode/100 != 2
		var stored struct {
			Events []struct {
				ID int64 `json:"id"`
			} `json:"events"`
		}
		if json.Unmarshal(answer, &stored) == nil {
			for _, e := range stored.Events {
				if e.ID > 0 {
					fl.Events = append(fl.Events, e.ID)
				}
			}
		}
	}
	sess.setFlash(fl)
	http.Redirect(w, r, "/ui/sources#source-"+url.PathEscape(name), http.StatusSeeOther)
	return nil
}

// dialBase is the base URL at which this process reaches a listener on
// addr: on loopback for an address on every interface.
func dialBase(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}
