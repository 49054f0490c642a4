package verify_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hookgate/hookgate/verify"
)

func TestOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opt  verify.Option
	}{
		{"nil option", nil},
		{"nil clock", verify.WithClock(nil)},
		{"zero tolerance", verify.WithTolerance(0)},
		{"negative tolerance", verify.WithTolerance(-time.Second)},
		{"relative public URL", verify.WithPublicURL("/in/hubspot")},
		{"public URL without host", verify.WithPublicURL("https:///in/hubspot")},
		{"public URL of another scheme", verify.WithPublicURL("ftp://hooks.example.com/in")},
		{"unparseable public URL", verify.WithPublicURL("https://hooks.example.com/%zz")},
	} {
		constructors := map[string]func() error{
			"standard":   func() error { _, err := verify.NewStandard(stdSecret, tc.opt); return err },
			"stripe":     func() error { _, err := verify.NewStripe("s3cr3t", tc.opt); return err },
			"github":     func() error { _, err := verify.NewGitHub("s3cr3t", tc.opt); return err },
			"shopify":    func() error { _, err := verify.NewShopify("s3cr3t", tc.opt); return err },
			"hubspot":    func() error { _, err := verify.NewHubSpot("s3cr3t", tc.opt); return err },
			"shippo":     func() error { _, err := verify.NewShippo("s3cr3t", "", tc.opt); return err },
			"salesforce": func() error { _, err := verify.NewSalesforce(sfOrg18, "", tc.opt); return err },
			"hmac": func() error {
				_, err := verify.NewHMAC("s3cr3t", verify.HMACConfig{Header: "X-Sig"}, tc.opt)
				return err
			},
		}
		for scheme, build := range constructors {
			err := build()
			if err == nil {
				t.Errorf("%s with %s: no error", scheme, tc.name)
				continue
			}
			wantErr(t, err, verify.ErrConfig, scheme, "s3cr3t")
		}
	}
	// Empty public URL means "rebuild from the request", and options a
	// scheme has no use for are accepted.
	if _, err := verify.NewHubSpot("s3cr3t", verify.WithPublicURL("")); err != nil {
		t.Errorf("empty public URL: %v", err)
	}
	if _, err := verify.NewGitHub("s3cr3t", verify.WithTolerance(time.Minute), verify.WithPublicURL("https://a.example/")); err != nil {
		t.Errorf("GitHub with unused options: %v", err)
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	err := error(&verify.Error{Scheme: "stripe", Check: "timestamp", Err: verify.ErrStale})
	if got, want := err.Error(), "verify stripe: timestamp: timestamp outside tolerance"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, verify.ErrStale) || errors.Is(err, verify.ErrMismatch) {
		t.Errorf("errors.Is does not follow Unwrap: %v", err)
	}
	seen := map[string]bool{}
	for _, s := range sentinels {
		if seen[s.Error()] {
			t.Errorf("two sentinels say %q", s)
		}
		seen[s.Error()] = true
	}
}
