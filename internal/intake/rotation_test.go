package intake_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookgate/hookgate/internal/config"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/metrics"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/hookgate/hookgate/verify"
)

// newSecretOf returns the secret an operator rotates source sc to.
func newSecretOf(sc config.Source) string {
	if sc.Provider == "standard" {
		return "whsec_" + base64.StdEncoding.EncodeToString([]byte("the rotated standard secret"))
	}
	return sc.Secret.Value() + "-rotated"
}

// thirdSecretOf returns a secret source sc was never given.
func thirdSecretOf(sc config.Source) string {
	if sc.Provider == "standard" {
		return "whsec_" + base64.StdEncoding.EncodeToString([]byte("a third, unknown secret"))
	}
	return sc.Secret.Value() + "-third"
}

// G3: while a source's secret rotates (secret: [new, old]), a sender
// signing with either is accepted, one signing with a third is 401, and
// hookgate_verified_total counts each request under the index of the
// secret that verified it, every index exported from the start.
func TestSecretRotationThroughIntake(t *testing.T) {
	t.Parallel()
	old := map[string]config.Source{}
	var cfgs []config.Source
	for _, sc := range testSources() {
		old[sc.Name] = sc
		if !sc.Secret.IsZero() {
			sc.Secret = config.NewSecrets(newSecretOf(sc), sc.Secret.Value())
		}
		cfgs = append(cfgs, sc)
	}
	b := setupWith(t, cfgs)
	for _, d := range deliveries() {
		t.Run(d.source, func(t *testing.T) {
			sc := old[d.source]
			signer := func(secret string) verify.Signer {
				t.Helper()
				one := sc
				one.Secret = config.NewSecret(secret)
				s, err := source.NewSigner(one)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			for i := range 2 {
				if got := testutil.ToFloat64(b.metrics.Verified.WithLabelValues(d.source, []string{"0", "1"}[i])); got != 0 {
					t.Errorf("before any request: secret %d counted %v", i, got)
				}
			}
			path := "/in/" + d.source
			if code, resp := do(t, b.request(t, path, signer(newSecretOf(sc)), d.body, d.header)); code != http.StatusAccepted {
				t.Fatalf("signed with the new secret: %d %+v", code, resp)
			}
			// The same event again, from the new secret and from the old one:
			// each authenticated, then a duplicate. Two and one, so that
			// counts swapped between the indexes show.
			if code, resp := do(t, b.request(t, path, signer(newSecretOf(sc)), d.body, d.header)); code != http.StatusOK {
				t.Fatalf("signed with the new secret again: %d %+v, want 200 (a duplicate)", code, resp)
			}
			if code, resp := do(t, b.request(t, path, signer(sc.Secret.Value()), d.body, d.header)); code != http.StatusOK {
				t.Fatalf("signed with the old secret: %d %+v, want 200 (a duplicate)", code, resp)
			}
			if code, resp := do(t, b.request(t, path, signer(thirdSecretOf(sc)), d.body, d.header)); code != http.StatusUnauthorized {
				t.Fatalf("signed with a third secret: %d %+v, want 401", code, resp)
			}
			for _, c := range []struct {
				secret string
				want   float64
			}{{"0", 2}, {"1", 1}} {
				if got := testutil.ToFloat64(b.metrics.Verified.WithLabelValues(d.source, c.secret)); got != c.want {
					t.Errorf("hookgate_verified_total{source=%q,secret=%q} = %v, want %v", d.source, c.secret, got, c.want)
				}
			}
			if got := testutil.ToFloat64(b.metrics.Received.WithLabelValues(d.source, metrics.ReceivedUnauthenticated)); got != 1 {
				t.Errorf("unauthenticated = %v, want 1", got)
			}
		})
	}
	want := 0
	for _, sc := range cfgs {
		want += len(sc.Secret.All())
	}
	if n := testutil.CollectAndCount(b.metrics.Verified); n != want {
		t.Errorf("hookgate_verified_total: %d series, want %d (one per secret of every source)", n, want)
	}
}

// setupWith serves the intake handler for sources cfgs over a real socket
// on a fresh database.
func setupWith(t *testing.T, cfgs []config.Source) *bundle {
	t.Helper()
	path := t.TempDir() + "/hookgate.db"
	store, err := inboxsqlite.Open(path, inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{path: path, store: store, sources: map[string]*source.Source{}, metrics: metrics.New()}
	var srcs []*source.Source
	for _, sc := range cfgs {
		s, err := source.New(sc, config.Default().Dedupe)
		if err != nil {
			t.Fatalf("source %s: %v", sc.Name, err)
		}
		b.sources[sc.Name] = s
		srcs = append(srcs, s)
	}
	c := newCommitter(store, intake.CommitterOptions{})
	srv := httptest.NewServer(intake.NewHandler(intake.Options{Sources: srcs, Committer: c, Metrics: b.metrics}))
	t.Cleanup(func() {
		srv.Close()
		c.Close()
		store.Close()
	})
	b.url = srv.URL
	return b
}
