package intake

import (
	"bytes"
	"net/http"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/source"
)

// ListedItems keys a delivery that a reconciliation listed exactly as the
// handler keys a webhook's request to src: the same split, selectors and
// window, so that its events have the keys the webhook's had (or would
// have had). It does not authenticate (the caller read the delivery from
// the provider's API with its own credential) and keeps no replay guard
// digest (no request was signed). Errors are the handler's 400s.
func ListedItems(src *source.Source, header http.Header, body []byte) ([]inbox.Item, error) {
	r, err := http.NewRequest(http.MethodPost, "/in/"+src.Name, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header = header.Clone()
	events, err := src.Events(r, body, "")
	if err != nil {
		return nil, err
	}
	items := make([]inbox.Item, len(events))
	for i := range events {
		items[i] = inbox.Item{Event: toInbox(src, &events[i]), Window: src.Window}
	}
	return items, nil
}
