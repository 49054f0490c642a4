package trigger_test

import (
	"io"
	"slices"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/hookgate/hookgate/internal/trigger"
)

// sourceOf is a source of provider with the secrets its preset needs.
func sourceOf(provider string) config.Source {
	sc := config.Source{Name: provider + "-in", Provider: provider, Secret: config.NewSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")}
	if provider == "salesforce" {
		sc.Secret, sc.OrganizationID, sc.Token = config.Secret{}, "00D5e000000AbCd", config.NewSecret("sf-token")
	}
	return sc
}

// Every fixture makes a request that its provider's source
// authenticates and reads as new events with ids, and two requests of
// one fixture are two different events.
func TestEveryFixtureIsReadByItsSource(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, f := range trigger.Fixtures {
		t.Run(f.Provider+"/"+f.Event, func(t *testing.T) {
			t.Parallel()
			sc := sourceOf(f.Provider)
			src, err := source.New(sc, config.Default().Dedupe)
			if err != nil {
				t.Fatal(err)
			}
			var ids [][]string
			for range 2 {
				req, err := trigger.Request(t.Context(), sc, f, trigger.IntakeURL("http://127.0.0.1:8080", sc, ""), "", now)
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(req.Body)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := src.Authenticate(req, body); err != nil {
					t.Fatalf("the source refuses the request: %v\n%s", err, body)
				}
				events, err := src.Events(req, body, "")
				if err != nil || len(events) == 0 {
					t.Fatalf("events %v, %v\n%s", events, err, body)
				}
				var got []string
				for _, e := range events {
					if e.EventID == "" {
						t.Errorf("an event without an id: %+v", e)
					}
					got = append(got, e.EventID)
				}
				ids = append(ids, got)
			}
			for _, id := range ids[1] {
				if slices.Contains(ids[0], id) {
					t.Errorf("two requests share event id %s", id)
				}
			}
		})
	}
}

// Each provider's fixtures come first in its default; Find matches an
// event name without regard to case and says when there is none.
func TestFind(t *testing.T) {
	t.Parallel()
	for _, p := range trigger.Providers() {
		f, ok := trigger.Find(p, "")
		if !ok || f != trigger.Of(p)[0] {
			t.Errorf("default of %s: %+v, %v", p, f, ok)
		}
	}
	if f, ok := trigger.Find("stripe", "CHARGE.Refunded"); !ok || f.Event != "charge.refunded" {
		t.Errorf("Find(stripe, CHARGE.Refunded) = %+v, %v", f, ok)
	}
	if _, ok := trigger.Find("hmac", ""); ok {
		t.Error("hmac has a fixture")
	}
	if _, ok := trigger.Find("stripe", "nope"); ok {
		t.Error("stripe has an event nope")
	}
}
