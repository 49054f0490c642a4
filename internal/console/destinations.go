package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/hookgate/hookgate/internal/admin"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
)

// destinationLane is one source's lane to the destination, as its page
// shows it.
type destinationLane struct {
	admin.Lane
	// Host is the destination's URL without what may carry a credential
	// (deliver.Redact); On is which events it gets.
	Host, On string
}

// destinationData is what a destination's page shows.
type destinationData struct {
	Name  string
	Lanes []destinationLane
	// Held reports that an operator holds every lane; Holding that one
	// holds some of them.
	Held, Holding bool
	// CanHold reports that the store can hold lanes; Logged that it
	// reads the attempt log by destination.
	CanHold, Logged bool
	// Attempts are the newest attempts, newest first.
	Attempts []inbox.Attempt
	// Incidents are the destination's open incidents.
	Incidents []incidentRow
	// Blocked are the keys its ordered lanes hold behind a delivery that
	// failed for good, up to BlockedShown per lane.
	Blocked []blockedKey
}

// blockedKey is a blocked key of one of the destination's lanes.
type blockedKey struct {
	Source string
	inbox.BlockedKey
}

// BlockedShown is how many blocked keys of one lane a destination's page
// lists.
const BlockedShown = 100

// destinationPage shows one destination (by name, across the sources that
// deliver to it): its lanes' state, circuit and pending deliveries, its
// newest attempts, and the operator's actions on it.
func (c *console) destinationPage(w http.ResponseWriter, r *http.Request, sess *session) error {
	name := r.PathValue("name")
	st, err := c.store.Stats(r.Context())
	if err != nil {
		return err
	}
	d := destinationData{Name: name}
	for _, l := range c.lanes(admin.NewStats(st, c.now()).Lanes) {
		if l.Destination != name {
			continue
		}
		dl := destinationLane{Lane: l}
		if src, ok := c.source(l.Source); ok {
			if i := slices.IndexFunc(src.Destinations, func(cd config.Destination) bool { return cd.Name == name }); i >= 0 {
				dl.Host, dl.On = deliver.Redact(src.Destinations[i].URL), src.Destinations[i].On
			}
		}
		d.Lanes = append(d.Lanes, dl)
		d.Holding = d.Holding || l.Held
	}
	if len(d.Lanes) == 0 {
		return &httpError{code: http.StatusNotFound, msg: "no destination " + name}
	}
	d.Held = !slices.ContainsFunc(d.Lanes, func(l destinationLane) bool { return !l.Held })
	if skipper, ok := c.store.(inbox.OrderSkipper); ok {
		for _, l := range d.Lanes {
			if l.Blocked == 0 {
				continue
			}
			keys, err := skipper.BlockedKeys(r.Context(), inbox.Lane{Source: l.Source, Destination: name}, BlockedShown)
			if err != nil {
				return err
			}
			for _, k := range keys {
				d.Blocked = append(d.Blocked, blockedKey{Source: l.Source, BlockedKey: k})
			}
		}
	}
	d.Incidents = c.openIncidents(r.Context(), func(i inbox.Incident) bool { return i.Destination == name })
	_, d.CanHold = c.store.(inbox.LaneHolder)
	if log, ok := c.store.(inbox.AttemptLog); ok {
		d.Logged = true
		if d.Attempts, err = log.RecentAttempts(r.Context(), name, AttemptsShown); err != nil {
			return err
		}
	}
	return c.render(w, "destination", page{Title: "Destination " + name, Nav: "overview", CSRF: sess.csrf,
		Flash: sess.takeFlash(), Data: d})
}

// hold holds (held=1) or releases (held=0) every configured lane of the
// destination, and every lane the store knows of it, on every node.
func (c *console) hold(w http.ResponseWriter, r *http.Request, sess *session) error {
	name := r.PathValue("name")
	holder, ok := c.store.(inbox.LaneHolder)
	if !ok {
		return &httpError{code: http.StatusNotImplemented, msg: "this store cannot hold a destination"}
	}
	var held bool
	switch r.PostForm.Get("held") {
	case "1":
		held = true
	case "0":
	default:
		return badRequest("held %q: want 1 (pause) or 0 (resume)", r.PostForm.Get("held"))
	}
	st, err := c.store.Stats(r.Context())
	if err != nil {
		return err
	}
	var lanes []inbox.Lane
	for _, l := range c.lanes(admin.NewStats(st, c.now()).Lanes) {
		if l.Destination == name {
			lanes = append(lanes, inbox.Lane{Source: l.Source, Destination: l.Destination})
		}
	}
	if len(lanes) == 0 {
		return &httpError{code: http.StatusNotFound, msg: "no destination " + name}
	}
	for _, l := range lanes {
		if err := holder.HoldLane(r.Context(), l, held); err != nil {
			return err
		}
	}
	text := fmt.Sprintf("Delivery to %s resumed: its deliveries are made again.", name)
	if held {
		text = fmt.Sprintf("Delivery to %s paused on every node: its deliveries wait until it is resumed; attempts already under way end.", name)
	}
	sess.setFlash(&flash{Text: text})
	http.Redirect(w, r, "/ui/destinations/"+url.PathEscape(name), http.StatusSeeOther)
	return nil
}

// skip lets a blocked key of one of the destination's ordered lanes move
// on: its failed delivery stays failed, its next delivery is made.
func (c *console) skip(w http.ResponseWriter, r *http.Request, sess *session) error {
	name := r.PathValue("name")
	skipper, ok := c.store.(inbox.OrderSkipper)
	if !ok {
		return &httpError{code: http.StatusNotImplemented, msg: "this store keeps no per-key order"}
	}
	source, key := r.PostForm.Get("source"), r.PostForm.Get("key")
	if source == "" || key == "" {
		return badRequest("skip: want the key's source and the key")
	}
	skipped, err := skipper.SkipKey(r.Context(), inbox.Lane{Source: source, Destination: name}, key)
	if err != nil {
		return err
	}
	text := fmt.Sprintf("Key %s of %s skipped: its next delivery to %s is made, saying one was skipped.", key, source, name)
	if !skipped {
		text = fmt.Sprintf("Key %s of %s was not blocked (already skipped, or its event replayed).", key, source)
	}
	sess.setFlash(&flash{Text: text})
	http.Redirect(w, r, "/ui/destinations/"+url.PathEscape(name), http.StatusSeeOther)
	return nil
}
