package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// tailBatch is the most events one look at the inbox sends; when more
// arrived since the last look, the next look sends the following ones.
const tailBatch = 100

// tailKeepAlive is how often an idle tail sends a comment, so proxies do
// not close it.
const tailKeepAlive = 15 * time.Second

// tailEvent is one event as the live tail sends it.
type tailEvent struct {
	ID int64 `json:"id"`
	// ReceivedAt is in the form the pages show times.
	ReceivedAt string `json:"received_at"`
	Source     string `json:"source"`
	Tenant     string `json:"tenant"`
	EventID    string `json:"event_id"`
	Type       string `json:"type"`
	Status     string `json:"status"`
}

// tailData is what the tail page shows.
type tailData struct {
	Source  string
	Sources []string
}

func (c *console) tailPage(w http.ResponseWriter, r *http.Request, sess *session) error {
	d := tailData{Source: r.URL.Query().Get("source")}
	for _, s := range c.sources {
		d.Sources = append(d.Sources, s.Name)
	}
	return c.render(w, "tail", page{Title: "Live tail", Nav: "tail", CSRF: sess.csrf, Data: d})
}

// tailStream sends the events stored after the cursor as server-sent
// events, oldest first, reading the page after the cursor (one index
// read) every tailEvery. The cursor starts at after= (the Last-Event-ID of a
// reconnecting browser) or at the newest event. At most MaxTail streams
// are open at once; another is answered 503.
func (c *console) tailStream(w http.ResponseWriter, r *http.Request, _ *session) error {
	select {
	case c.tail <- struct{}{}:
		defer func() { <-c.tail }()
	default:
		w.Header().Set("Retry-After", "30")
		return &httpError{code: http.StatusServiceUnavailable, msg: "too many live tails are open"}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		return fmt.Errorf("tail: the connection cannot stream")
	}
	source := r.URL.Query().Get("source")
	cursor, err := c.tailCursor(r, source)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()

	tick := time.NewTicker(c.tailEvery)
	defer tick.Stop()
	quiet := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-tick.C:
		}
		events, err := c.after(r.Context(), source, cursor)
		if err != nil {
			if r.Context().Err() != nil {
				return nil
			}
			c.log.Warn("console: live tail", "err", err)
			continue
		}
		if len(events) == 0 {
			if time.Since(quiet) > tailKeepAlive {
				fmt.Fprint(w, ": still here\n\n")
				flusher.Flush()
				quiet = time.Now()
			}
			continue
		}
		slices.Reverse(events)
		for _, e := range events {
			data, err := json.Marshal(tailEvent{ID: e.ID, ReceivedAt: when(e.ReceivedAt), Source: e.Source, Tenant: e.Tenant,
				EventID: e.EventID, Type: e.Type, Status: string(e.Status)})
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "id: %d\nevent: stored\ndata: %s\n\n", e.ID, data)
			cursor = e.ID
		}
		flusher.Flush()
		quiet = time.Now()
	}
}

// tailCursor is the id after which a stream starts: the browser's
// Last-Event-ID or after=, else the newest stored event's.
func (c *console) tailCursor(r *http.Request, source string) (int64, error) {
	for _, s := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, badRequest("after %q: want an event id", s)
		}
		return n, nil
	}
	newest, err := c.store.List(r.Context(), inbox.Filter{Source: source, Limit: 1})
	if err != nil || len(newest) == 0 {
		return 0, err
	}
	return newest[0].ID, nil
}

// tailFirst caps how many events a tail without a cursor sends at once.
const tailFirst = 10 * tailBatch

// after returns the events of source stored after cursor, newest first:
// the tailBatch oldest of them. Cursor 0 is a tail opened on an empty
// inbox, which the store's AfterID cannot express: its first events are
// read page by page from the newest back (at most tailFirst).
func (c *console) after(ctx context.Context, source string, cursor int64) ([]inbox.Event, error) {
	f := inbox.Filter{Source: source, AfterID: cursor, Limit: tailBatch}
	if cursor > 0 {
		return c.store.List(ctx, f)
	}
	var all []inbox.Event
	for {
		page, err := c.store.List(ctx, f)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < f.Limit || len(all) >= tailFirst {
			return all, nil
		}
		f.BeforeID = page[len(page)-1].ID
	}
}
