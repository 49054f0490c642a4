package console_test

import (
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/console"
	"github.com/hookgate/hookgate/internal/inbox"
)

// An open incident shows on the incidents page, as a banner on every
// page, and on its destination's and source's pages; once it ends the
// banner goes and the page lists it as ended.
func TestIncidentsShown(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{Sources: twoDestinations})
	b.signIn()
	if page := b.get("/ui/"); strings.Contains(page, `class="banner"`) {
		t.Fatalf("a banner with no incident open:\n%s", page)
	}
	inc, opened, err := b.store.Observe(t.Context(), inbox.Incident{Kind: "destination.failing", Source: "stripe", Destination: "app",
		SeenAt: b.clock.Now(), Counts: map[string]int64{"failed_attempts": 7, "dead_before": 2}, LastError: "deliver to app: HTTP 503"}, nil)
	if err != nil || !opened {
		t.Fatalf("Observe = %v, %v", opened, err)
	}
	for _, path := range []string{"/ui/", "/ui/events", "/ui/sources"} {
		if page := b.get(path); !strings.Contains(page, "1 open incident:") {
			t.Errorf("%s shows no banner for the open incident", path)
		}
	}
	// Someone not signed in learns nothing of the incidents (and the
	// sign-in form reads nothing from the database).
	if page := b.from("127.0.0.2").get("/ui/login"); strings.Contains(page, "open incident") || strings.Contains(page, "Incidents") {
		t.Errorf("the sign-in form shows the incidents:\n%s", page)
	}
	page := b.get("/ui/incidents")
	for _, want := range []string{"destination.failing", "failed_attempts 7", "deliver to app: HTTP 503", `href="/ui/destinations/app"`, ">open<"} {
		if !strings.Contains(page, want) {
			t.Errorf("incidents page lacks %q", want)
		}
	}
	if strings.Contains(page, "dead_before") {
		t.Error("the incidents page shows the engine's own counts")
	}
	if page := b.get("/ui/destinations/app"); !strings.Contains(page, "Open incidents") || !strings.Contains(page, "destination.failing") {
		t.Error("the destination's page does not name its open incident")
	}
	if page := b.get("/ui/destinations/audit"); strings.Contains(page, "Open incidents") {
		t.Error("another destination's page names the incident")
	}
	if page := b.get("/ui/sources"); !strings.Contains(page, "open incidents") {
		t.Error("the sources page does not name the source's open incident")
	}
	if ok, err := b.store.Resolve(t.Context(), inc.ID, b.clock.Now(), nil, nil); err != nil || !ok {
		t.Fatalf("Resolve = %v, %v", ok, err)
	}
	if page := b.get("/ui/"); strings.Contains(page, `class="banner"`) {
		t.Error("the banner stays after the incident ended")
	}
	if page := b.get("/ui/incidents"); !strings.Contains(page, ">ended<") {
		t.Error("the ended incident is not listed as ended")
	}
}
