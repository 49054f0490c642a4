package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
)

// replayRequest is the body of POST /api/replay.
type replayRequest struct {
	Dead   bool   `json:"dead"`
	Source string `json:"source"`
	Tenant string `json:"tenant"`
	// Since is how far back to replay: a duration such as 24h, 7d or
	// 1d12h, as the command line's --since takes it.
	Since     string  `json:"since"`
	IDs       []int64 `json:"ids"`
	Redeliver bool    `json:"redeliver"`
	// Destination limits a redelivery to one destination.
	Destination string `json:"destination"`
	// All allows a replay that no other field narrows.
	All bool `json:"all"`
}

func (a *api) replay(w http.ResponseWriter, r *http.Request) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	var req replayRequest
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return badRequest("body: want a JSON object")
		}
		return badRequest("body: %v", err)
	}
	if dec.More() {
		return badRequest("body: want one JSON object")
	}
	if req.Destination != "" && !req.Redeliver {
		return badRequest(`destination %q: only a redelivery names a destination; add "redeliver": true`, req.Destination)
	}
	f := inbox.ReplayFilter{Dead: req.Dead, Source: req.Source, Tenant: req.Tenant, IDs: req.IDs,
		Redeliver: req.Redeliver, Destination: req.Destination}
	if req.Since != "" {
		d, err := config.ParseDuration(req.Since)
		if err != nil || d <= 0 {
			return badRequest("since %q: want a positive duration such as 24h or 7d", req.Since)
		}
		f.Since = time.Now().Add(-d)
	}
	for _, id := range req.IDs {
		if id < 1 {
			return badRequest("ids: %d is not an event id", id)
		}
	}
	if !req.All && !f.Dead && f.Source == "" && f.Tenant == "" && f.Since.IsZero() && len(f.IDs) == 0 {
		return badRequest(`no filter: this would replay every event; set "all": true to mean it`)
	}
	n, err := a.store.Replay(r.Context(), f, nil)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"replayed": n})
	return nil
}
